"""A static estimate of the work of one iteration of a loop (loop-level IR).

About one unit per scalar op; ``exp``-like math counts 16, an allocation 64, a free 16,
a call 32, views and terminators nothing.  A ``loop.for`` with constant bounds counts
its trip count times its body; other loops count ``DYNAMIC_TRIPS`` iterations, an
``if`` its costlier branch.  Used by the CPU backend (the thread pool runs a split loop
inline when ``trips * cost`` is small), by ``memplan`` (a loop-private buffer stays
inside a split loop only when an iteration costs much more than an allocation) and by
``reduce-to-memory``/``output-accumulators`` (a small static window is left to LLVM's
full unrolling: :func:`unrolled_whole`).
"""

from __future__ import annotations

from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import arith, func, loop, math, mem

MAX_COST = 1 << 40
DYNAMIC_TRIPS = 16
"""Assumed trip count of an inner loop whose bounds are not constants."""

_WEIGHTS: dict[type, int] = {
    loop.YieldOp: 0, loop.ConditionOp: 0, mem.DimOp: 0, mem.SubviewOp: 0,
    mem.TransposeOp: 0, mem.ReshapeOp: 0, mem.ConstantOp: 0, mem.AllocOp: 64,
    mem.DeallocOp: 16, func.CallOp: 32,
    **{cls: 16 for cls in (math.ExpOp, math.Exp2Op, math.Expm1Op, math.LogOp, math.Log2Op,
                           math.Log10Op, math.Log1pOp, math.TanhOp, math.SinOp, math.CosOp,
                           math.TanOp, math.ErfOp, math.SigmoidOp, math.PowOp,
                           math.AtanOp)},
}
"""Cost of one execution of an op (default 1); region ops are costed by their regions."""


INLINE_WORK = 1 << 18
"""Below this much work (trip count times iteration cost) the thread pool runs a split
loop on the calling thread: the default of ``pyasc.runtime.threads.DEFAULT_MIN_WORK``."""


def static_work(op: loop.ForOp) -> int | None:
    """``trip count * iteration cost`` when the trip count is a constant, else None."""
    if any(_constant(v) is None for v in (op.lower, op.upper, op.step)):
        return None
    return min(MAX_COST, _trips(op) * iteration_cost(op))


REGISTER_WORK = 512
"""A window (a loop nest carrying accumulators) of static trip counts whose work is at
most this much is unrolled whole by LLVM, which then vectorizes the enclosing output
loop with the accumulators in registers (measured: a 15-tap FIR, a 7x7 blur): passes
that would move those accumulators to memory leave it alone."""


def unrolled_whole(nest: loop.ForOp) -> bool:
    """``nest`` is a small window of static trip counts that LLVM unrolls entirely."""
    work = static_work(nest)
    if work is None or work > REGISTER_WORK:
        return False
    return all(static_work(lp) is not None for lp in nest.walk() if isinstance(lp, loop.ForOp))


def iteration_cost(op: loop.ForOp) -> int:
    """Estimated work of one iteration of ``op`` (about one unit per scalar op)."""
    return max(1, min(MAX_COST, _block_cost(op.body.blocks[0])))


def _block_cost(block: Block) -> int:
    total = 0
    for op in block.ops:
        total += _op_cost(op)
    return min(MAX_COST, total)


def _op_cost(op: Operation) -> int:
    if isinstance(op, loop.ForOp):
        return _trips(op) * (1 + _block_cost(op.body.blocks[0]))
    if isinstance(op, loop.WhileOp):
        inner = _block_cost(op.before.blocks[0]) + _block_cost(op.after.blocks[0])
        return DYNAMIC_TRIPS * (1 + inner)
    if isinstance(op, loop.IfOp):
        return 1 + max(_block_cost(r.blocks[0]) for r in op.region_list)
    return _WEIGHTS.get(type(op), 1)


def _trips(op: loop.ForOp) -> int:
    bounds = [_constant(v) for v in (op.lower, op.upper, op.step)]
    if any(b is None for b in bounds):
        return DYNAMIC_TRIPS
    lo, hi, step = bounds
    if step == 0:
        return 1
    return max(0, -(-(hi - lo) // step)) if step > 0 else max(0, -(-(lo - hi) // -step))


def _constant(v: Value) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, int):
        return int(owner.value)
    return None
