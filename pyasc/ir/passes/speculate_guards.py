"""``speculate-guards``: the guarded loads and arithmetic of an innermost loop run
unconditionally, the guard moves into the condition of the store it protects, so LLVM
vectorizes the loop with plain loads instead of masked gathers (loop level, CPU only).

Greedy non-maximum suppression written with a keep mask::

    for j in range(i + 1, n):
        if keep[j] == 1:
            iou = ... boxes[i, k] ... boxes[j, k] ... areas[j] ...
            if iou > t:
                keep[j] = 0

puts every load inside ``loop.if``: LLVM's vectorizer then loads each lane under a
mask (a gather per load, 3x slower than the scalar loop).  Per innermost ``loop.for``
``L`` (no loop inside it), innermost ``loop.if`` first:

1. **Speculation.**  When every op of an ``if``'s regions is *speculable*, or a
   ``mem.store``, or an ``if`` of stores only, the speculable ops move before the ``if``
   in order.  Speculable: a region-free pure op that cannot trap (not an integer
   division or remainder), or a ``mem.load`` of a buffer (not a view) that nothing in
   ``L`` writes, whose indices are provably in bounds for every value of the counters
   around it (``invariance.in_bounds``: loop ranges and array sizes, never the guard).
   A speculated value that the guard would have kept from being computed is only used
   under that guard, so nothing observable changes; never a fault, never a read out of
   bounds.  An ``if`` of some other op (a call, a check, a loop) is left whole: it
   would not vectorize anyway, and speculating would only add work.
2. **If-conversion.**  An ``if`` whose regions are then empty but for their yields
   becomes one ``arith.select`` per result.
3. **Guard folding.**  ``if g { if c { stores } }`` (no results, empty else regions)
   becomes ``if select(g, c, false) { stores }``: one masked store.  The ``select``
   (not ``and``) keeps a value the guard made irrelevant from reaching the branch.
4. **Invariant loads.**  Speculable ops of ``L``'s body whose operands are defined
   before ``L`` move before it (``invariance.safe_load`` for loads: the proof holds
   before ``L``, where a zero-trip loop would not have read).
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.invariance import in_bounds, inside, safe_load, unwritten
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.types import MemRefType, element_type, i1

_TRAPPING = (arith.DivOp, arith.FloorDivOp, arith.RemOp)  # on integers: UB on zero


@register_pass
class SpeculateGuards(Pass):
    name = "speculate-guards"
    description = "guarded loads and arithmetic of innermost loops speculated; guard -> store"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None and _innermost(op):
                speculate_loop(op)


def _innermost(lp: loop.ForOp) -> bool:
    return not any(isinstance(o, loop.ForOp | loop.WhileOp) for o in lp.walk() if o is not lp)


def speculate_loop(lp: loop.ForOp) -> None:
    """Steps 1-4 of the module docstring on the innermost loop ``lp``, in place."""
    ifs = [o for o in lp.walk() if isinstance(o, loop.IfOp)]
    for branch in reversed(ifs):  # post-order: inner ifs empty into their parents first
        if branch.parent is not None and _speculate(branch, lp):
            if not _if_convert(branch):
                _fold_guard(branch)
    _hoist_invariants(lp)


def speculable(op: Operation, lp: Operation, scope: Operation) -> bool:
    """``op`` may run where ``scope`` is, in ``lp``, whether or not it would have."""
    if op.region_list:
        return False
    if isinstance(op, mem.LoadOp):
        buf = op.operand_values[0]
        return base_buffer(buf) is buf and unwritten(buf, lp) and in_bounds(op, scope)
    if not op.has_trait("pure"):
        return False
    return not (isinstance(op, _TRAPPING) and
                not element_type(op.result.type).is_float)


def _region_ops(branch: loop.IfOp) -> list[Operation]:
    return [o for r in (branch.then_region, branch.else_region)
            for o in r.blocks[0].ops[:-1]]


def _speculate(branch: loop.IfOp, lp: loop.ForOp) -> bool:
    """Step 1 for ``branch``: True when its regions are left with stores, store-only
    ifs and yields (its speculable ops moved before it)."""
    ops = _region_ops(branch)
    movable = [o for o in ops if speculable(o, lp, branch)]
    rest = [o for o in ops if o not in movable]
    if not all(isinstance(o, mem.StoreOp) or _store_only_if(o) for o in rest):
        return False
    for op in movable:
        op.parent.detach(op)
        branch.parent.insert(branch.parent.index_of(branch), op)
    return True


def _store_only_if(op: Operation) -> bool:
    return isinstance(op, loop.IfOp) and not op.outputs and \
        all(isinstance(o, mem.StoreOp) or _store_only_if(o) for o in _region_ops(op))


def _if_convert(branch: loop.IfOp) -> bool:
    """Step 2: an ``if`` left with nothing but yields becomes selects (not one that
    yields a buffer: a select picks values, the ``if`` picks which array a view is)."""
    if _region_ops(branch) or any(isinstance(o.type, MemRefType) for o in branch.outputs):
        return False
    yields = [r.blocks[0].ops[-1].operand_values for r in (branch.then_region,
                                                           branch.else_region)]
    block = branch.parent
    for out, a, b in zip(branch.outputs, *yields, strict=True):
        sel = block.insert(block.index_of(branch), arith.SelectOp.new(branch.cond, a, b,
                                                                      loc=branch.loc))
        out.replace_all_uses_with(sel.result)
    branch.erase()
    return True


def _fold_guard(branch: loop.IfOp) -> None:
    """Step 3: ``if g { if c { S } }`` -> ``if select(g, c, false) { S }``."""
    then_ops = branch.then_region.blocks[0].ops
    if branch.outputs or len(then_ops) != 2 or branch.else_region.blocks[0].ops[:-1]:
        return
    inner = then_ops[0]
    if not isinstance(inner, loop.IfOp) or inner.outputs or \
            inner.else_region.blocks[0].ops[:-1] or inside(branch, inner.cond):
        return
    block = branch.parent
    at = block.index_of(branch)
    false = block.insert(at, arith.ConstantOp.new(False, i1, loc=branch.loc))
    cond = block.insert(at + 1, arith.SelectOp.new(branch.cond, inner.cond, false.result,
                                                   loc=branch.loc))
    inner.parent.detach(inner)
    inner.set_operand(0, cond.result)
    block.insert(block.index_of(branch), inner)
    branch.erase()


def _hoist_invariants(lp: loop.ForOp) -> None:
    """Step 4: speculable ops of ``lp``'s body computed from values defined before it."""
    block = lp.body.block
    for op in list(block.ops[:-1]):
        if op.region_list or any(inside(lp, v) for v in _operands(op)):
            continue
        if safe_load(op, lp) or not isinstance(op, mem.LoadOp) and speculable(op, lp, lp):
            block.detach(op)
            lp.parent.insert(lp.parent.index_of(lp), op)


def _operands(op: Operation) -> list[Value]:
    return list(op.operand_values)


__all__ = ["SpeculateGuards", "speculable", "speculate_loop"]
