"""Scalar evaluation of a ``fusion.group`` body at an index (used by ``lower_group``).

A :class:`GroupEval` turns the tensor-level body of one group into scalar loop-level
code, one element at a time: :meth:`GroupEval.at` emits, at the builder's insertion
point, the ops computing value ``v`` at index ``idx`` and returns the scalar.  Each op
class has a rule (a table): elementwise ops evaluate their operands at the broadcast
index, ``broadcast``/``slice``/``transpose``/``reshape``/``gather`` remap the index
and read through, ``fill``/``arange`` compute the element, ``tensor.map`` inlines its
body, and a reduction runs its accumulation loop (``lower_group_reduce``) unless the
schedule already computed it for that index.  Group inputs are read with
``mem.load`` from the lowered buffers (views included), so nothing but the outputs is
ever stored.

Results are memoized per ``(value, index)`` while the block that computed them
encloses the insertion point, so a subexpression used twice at one index (a shared
producer, the ``weights`` of the bilateral filter) is computed once.

The :meth:`GroupEval.prologue` computes every value's run-time sizes before any loop:
the ``shape`` checks of broadcasting and reshapes and the empty-``max``/``min`` checks
run once, outside the nests, as in the unfused lowering.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from types import GeneratorType
from typing import Any

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.passes import lower_group_reduce as red
from pyasc.ir.passes.bufferize import Lowerer
from pyasc.ir.passes.fusion_rules import ELEMENTWISE, REDUCTIONS, is_unit_reshape
from pyasc.ir.passes.fusion_schedule import reduction_dependent
from pyasc.ir.passes.loopgen import Broadcast, LoopGen, constant_of, encloses
from pyasc.ir.passes.lower_group_base import Index
from pyasc.ir.passes.lower_group_dims import DIMS
from pyasc.ir.passes.lower_shapes import labels
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType

Rule = Generator[tuple[Value, Index], Value, list[Value]]
"""An evaluation rule that yields the ``(value, index)`` it reads and gets its scalar."""
_START = object()  # sent to a rule's generator first


class GroupEval:
    """Evaluates one group body element by element (see the module docstring)."""

    def __init__(self, cx: Lowerer, group: Operation) -> None:
        self.cx, self.gen = cx, cx.gen
        block = group.region_list[0].blocks[0]
        self.ops: list[Operation] = block.ops[:-1]
        self.outputs: list[Value] = block.ops[-1].operand_values
        self.env: dict[Value, Value] = dict(zip(block.args, cx.getall(group.operand_values),
                                                strict=True))
        self.dependent = reduction_dependent(self.ops)
        self.loaders: dict[Value, Callable[[Index], Value]] = {}
        self._dims: dict[Value, list[Value]] = {}
        self.bcast: dict[Operation, Broadcast] = {}
        self._memo: dict[tuple[Value, tuple[Value, ...]], tuple[Value, Block]] = {}
        self.views: dict[Operation, Value] = {}  # buffers read in place (see _VIEWS)

    # -- sizes
    def prologue(self) -> None:
        """Sizes and checks of every value, and the reduction-free scalars, up front."""
        for op in self.ops:
            rule = DIMS.get(type(op))
            for r in op.result_values:
                if isinstance(r.type, TensorType):
                    self._dims[r] = rule(self, op) if rule else self._fallback_dims(r)
            if isinstance(op, tuple(REDUCTIONS)):
                red.check_nonempty(self, op)
        for op in self.ops:
            if not any(r in self.dependent for r in op.result_values) and \
                    all(isinstance(r.type, ScalarType) for r in op.result_values):
                self.at(op.result_values[0], [])
        for op in self.ops:
            view = _VIEWS[type(op)](self, op) if type(op) in _VIEWS else None
            if view is not None:
                self.views[op] = view

    def dims(self, v: Value) -> list[Value]:
        """Run-time sizes of a body value (``[]`` for scalars)."""
        if isinstance(v, BlockArgument):
            return self.gen.dims(self.env[v])
        return self._dims.get(v, [])

    def _fallback_dims(self, r: Value) -> list[Value]:
        return [self.gen.const(d) for d in r.type.shape]  # only static types get here

    # -- evaluation
    def at(self, v: Value, idx: Index) -> Value:
        """The scalar ``v[idx]`` emitted at the insertion point (memoized; inputs are
        never written inside a group, so their loads are memoized too).

        The rules of the values read along a chain are generators that yield the
        ``(value, index)`` they need and get its scalar back; they run from an
        explicit stack, so a chain as long as the program needs no Python recursion."""
        value = self._ready(v, idx)
        pending: list[tuple[Generator, OpResult, Index]] = []
        while True:
            if value is None:
                assert isinstance(v, OpResult)
                out = _AT[type(v.op)](self, v.op, idx)
                if isinstance(out, GeneratorType):
                    pending.append((out, v, idx))
                    value = _START
                else:
                    value = self._record(v, idx, out)
            while True:  # hand the value to the rule that asked for it
                if not pending:
                    return value
                rule, rv, ridx = pending[-1]
                try:
                    v, idx = rule.send(None if value is _START else value)
                    break
                except StopIteration as stop:
                    pending.pop()
                    value = self._record(rv, ridx, stop.value)
            value = self._ready(v, idx)

    def _ready(self, v: Value, idx: Index) -> Value | None:
        """``v[idx]`` if it is an input or memoized, else ``None`` (to compute)."""
        loader = self.loaders.get(v)
        if loader is not None:
            return loader(idx)
        hit = self._memo.get((v, tuple(idx)))
        if hit is not None and encloses(hit[1], self.gen.b.block):
            return hit[0]
        if isinstance(v, BlockArgument):
            x = self.env[v]
            value = self.gen.load(x, idx) if isinstance(x.type, MemRefType) else x
            self.remember(v, idx, value)
            return value
        return None

    def _record(self, v: OpResult, idx: Index, results: list[Value]) -> Value:
        for r, x in zip(v.op.result_values, results, strict=True):
            self.remember(r, idx, x)
        return self._memo[(v, tuple(idx))][0]

    def remember(self, v: Value, idx: Index, x: Value) -> None:
        """Record ``x`` as ``v[idx]`` for the current block and the blocks inside it."""
        self._memo[(v, tuple(idx))] = (x, self.gen.b.block)

    def scalar(self, v: Value) -> Value:
        return self.at(v, [])

    def closure(self, roots: Sequence[Value]) -> list[Value]:
        """Body values the ``roots`` are computed from (themselves included), in body
        order; block arguments excluded."""
        need: set[Value] = {v for v in roots if isinstance(v, OpResult)}
        for op in reversed(self.ops):
            if any(r in need for r in op.result_values):
                need.update(v for v in op.operand_values if isinstance(v, OpResult))
        return [r for op in self.ops for r in op.result_values if r in need]

    def canonical(self, v: Value, dom: Sequence[Value],
                  bound: dict[int, Value]) -> list[Value] | None:
        """The index at which a value aligned to a domain of sizes ``dom`` is read when
        the domain axes in ``bound`` are fixed: 0 on its static size-1 axes, the bound
        index elsewhere.  ``None`` unless every other axis is provably the domain's
        own (same size value), so the read is in bounds and matches its consumers."""
        t = v.type
        if not isinstance(t, TensorType):
            return []
        off = len(dom) - t.rank
        if off < 0:
            return None
        idx: list[Value] = []
        for i, d in enumerate(t.shape):
            if d == 1:
                idx.append(self.gen.const(0))
            elif off + i in bound and self.dims(v)[i] is dom[off + i]:
                idx.append(bound[off + i])
            else:
                return None
        return idx

    def operand_index(self, op: Operation, k: int, idx: Index) -> list[Value]:
        """Index into operand ``k`` of a broadcasting op for its result index ``idx``."""
        if not isinstance(op.operand_values[k].type, TensorType):
            return []
        return self.bcast[op].index(self.gen, k, idx)


# ---------------------------------------------------------------------------- nests

def same_dims(a: Sequence[Value], b: Sequence[Value]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def nest(gen: LoopGen, dims: Sequence[Value], body: Callable[[list[Value]], None],
         parallel: bool = False,
         at_depth: Callable[[int, list[Value]], None] | None = None,
         prefix: str = "i") -> None:
    """Loops over ``dims`` (static size 1: no loop; static 0: nothing) with
    ``body(ivs)`` innermost; ``at_depth(k, ivs)`` runs before the loop over axis ``k``."""
    if any(constant_of(d) == 0 for d in dims):
        return

    def level(k: int, ivs: list[Value], outer: bool) -> None:
        if k == len(dims):
            body(ivs)
            return
        if at_depth is not None:
            at_depth(k, ivs)
        if constant_of(dims[k]) == 1:
            level(k + 1, [*ivs, gen.const(0)], outer)
            return

        def inner(iv: list[Value], _: list[Value]) -> list[Value]:
            level(k + 1, [*ivs, *iv], False)
            return []
        gen.for_(gen.const(0), dims[k], inner, name=f"{prefix}{k}")
        if outer and parallel:
            gen.b.block.ops[gen.b.index - 1].attributes["parallel"] = True
    level(0, [], True)


def hoister(ev: GroupEval, dom: Sequence[Value], roots: Sequence[Value]
            ) -> Callable[[int, list[Value]], None]:
    """``at_depth`` callback evaluating, before the loop over axis ``k``, the members
    (needed by ``roots``) that are constant along axes ``k`` and later."""
    by_level: dict[int, list[Value]] = {}
    for v in ev.closure(roots):
        t = v.type
        if isinstance(t, TensorType) and v not in ev.dependent and len(dom) >= t.rank:
            off = len(dom) - t.rank
            level = max((off + i + 1 for i, d in enumerate(t.shape) if d != 1), default=0)
            if level < len(dom):
                by_level.setdefault(level, []).append(v)

    def at_depth(k: int, ivs: list[Value]) -> None:
        bound = dict(enumerate(ivs))
        for v in by_level.get(k, []):
            idx = ev.canonical(v, dom, bound)
            if idx is not None:
                ev.at(v, idx)
    return at_depth



# ---------------------------------------------------------------------------- elements


def _at_elementwise(ev: GroupEval, op: Operation, idx: Index) -> Rule:
    ins = []
    for k, v in enumerate(op.operand_values):
        ins.append((yield v, ev.operand_index(op, k, idx)))
    elem = op.result.type
    elem = elem.element if isinstance(elem, TensorType) else elem
    return [ev.gen.emit(type(op)(ins, [elem], dict(op.attributes)))]


def _at_constant(ev: GroupEval, op: arith.ConstantOp, idx: Index) -> list[Value]:
    t = op.result.type
    if isinstance(t, ScalarType):
        return [ev.gen.const(op.value, t)]  # type: ignore[arg-type]
    return [ev.gen.load(ev.views[op], idx)]


def _at_dim(ev: GroupEval, op: tensor.DimOp, idx: Index) -> list[Value]:
    return [ev.dims(op.source)[op.attributes["axis"]]]


def _at_broadcast(ev: GroupEval, op: tensor.BroadcastOp, idx: Index) -> Rule:
    return [(yield op.source, ev.operand_index(op, 0, idx))]


def _at_fill(ev: GroupEval, op: tensor.FillOp, idx: Index) -> Rule:
    return [(yield op.value, [])]


def _at_arange(ev: GroupEval, op: tensor.ArangeOp, idx: Index) -> Rule:
    gen, elem = ev.gen, op.result.type.element
    k = gen.cast(idx[0], elem)
    step = gen.emit(arith.MulOp.new(k, (yield op.step, [])))
    return [gen.emit(arith.AddOp.new((yield op.start, []), step))]


def _at_slice(ev: GroupEval, op: tensor.SliceOp, idx: Index) -> Rule:
    gen = ev.gen
    drop = op.attributes.get("drop", ())
    offsets, _, steps = op.parts()
    it = iter(idx)
    src: list[Value] = []
    for a, (off, step) in enumerate(zip(offsets, steps, strict=True)):
        o = yield off, []
        src.append(o if a in drop else gen.add(o, gen.mul(next(it), (yield step, []))))
    return [(yield op.source, src)]


def _at_transpose(ev: GroupEval, op: tensor.TransposeOp, idx: Index) -> Rule:
    perm = op.attributes["perm"]
    src: list[Value] = [idx[0]] * len(perm)
    for i, p in enumerate(perm):
        src[p] = idx[i]
    return [(yield op.source, src)]


def _at_reshape(ev: GroupEval, op: tensor.ReshapeOp, idx: Index) -> Rule:
    gen = ev.gen
    if is_unit_reshape(op):
        it = iter([i for i, d in zip(idx, op.result.type.shape, strict=True) if d != 1])
        return [(yield op.source, [next(it) if d != 1 else gen.const(0)
                                   for d in op.source.type.shape])]
    view = ev.views.get(op)
    if view is not None:
        return [gen.load(view, idx)]
    flat = gen.const(0)
    for i, d in zip(idx, ev.dims(op.result), strict=True):
        flat = gen.add(gen.mul(flat, d), i)
    sdims = ev.dims(op.source)
    out: list[Value] = []
    for d in reversed(sdims):
        out.append(gen.rem(flat, d))
        flat = gen.emit(arith.FloorDivOp.new(flat, d)) if constant_of(d) != 1 else flat
    return [(yield op.source, out[::-1])]


def _at_gather(ev: GroupEval, op: tensor.GatherOp, idx: Index) -> Rule:
    gen = ev.gen
    axis = op.attributes["axis"]
    m = op.indices.type.rank if isinstance(op.indices.type, TensorType) else 0
    raw = yield op.indices, idx[axis:axis + m]
    size = ev.dims(op.source)[axis]
    k = gen.checked_index(raw, size, *labels(op, 0))
    return [(yield op.source, [*idx[:axis], k, *idx[axis + m:]])]


def _at_map(ev: GroupEval, op: tensor.MapOp, idx: Index) -> Rule:
    ins = []
    for k, v in enumerate(op.inputs):
        ins.append((yield v, ev.operand_index(op, k, idx)))
    return ev.cx.inline(op.body.blocks[0], ins)


def _at_reduce(ev: GroupEval, op: Operation, idx: Index) -> list[Value]:
    axes, keep = op.attributes["axes"], op.attributes["keepdims"]
    kept = [i for a, i in enumerate(idx) if a not in axes] if keep else list(idx)
    return red.reduce_phase(ev, [op], kept)


def _view_constant(ev: GroupEval, op: arith.ConstantOp) -> Value | None:
    """A dense constant: one read-only global, read in place."""
    t = op.result.type
    if not isinstance(t, TensorType):
        return None
    return ev.gen.emit(mem.ConstantOp([], [MemRefType(t.shape, t.element)],
                                      {"value": op.value}))


def _view_reshape(ev: GroupEval, op: tensor.ReshapeOp) -> Value | None:
    """A general reshape of a contiguous group input: a reshaped view of its buffer."""
    src = ev.env.get(op.source) if isinstance(op.source, BlockArgument) else None
    if src is None or is_unit_reshape(op) or not src.type.is_contiguous:
        return None
    t = op.result.type
    dyn = [d for d, s in zip(ev.dims(op.result), t.shape, strict=True) if s == DYN]
    return ev.gen.emit(mem.ReshapeOp([src, *dyn], [MemRefType(t.shape, t.element)]))


_VIEWS: dict[type[Operation], Callable[[GroupEval, Any], Value | None]] = {
    arith.ConstantOp: _view_constant,
    tensor.ReshapeOp: _view_reshape,
}

_AT: dict[type[Operation], Callable[[GroupEval, Any, Index], list[Value] | Rule]] = {
    **{cls: _at_elementwise for cls in ELEMENTWISE},
    arith.ConstantOp: _at_constant,
    tensor.DimOp: _at_dim,
    tensor.MapOp: _at_map,
    tensor.FillOp: _at_fill,
    tensor.ArangeOp: _at_arange,
    tensor.BroadcastOp: _at_broadcast,
    tensor.SliceOp: _at_slice,
    tensor.TransposeOp: _at_transpose,
    tensor.ReshapeOp: _at_reshape,
    tensor.GatherOp: _at_gather,
    **{cls: _at_reduce for cls in REDUCTIONS},
}


def supported(op: Operation) -> bool:
    """True if a body op has an evaluation rule (else the group is inlined unfused)."""
    return type(op) in _AT
