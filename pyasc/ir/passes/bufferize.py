"""Bufferization for ``lower-to-loops``: tensor values become buffers, with ownership.

A :class:`Lowerer` walks the tensor-level IR of one function and re-emits it into a new
block, mapping every old value to a new one: a scalar to a scalar, a tensor of type
``tensor<S x E>`` to a memref of shape ``S`` and element ``E`` (contiguous or a view), a
memref to a memref.  Op lowerings come from a table ``{op class: fn(lowerer, op) ->
new results}``; ops without an entry and without tensors or regions are cloned.

Ownership (what makes deallocation simple and loop-carried tensors safe):

* A buffer is *owned* by the block that defines it when it is a fresh contiguous
  buffer holding a tensor: the ``mem.alloc`` of a lowered tensor op, a tensor result
  of ``loop.for/while/if`` or ``func.call``, or a tensor iteration argument of a
  ``loop.for``/``loop.while`` region.  Views of it and snapshots that reuse a
  parameter's memory are *not* owned.
* Every tensor operand of a terminator (``loop.yield``, ``loop.condition``,
  ``func.return``) hands an owned buffer over: it must be owned by the terminator's
  block and not handed over at an earlier position, else it is first copied into a
  fresh buffer.  A ``func.return`` of a reshape of such an owned buffer (made in the
  same block) hands that buffer over, as the reshape.  So loop iterations and
  if-branches always carry fresh buffers of the exact contiguous memref type, and
  function results such buffers or a reshape of all of one; never other views,
  parameters or buffers that are freed or written later.
* A tensor init of a loop is handed over the same way: an owned buffer of the current
  block whose tensor has no other use moves into the loop; anything else is copied.
  Handed-over values are recorded in ``transferred``.
* The ``dealloc`` module then frees every owned buffer (and every ``mem.alloc``) that
  is not handed over after its last use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.types import MemRefType, TensorType, Type

LowerFn = Callable[["Lowerer", Operation], Sequence[Value]]


def buffer_type(t: Type) -> Type:
    """The loop-level type of a value of type ``t`` (tensors become contiguous memrefs)."""
    return MemRefType(t.shape, t.element) if isinstance(t, TensorType) else t


def has_tensor(types: Sequence[Type]) -> bool:
    return any(isinstance(t, TensorType) for t in types)


class Lowerer:
    """State of lowering one function: value map, ownership, emission helpers."""

    def __init__(self, rules: dict[type[Operation], LowerFn], gen: LoopGen,
                 reuse: set[Operation], options: Mapping[str, object] | None = None) -> None:
        self.rules = rules
        self.gen = gen
        self.reuse = reuse
        self.options: Mapping[str, object] = options or {}  # the pass options
        # rules for single ops that replace their class's (an operand lowered lazily
        # by its one user), and what such a rule leaves for that user
        self.overrides: dict[Operation, LowerFn] = {}
        self.deferred: dict[Value, object] = {}
        self.values: dict[Value, Value] = {}
        self.owned: set[Value] = set()
        self.transferred: set[Value] = set()
        self._bound: dict[Value, int] = {}  # new value -> how many old values map to it

    # -- value map
    def get(self, old: Value) -> Value:
        return self.values[old]

    def getall(self, olds: Sequence[Value]) -> list[Value]:
        return [self.values[v] for v in olds]

    def bind(self, old: Value, new: Value) -> None:
        if new.name_hint is None:
            new.name_hint = old.name_hint
        self.values[old] = new
        self._bound[new] = self._bound.get(new, 0) + 1

    # -- walking
    def lower_ops(self, ops: Sequence[Operation]) -> None:
        """Lower ``ops`` at the current insertion point."""
        for op in ops:
            with self.gen.b.location(op.loc):
                rule = self.overrides.get(op) or self.rules.get(type(op), lower_generic)
                new = rule(self, op)
            for old, value in zip(op.result_values, new, strict=True):
                self.bind(old, value)

    def lower_into(self, old: Block, new: Block, args: Sequence[Value] | None = None) -> None:
        """Lower the ops of ``old`` (terminator included) into ``new``."""
        for a, b in zip(old.args, new.args if args is None else args, strict=True):
            self.bind(a, b)
        with self.gen.b.at(new):
            self.lower_ops(old.ops)

    def inline(self, old: Block, args: Sequence[Value]) -> list[Value]:
        """Lower ``old``'s ops here with its arguments bound to ``args``; returns the new
        values of its terminator's operands."""
        for a, b in zip(old.args, args, strict=True):
            self.bind(a, b)
        term = old.terminator
        assert term is not None
        self.lower_ops(old.ops[:-1])
        return self.getall(term.operand_values)

    # -- buffers and ownership
    def own(self, buf: Value) -> Value:
        self.owned.add(buf)
        return buf

    def alloc(self, t: TensorType, dims: Sequence[Value], name: str | None = None) -> Value:
        """A fresh owned buffer for a tensor of type ``t``."""
        return self.own(self.gen.alloc(t.shape, t.element, dims, name))

    def fresh_copy(self, buf: Value) -> Value:
        """An owned contiguous copy of ``buf`` (same shape type)."""
        t = buf.type
        assert isinstance(t, MemRefType)
        dims = self.gen.dims(buf)
        out = self.alloc(t.tensor_type(), dims, buf.name_hint)
        self.gen.copy(buf, out, dims, parallel=True)
        return out

    def _defined_here(self, v: Value) -> bool:
        block = self.gen.b.block
        if isinstance(v, BlockArgument):
            return v.block is block
        return isinstance(v, OpResult) and v.op.parent is block

    def hand_over(self, olds: Sequence[Value], reshapes: bool = False) -> list[Value]:
        """New values for terminator operands; tensors become owned fresh buffers (or,
        with ``reshapes``, for ``func.return``, a reshape of all of one)."""
        out: list[Value] = []
        claimed: set[Value] = set()
        for old in olds:
            new = self.get(old)
            if isinstance(old.type, TensorType):
                base = self._reshaped_owner(new) if reshapes else new
                if base not in self.owned or not self._defined_here(base) or base in claimed:
                    new = base = self.fresh_copy(new)
                claimed.add(base)
            out.append(new)
        return out

    def _reshaped_owner(self, new: Value) -> Value:
        """The buffer ``new`` hands over: itself, or for a reshape made in this block
        the buffer it reshapes (a contiguous view of all of it, of the exact contiguous
        type the terminator needs).  Handing the reshape over moves that buffer without
        a copy (``conv2d``'s ``y.reshape(n, o, oh, ow)``: the product's whole output);
        ``dealloc`` sees the reshape as an alias and keeps the buffer alive.  Only for
        function results: the backends trace a result back to its allocation through
        views, while loop-carried buffers are freed through the loop's arguments."""
        if isinstance(new, OpResult) and isinstance(new.op, mem.ReshapeOp) \
                and self._defined_here(new) and self._bound.get(new.op.operand_values[0]) == 1:
            return new.op.operand_values[0]
        return new

    def loop_inits(self, olds: Sequence[Value]) -> list[Value]:
        """New init values of a loop; tensor inits are handed over to the loop."""
        out: list[Value] = []
        for old in olds:
            new = self.get(old)
            if isinstance(old.type, TensorType):
                # Moving is safe when nothing else can reach the buffer later: one old
                # value maps to it (an inlined fusion.group may yield its input) and
                # that value has no other use (views are uses too).
                movable = (new in self.owned and self._defined_here(new)
                           and len(old.uses) == 1 and self._bound[new] == 1)
                new = new if movable else self.fresh_copy(new)
                self.transferred.add(new)
            out.append(new)
        return out

    def own_tensors(self, olds: Sequence[Value], news: Sequence[Value]) -> None:
        """Mark the new values standing for tensors among ``olds`` as owned."""
        for old, new in zip(olds, news, strict=True):
            if isinstance(old.type, TensorType):
                self.own(new)


# ---------------------------------------------------------------------------- rules

def lower_generic(cx: Lowerer, op: Operation) -> list[Value]:
    """Clone an op that involves no tensors and has no regions."""
    types = [v.type for v in op.operand_values] + [r.type for r in op.result_values]
    if op.region_list or has_tensor(types):
        raise InternalCompilerError(f"lower-to-loops: no lowering for '{op.name}' "
                                    f"at {op.loc}")
    new = type(op)(cx.getall(op.operand_values), [r.type for r in op.result_values],
                   dict(op.attributes))
    cx.gen.b.insert(new)
    return new.result_values


def _lower_call(cx: Lowerer, op: Operation) -> list[Value]:
    new = func.CallOp(cx.getall(op.operand_values),
                      [buffer_type(r.type) for r in op.result_values], dict(op.attributes))
    cx.gen.b.insert(new)
    cx.own_tensors(op.result_values, new.result_values)
    return new.result_values


def _lower_to_tensor(cx: Lowerer, op: Operation) -> list[Value]:
    src = cx.get(op.operand_values[0])
    return [src if op in cx.reuse else cx.fresh_copy(src)]


def _lower_terminator(cx: Lowerer, op: Operation) -> list[Value]:
    values = op.operand_values
    if isinstance(op, loop.ConditionOp):
        new_values = [cx.get(values[0]), *cx.hand_over(values[1:])]
    else:
        new_values = cx.hand_over(values, reshapes=isinstance(op, func.ReturnOp))
    cx.gen.b.insert(type(op)(new_values))
    return []


def _lower_for(cx: Lowerer, op: loop.ForOp) -> list[Value]:
    inits = cx.loop_inits(op.inits)
    new = loop.ForOp.empty(cx.get(op.lower), cx.get(op.upper), cx.get(op.step), inits,
                           iv_name=op.induction_var.name_hint)
    new.attributes.update(op.attributes)
    cx.gen.b.insert(new)
    body = new.body.blocks[0]
    cx.own_tensors(op.iter_args, body.args[1:])
    cx.lower_into(op.body.blocks[0], body)
    cx.own_tensors(op.outputs, new.result_values)
    return new.result_values


def _lower_while(cx: Lowerer, op: loop.WhileOp) -> list[Value]:
    inits = cx.loop_inits(op.inits)
    new = loop.WhileOp.empty(inits, [buffer_type(r.type) for r in op.outputs])
    cx.gen.b.insert(new)
    before, after = new.before.blocks[0], new.after.blocks[0]
    cx.own_tensors(op.before.blocks[0].args, before.args)
    cx.own_tensors(op.after.blocks[0].args, after.args)
    cx.lower_into(op.before.blocks[0], before)
    cx.lower_into(op.after.blocks[0], after)
    cx.own_tensors(op.outputs, new.result_values)
    return new.result_values


def _lower_if(cx: Lowerer, op: loop.IfOp) -> list[Value]:
    new = loop.IfOp.empty(cx.get(op.cond), [buffer_type(r.type) for r in op.outputs])
    new.attributes.update(op.attributes)  # a versioned loop stays marked (hoist-checks)
    cx.gen.b.insert(new)
    cx.lower_into(op.then_region.blocks[0], new.then_region.blocks[0])
    cx.lower_into(op.else_region.blocks[0], new.else_region.blocks[0])
    cx.own_tensors(op.outputs, new.result_values)
    return new.result_values


def _lower_group(cx: Lowerer, op: Operation) -> list[Value]:
    """``fusion.group``: its body inlined here, unfused (a correct fallback; a fused
    schedule can replace this rule)."""
    return cx.inline(op.region_list[0].blocks[0], cx.getall(op.operand_values))


CONTROL_RULES: dict[type[Operation], LowerFn] = {
    loop.ForOp: _lower_for,  # type: ignore[dict-item]
    loop.WhileOp: _lower_while,  # type: ignore[dict-item]
    loop.IfOp: _lower_if,  # type: ignore[dict-item]
    loop.YieldOp: _lower_terminator,
    loop.ConditionOp: _lower_terminator,
    func.ReturnOp: _lower_terminator,
    func.CallOp: _lower_call,
    mem.ToTensorOp: _lower_to_tensor,
    func.FusionGroupOp: _lower_group,
}
