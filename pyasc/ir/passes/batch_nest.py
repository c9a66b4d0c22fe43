"""The loop nest ``batch-loops`` batches, prepared on a detached clone.

A nest is a top-level ``loop.for`` and the loops perfectly nested in it: while a loop's
body holds exactly one ``loop.for`` without carried values (beside loop-invariant
ops), that loop is one more batch axis (``for i: for j: out[i, j] = ...`` has two).
In the innermost body, the small loops with static bounds that remain (a stencil's
window, ``for di in range(-1, 2)``, usually with a carried accumulator) are unrolled
(iteration by iteration, the index a constant), fused groups are inlined, and a
``loop.if`` whose condition is then a constant (a tap loop's ``if p + q > 0``: a
condition on the window's indices alone) is replaced by the branch it takes, so that
the body is straight-line code.
"""

from __future__ import annotations

from pyasc.ir.core import Block, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import index

MAX_UNROLLED_OPS = 4096
"""Ops an unrolled innermost body may hold (a 11 x 11 window of a dozen ops fits)."""


def constant_int(v: Value) -> int | None:
    """The value of an integer ``arith.constant``, else None."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and \
            isinstance(v.op.value, int) and not isinstance(v.op.value, bool):
        return v.op.value
    return None


def trip_count(for_op: loop.ForOp) -> int | None:
    """The static number of iterations, or None when it is known at run time only."""
    lo, hi, step = (constant_int(v) for v in (for_op.lower, for_op.upper, for_op.step))
    if lo is None or hi is None or step is None or step <= 0:
        return None
    return max(-(-(hi - lo) // step), 0)


def nest(top: loop.ForOp) -> list[loop.ForOp]:
    """The loops of the perfect nest rooted at ``top``, outermost first."""
    loops = [top]
    while True:
        body = [op for op in loops[-1].body.blocks[0].ops if not isinstance(op, loop.YieldOp)]
        inner = [op for op in body if op.region_list]
        if len(inner) != 1 or not isinstance(inner[0], loop.ForOp) or inner[0].iter_args:
            return loops
        ivs = {lp.induction_var for lp in loops}
        if any(_depends_on(v, ivs) for v in (inner[0].lower, inner[0].upper, inner[0].step)):
            return loops  # bounds that depend on an outer index: not a box
        loops.append(inner[0])


def _depends_on(v: Value, ivs: set[Value]) -> bool:
    todo, seen = [v], set()
    while todo:
        cur = todo.pop()
        if cur in ivs:
            return True
        if isinstance(cur, OpResult) and cur.op not in seen:
            seen.add(cur.op)
            todo.extend(cur.op.operand_values)
    return False


depends_on = _depends_on  # whether a value is computed from one of ``ivs``


def inline_groups(block: Block) -> None:
    """Replace every ``fusion.group`` of ``block`` by its body (the groups were formed
    for one iteration; the batched ops are grouped again by the backend)."""
    for group in [op for op in block.ops if isinstance(op, FusionGroupOp)]:
        inner = group.body.blocks[0]
        mapping: dict[Value, Value] = dict(zip(inner.args, group.inputs, strict=True))
        pos = block.index_of(group)
        for op in inner.ops:
            if isinstance(op, FusionYieldOp):
                for r, v in zip(group.result_values, op.operand_values, strict=True):
                    r.replace_all_uses_with(mapping.get(v, v))
                break
            block.insert(pos, op.clone(mapping))
            pos += 1
        group.erase()


def _unroll(for_op: loop.ForOp) -> None:
    block = for_op.parent
    assert block is not None
    pos = block.index_of(for_op)
    lo, step = constant_int(for_op.lower), constant_int(for_op.step)
    assert lo is not None and step is not None
    values = list(for_op.inits)
    body = for_op.body.blocks[0]
    for t in range(trip_count(for_op) or 0):
        iv = arith.ConstantOp.new(lo + t * step, index, loc=for_op.loc)
        block.insert(pos, iv)
        pos += 1
        mapping: dict[Value, Value] = {for_op.induction_var: iv.result}
        mapping.update(zip(for_op.iter_args, values, strict=True))
        for op in body.ops:
            if isinstance(op, loop.YieldOp):
                values = [mapping.get(v, v) for v in op.operand_values]
                break
            block.insert(pos, op.clone(mapping))
            pos += 1
    for r, v in zip(for_op.result_values, values, strict=True):
        r.replace_all_uses_with(v)
    for_op.erase()


def static_value(v: Value, depth: int = 16) -> object | None:
    """``v``'s value when it is computed by pure scalar ops from constants alone (a
    condition on unrolled loop indices), else None."""
    c = constant_value(v)
    if c is not None or depth == 0 or not isinstance(v, OpResult):
        return c
    op = v.op
    if op.region_list or not op.has_trait("pure") or len(op.result_values) != 1:
        return None
    args = [static_value(x, depth - 1) for x in op.operand_values]
    if any(a is None for a in args):
        return None
    try:
        return eval_op(op, args)[0]
    except (ArithmeticError, ValueError, TypeError, IndexError, NotImplementedError):
        return None  # what would fail at run time is left to run time


def fold_static_ifs(block: Block) -> None:
    """Replace each ``loop.if`` of ``block`` whose condition is a constant by the ops of
    the branch it takes (its results: the values that branch yields), the branches
    inside it too (``elif``)."""
    todo = [op for op in block.ops if isinstance(op, loop.IfOp)]
    while todo:
        branch = todo.pop(0)
        taken = static_value(branch.cond)
        if taken is None:
            continue
        region = branch.then_region if bool(taken) else branch.else_region
        pos = block.index_of(branch)
        mapping: dict[Value, Value] = {}
        for op in region.blocks[0].ops:
            if isinstance(op, loop.YieldOp):
                for r, v in zip(branch.result_values, op.operand_values, strict=True):
                    r.replace_all_uses_with(mapping.get(v, v))
                break
            new = block.insert(pos, op.clone(mapping))
            todo += [new] if isinstance(new, loop.IfOp) else []
            pos += 1
        branch.erase()


def flatten(block: Block) -> bool:
    """Unroll the static loops of ``block`` (inner ones too), inline its groups and fold
    its branches on constants; False when a loop is not static or the body would grow
    past ``MAX_UNROLLED_OPS``."""
    while True:
        inline_groups(block)
        fold_static_ifs(block)
        loops = [op for op in block.ops if isinstance(op, loop.ForOp)]
        if not loops:
            return True
        first = loops[0]
        n = trip_count(first)
        size = sum(1 for _ in first.walk())
        if n is None or n * size + len(block.ops) > MAX_UNROLLED_OPS:
            return False
        _unroll(first)
