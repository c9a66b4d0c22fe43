"""Sorting and running totals: ``sort argsort`` (functions and methods, ``x.sort()`` in
place), ``cumsum cumprod`` and ``take_along_axis``.

Every ``kind`` numpy accepts is accepted (and checked by numpy itself), but the result is
always that of numpy's ``kind="stable"``: equal elements keep their order and NaN goes
last (``tensor.sort``/``tensor.argsort``, a merge sort).  ``axis=None`` sorts or scans
the flattened array.  ``argsort`` gives ``int64`` positions; ``cumsum``/``cumprod`` use
numpy's accumulator dtype (``int64`` for small integers and bools) unless ``dtype=``
says otherwise.  ``take_along_axis`` is ``tensor.gather_nd`` with ``arange`` coordinates
on the other axes.
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import ArgumentError, ShapeInferenceError, TypeMismatchError
from pyasc.frontend.npfuncs.common import (
    array_arg,
    as_dtype,
    finish,
    normalize_axis,
    static_int,
)
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import to_ir
from pyasc.frontend.values import Buffer, Tensor
from pyasc.ir.ops import arith, sort
from pyasc.ir.types import ScalarType, i64


def _check_kind(lw, kind: object, stable: object) -> None:
    """numpy's own validation of ``kind``/``stable`` (the sort is stable regardless)."""
    k, s = lw.static(kind, "kind"), lw.static(stable, "stable")
    try:
        np.sort(np.zeros(1), kind=k, stable=s)  # type: ignore[call-overload]
    except (ValueError, TypeError) as exc:
        raise ArgumentError(f"np.sort: {exc}") from None


def _along(lw, a: object, axis: object) -> tuple[Tensor, int]:
    """The array (flattened when ``axis`` is None) and the normalized axis."""
    x = array_arg(lw, a)
    if axis is None:
        return array_arg(lw, call_numpy(lw, "ravel", [x], {})), 0
    return x, normalize_axis(static_int(lw, axis, "axis"), x.type.rank)


def sorted_value(lw, x: Tensor, axis: int, positions: bool = False) -> Tensor:
    """``tensor.sort`` (or ``argsort`` as ``int64`` when ``positions``) of ``x``."""
    cls = sort.ArgSortOp if positions else sort.SortOp
    source, descending = x.value, False
    negated = getattr(source, "op", None)
    if positions and isinstance(negated, arith.NegOp) and x.type.element.is_float:
        # argsort(-x) of floats is x's stable descending order (negation is exact and
        # keeps NaN last): no negated copy is needed.
        source, descending = negated.operand_values[0], True
    out = Tensor(lw.em.result(cls.new(source, axis, descending)), lw.em.dims(x))
    return lw.em.cast(out, i64) if positions else out  # type: ignore[return-value]


@register("sort")
def sort_(lw, a, axis=-1, kind=None, *, stable=None):
    """sorted copy along `axis` (`None`: flattened); stable, NaN last, any `kind`"""
    _check_kind(lw, kind, stable)
    x, ax = _along(lw, a, axis)
    return sorted_value(lw, x, ax)


@register("argsort", "ndarray.argsort")
def argsort(lw, a, axis=-1, kind=None, *, stable=None):
    """int64 positions that sort along `axis` (numpy's `kind="stable"` order)"""
    _check_kind(lw, kind, stable)
    x, ax = _along(lw, a, axis)
    return sorted_value(lw, x, ax, positions=True)


@register("ndarray.sort")
def sort_method(lw, x, axis=-1, kind=None, *, stable=None):
    """in-place stable sort of an array the function owns or was passed"""
    _check_kind(lw, kind, stable)
    if axis is None:
        raise TypeMismatchError("x.sort(axis=None) is not valid numpy",
                                hint="use np.sort(x, axis=None)")
    v, ax = _along(lw, x, axis)
    result = sorted_value(lw, v, ax)
    if isinstance(x, Buffer):
        lw.em.write(result, x)
    # A value that is not bound to a buffer cannot be seen again: nothing to write.


def _scan_dtype(fn, x: Tensor, dtype: ScalarType | None) -> ScalarType:
    sample = np.ones((1,), dtype=x.type.element.to_numpy())
    kwargs = {} if dtype is None else {"dtype": dtype.to_numpy()}
    return to_ir(np.asarray(fn(sample, **kwargs)).dtype)


def _scan(op_cls, fn, what: str):
    def handler(lw, a, axis=None, dtype=None, out=None):
        x, ax = _along(lw, a, axis)
        elem = _scan_dtype(fn, x, as_dtype(lw, dtype))
        src = lw.em.cast(x, elem)
        result = Tensor(lw.em.result(op_cls.new(src.value, ax)), lw.em.dims(x))
        return finish(lw, result, out, what)
    handler.__doc__ = (f"running {'sum' if what == 'cumsum' else 'product'} along `axis` "
                       "(`None`: flattened), numpy's accumulator dtype")
    return handler


register("cumsum", "ndarray.cumsum")(_scan(sort.CumSumOp, np.cumsum, "cumsum"))
register("cumprod", "ndarray.cumprod")(_scan(sort.CumProdOp, np.cumprod, "cumprod"))


@register("take_along_axis")
def take_along_axis(lw, arr, indices, axis=-1):
    """`arr` at integer `indices` along `axis` (`None`: flattened; indices wrap)"""
    from pyasc.frontend.advanced import coordinates, gather_nd

    x, ax = _along(lw, arr, axis)
    idx = array_arg(lw, indices)
    if not idx.type.element.is_int:
        raise TypeMismatchError("`indices` must be an integer array")
    if idx.type.rank != x.type.rank:
        raise ShapeInferenceError("`indices` and `arr` must have the same number of "
                                  "dimensions")
    from pyasc.frontend.indexing import array_name

    grids = coordinates(lw, lw.em.dims(x))
    grids[ax] = idx
    return gather_nd(lw, x, grids, array_name(arr, None))

