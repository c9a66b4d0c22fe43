"""Reductions over a set of axes no vector schedule takes, split into ones it does.

The vector schedules reduce over the last axis (``rows``), over every axis but the last
(``cols``, ``vec_cols``) or over every axis (``reduce``).  Per-channel statistics of an
``(N, C, HW)`` array, ``x.sum(axis=(0, 2))``, are none of these and ran as a scalar
kernel.  A reduction whose axes include the last one is the same as reducing the last
axis first (a row reduction) and then the other axes of the result, which is repeated
until the rest is a form the planner takes: ``(0, 2)`` of rank 3 becomes a row
reduction to ``(N, C)`` and a column reduction to ``(C,)``; ``(0, 2, 3)`` of NCHW three
steps.  max/min give the same values (NaN included); a sum adds in another order than
numpy (numpy's own order is pairwise and depends on the layout): the float tolerance
of any reduction; a float16 sum adds its partial sums in float32 (each kernel then
accumulates in float32, as a single float16 reduction does) and rounds once at the end.
``keepdims`` results get their unit axes back with a static reshape
(a run-time shape keeps the one reduction).
"""

from __future__ import annotations

from pyasc.ir.core import Operation
from pyasc.ir.ops import arith, loop, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import TensorType, element_type, f16, f32

_SPLIT = (tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp)


def _taken(axes: tuple[int, ...], rank: int) -> bool:
    """Whether a vector schedule (or the whole-array one) takes ``axes`` as they are."""
    return axes in ((rank - 1,), tuple(range(rank - 1)), tuple(range(rank)))


def _splittable(op: Operation) -> bool:
    if not isinstance(op, _SPLIT):
        return False
    t = op.operand_values[0].type
    if not isinstance(t, TensorType) or t.rank < 3:
        return False
    axes = tuple(op.attributes["axes"])
    if _taken(axes, t.rank) or t.rank - 1 not in axes:
        return False
    return not op.attributes["keepdims"] or (t.is_static and op.result.type.is_static)


def split_reductions(fn: FuncOp) -> int:
    """Rewrite the splittable reductions of ``fn`` in place; returns how many."""
    # top-level code only: a reduction inside a user loop is a window's (a pool's
    # x[b, c, h0:h1, w0:w1].max()), which the pool and stencil kernels take as it is
    ops = [op for op in fn.walk() if _splittable(op) and not loop.inside_loop(op)]
    for op in ops:
        _split(op)
    return len(ops)


def _split(op: Operation) -> None:
    block, cls = op.parent, type(op)
    assert block is not None
    at = block.index_of(op)
    value = op.operand_values[0]
    axes = list(op.attributes["axes"])
    half = cls is tensor.SumOp and element_type(value.type) == f16
    if half:  # float16 partial sums are not rounded to float16 between the steps
        wide = arith.CastOp.new(value, f32, loc=op.loc)
        block.insert(at, wide)
        at += 1
        value = wide.result
    while True:
        rank = value.type.rank
        if _taken(tuple(axes), rank) or rank - 1 not in axes:
            break
        step = cls.new(value, (rank - 1,), False, loc=op.loc)
        block.insert(at, step)
        at += 1
        value, axes = step.result, [a for a in axes if a != rank - 1]
    last = cls.new(value, tuple(axes), False, loc=op.loc)
    block.insert(at, last)
    result = last.result
    if half:
        narrow = arith.CastOp.new(result, f16, loc=op.loc)
        block.insert(at + 1, narrow)
        at += 1
        result = narrow.result
    if result.type != op.result.type:  # keepdims: the reduced axes back as ones
        shape = tensor.ReshapeOp([result], [op.result.type], loc=op.loc)
        block.insert(at + 1, shape)
        result = shape.result
    op.result.replace_all_uses_with(result)
    op.erase()


__all__ = ["split_reductions"]
