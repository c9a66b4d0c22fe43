"""Reductions that ignore NaN: ``nansum nanprod nanmax nanmin nanmean nanargmax
nanargmin``.

Each is numpy's own recipe on top of the plain reductions: NaN is replaced by the
reduction's identity (``0`` for sums, ``1`` for products, ``-inf``/``inf`` for the
extremes) with ``np.where``; a slice of NaN only gives NaN for ``nanmax``/``nanmin``
(numpy warns there) and for ``nanmean`` (``0/0``).  ``nanmean`` divides the NaN-free
sum by the count of the others as numpy's ``_divide_by_count`` does, in float64 and
rounded to the sum's dtype; for ``float16``/``float32`` sums the division is done in
``float32``, which rounds to the same value (a quotient rounded first to 53 or 24 bits
and then to 24 or 11 rounds as if rounded once) and so also runs on the device.
``nanargmax``/``nanargmin`` raise numpy's ``ValueError`` for a slice of NaN.  Integer
and boolean inputs have no NaN: the plain reduction.
"""

from __future__ import annotations

from pyasc.failures import raise_kind
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg, finish
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Tensor
from pyasc.ir.ops import func
from pyasc.ir.types import f32, f64


def _isnan(lw, x: Tensor) -> object:
    return apply_ufunc(lw.em, "isnan", [x])


def _replaced(lw, x: Tensor, value: float) -> Tensor:
    """``x`` with NaN replaced by ``value`` (numpy's ``_replace_nan``)."""
    if not x.type.element.is_float:
        return x
    fill = lw.em.scalar(value, x.type.element)
    return array_arg(lw, call_numpy(lw, "where", [_isnan(lw, x), fill, x], {}))


def _nan_total(name: str, identity: float):
    def handler(lw, a, axis=None, dtype=None, out=None, keepdims=False):
        x = _replaced(lw, array_arg(lw, a), identity)
        return call_numpy(lw, name, [x], {"axis": axis, "dtype": dtype, "out": out,
                                         "keepdims": keepdims})
    handler.__doc__ = f"`np.{name}` treating NaN as {identity:g}"
    return handler


register("nansum")(_nan_total("sum", 0.0))
register("nanprod")(_nan_total("prod", 1.0))


def _nan_extreme(name: str, identity: float):
    def handler(lw, a, axis=None, out=None, keepdims=False):
        x = array_arg(lw, a)
        kw = {"axis": axis, "keepdims": keepdims}
        if not x.type.element.is_float:
            return call_numpy(lw, name, [x], {**kw, "out": out})
        best = call_numpy(lw, name, [_replaced(lw, x, identity)], kw)
        empty = call_numpy(lw, "all", [_isnan(lw, x)], kw)
        nan = lw.em.scalar(float("nan"), x.type.element)
        return finish(lw, call_numpy(lw, "where", [empty, nan, best], {}), out, f"nan{name}")
    handler.__doc__ = f"`np.{name}` ignoring NaN (NaN only for a slice of NaN)"
    return handler


register("nanmax")(_nan_extreme("max", float("-inf")))
register("nanmin")(_nan_extreme("min", float("inf")))


@register("nanmean")
def nanmean(lw, a, axis=None, dtype=None, out=None, keepdims=False):
    """mean of the non-NaN elements (NaN for a slice of NaN)"""
    x = array_arg(lw, a)
    kw = {"axis": axis, "keepdims": keepdims}
    if not x.type.element.is_float:
        return call_numpy(lw, "mean", [x], {**kw, "dtype": dtype, "out": out})
    total = call_numpy(lw, "sum", [_replaced(lw, x, 0.0)], {**kw, "dtype": dtype})
    valid = apply_ufunc(lw.em, "logical_not", [_isnan(lw, x)])
    count = call_numpy(lw, "sum", [valid], {**kw, "dtype": "int64"})
    elem = total.type.element if isinstance(total, Tensor) else total.type
    work = f64 if elem == f64 else f32
    quotient = apply_ufunc(lw.em, "true_divide", [lw.em.cast(total, work),
                                                  lw.em.cast(count, work)])
    return finish(lw, lw.em.cast(quotient, elem), out, "nanmean")


def _nan_arg(name: str, identity: float):
    def handler(lw, a, axis=None, out=None, *, keepdims=False):
        x = array_arg(lw, a)
        kw = {"axis": axis, "out": out, "keepdims": keepdims}
        if not x.type.element.is_float:
            return call_numpy(lw, name, [x], kw)
        empty = call_numpy(lw, "any", [call_numpy(lw, "all", [_isnan(lw, x)],
                                                  {"axis": axis})], {})
        ok = apply_ufunc(lw.em, "logical_not", [empty])
        lw.em.op(func.AssertOp([ok.value], [], {  # type: ignore[union-attr]
            "message": "All-NaN slice encountered", "kind": raise_kind("ValueError")}))
        return call_numpy(lw, name, [_replaced(lw, x, identity)], kw)
    handler.__doc__ = f"`np.{name}` ignoring NaN (`ValueError` for a slice of NaN)"
    return handler


register("nanargmax")(_nan_arg("argmax", float("-inf")))
register("nanargmin")(_nan_arg("argmin", float("inf")))
