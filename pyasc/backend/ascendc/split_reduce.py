"""Reductions over a set of axes no vector schedule takes, split into ones it does.

The vector schedules reduce over the last axis (``rows``), over every axis but the last
(``cols``, ``vec_cols``) or over every axis (``reduce``).  Per-channel statistics of an
``(N, C, HW)`` array, ``x.sum(axis=(0, 2))``, are none of these and ran as a scalar
kernel.  A reduction whose axes include the last one is the same as reducing the run
of reduced axes that ends the shape first (a row reduction of the ``(.., H * W)`` form,
which ``vec_collapse`` plans) and then the other axes of the result: ``(0, 2)`` of rank
3 becomes a row reduction to ``(N, C)`` and a column reduction to ``(C,)``; ``(0, 2,
3)`` of NCHW the same two steps (``(2, 3)``, then ``0``).  max/min give the same
values (NaN included); a sum adds in another order than numpy (numpy's own order is
pairwise and depends on the layout): the float tolerance of any reduction; a float16
sum adds its partial sums in float32 (each kernel then accumulates in float32, as a
single float16 reduction does) and rounds once at the end.
``keepdims`` results get their unit axes back with a reshape (run-time extents: the
``tensor.dim`` of the unreduced result).
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, loop, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import DYN, TensorType, element_type, f16, f32, index

_SPLIT = (tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp)


def _taken(axes: tuple[int, ...], rank: int) -> bool:
    """Whether a vector schedule (or the whole-array one) takes ``axes`` as they are."""
    return axes in ((rank - 1,), tuple(range(rank - 1)), tuple(range(rank)))


def _trailing_run(axes: list[int], rank: int) -> tuple[int, ...]:
    """The reduced axes that end the shape (``(2, 3)`` of ``(0, 2, 3)``): one step, a
    row reduction of the ``(.., H * W)`` form (``vec_collapse``)."""
    first = rank - 1
    while first - 1 in axes:
        first -= 1
    return tuple(range(first, rank))


def _splittable(op: Operation) -> bool:
    if not isinstance(op, _SPLIT):
        return False
    t = op.operand_values[0].type
    if not isinstance(t, TensorType) or t.rank < 3:
        return False
    axes = tuple(op.attributes["axes"])
    if _taken(axes, t.rank) or t.rank - 1 not in axes or \
            axes == _trailing_run(list(axes), t.rank):
        return False
    return True


def split_reductions(fn: FuncOp) -> int:
    """Rewrite the splittable reductions of ``fn`` in place; returns how many."""
    # top-level code only: a reduction inside a user loop is a window's (a pool's
    # x[b, c, h0:h1, w0:w1].max()), which the pool and stencil kernels take as it is
    ops = [op for op in fn.walk() if _splittable(op) and not loop.inside_loop(op)]
    for op in ops:
        _split(op)
    return len(ops)


def _kept_dims(op: Operation, result: Value) -> list[Operation]:
    """``tensor.dim`` ops giving the run-time extents of the keepdims result's ``?``
    axes: the unreduced result's axes, in order."""
    t = op.result.type
    assert isinstance(t, TensorType)
    kept = [a for a in range(t.rank) if a not in op.attributes["axes"]]
    return [tensor.DimOp([result], [index], {"axis": kept.index(a)}, loc=op.loc)
            for a, d in enumerate(t.shape) if d == DYN]


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
    steps = [_trailing_run(axes, value.type.rank)]  # a row reduction of the .., H*W form
    rest = tuple(a for a in axes if a not in steps[0])
    steps += [rest] if rest else []  # the leading axes: a column reduction (or scalar)
    for step_axes in steps:
        step = cls.new(value, step_axes, False, loc=op.loc)
        block.insert(at, step)
        at += 1
        value = step.result
    if half:
        narrow = arith.CastOp.new(value, f16, loc=op.loc)
        block.insert(at, narrow)
        at += 1
        value = narrow.result
    result = value
    if result.type != op.result.type:  # keepdims: the reduced axes back as ones
        dims = _kept_dims(op, result)
        for dim in dims:
            block.insert(at, dim)
            at += 1
        shape = tensor.ReshapeOp([result, *(d.result for d in dims)], [op.result.type],
                                 loc=op.loc)
        block.insert(at, shape)
        result = shape.result
    op.result.replace_all_uses_with(result)
    op.erase()


__all__ = ["split_reductions"]
