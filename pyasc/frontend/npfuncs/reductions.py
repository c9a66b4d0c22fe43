"""Reductions: ``sum prod max min amax amin any all mean var std argmax argmin``.

Result dtypes are numpy's, found by running the numpy function on a tiny array of the
input's dtype (``sum`` of ``int8`` is ``int64`` on Linux, ``mean`` of ints is
``float64``); the input is cast to that dtype before reducing.  ``mean`` of
``float16`` accumulates in ``float32`` like numpy.  ``argmax``/``argmin`` give
``int64`` (numpy's ``intp``).
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import TypeMismatchError
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import (
    array_arg,
    as_dtype,
    axes_arg,
    count,
    finish,
    normalize_axis,
    static_int,
)
from pyasc.frontend.numpy_registry import register
from pyasc.frontend.promotion import to_ir
from pyasc.frontend.values import Scalar, Tensor
from pyasc.ir.ops import tensor
from pyasc.ir.types import ScalarType, TensorType, f16, f32, i1, i64, index


def _numpy_dtype(fn, x: Tensor, **kwargs: object) -> ScalarType:
    """The result dtype numpy gives ``fn`` on an array of ``x``'s dtype."""
    sample = np.ones((1,) * x.type.rank, dtype=x.type.element.to_numpy())
    try:
        return to_ir(np.asarray(fn(sample, **kwargs)).dtype)
    except TypeError as exc:
        raise TypeMismatchError(f"np.{fn.__name__}: {exc}") from None


def _wrap(lw, value, x: Tensor, axes: tuple[int, ...], keepdims: bool) -> Scalar | Tensor:
    if isinstance(value.type, TensorType) and value.type.rank == 0:
        # numpy returns a scalar for every 0-d reduction result (keepdims on a 0-d array)
        return Scalar(lw.em.result(tensor.ExtractOp([value], [value.type.element])))
    if isinstance(value.type, TensorType):
        dims = lw.em.dims(x)
        out = [1 if a in axes else d for a, d in enumerate(dims)] if keepdims else \
            [d for a, d in enumerate(dims) if a not in axes]
        return Tensor(value, tuple(out))
    return Scalar(value)


def _reduce(lw, op_cls, x: Tensor, axes: tuple[int, ...], keepdims: bool,
            elem: ScalarType) -> Scalar | Tensor:
    src = lw.em.cast(x, elem)
    return _wrap(lw, lw.em.result(op_cls.new(src.value, axes, keepdims)), x, axes, keepdims)


def _dtype_kwargs(lw, dtype: object) -> dict[str, object]:
    t = as_dtype(lw, dtype)
    return {} if t is None else {"dtype": t.to_numpy()}


@register("sum", "ndarray.sum")
def sum_(lw, a, axis=None, dtype=None, out=None, keepdims=False):
    """sum over axes (int, tuple, negative), numpy's accumulator dtype"""
    x = array_arg(lw, a)
    axes = axes_arg(lw, axis, x.type.rank)
    elem = _numpy_dtype(np.sum, x, **_dtype_kwargs(lw, dtype))
    return finish(lw, _reduce(lw, tensor.SumOp, x, axes, bool(lw.static(keepdims, "keepdims")),
                              elem), out, "sum")


@register("prod", "ndarray.prod")
def prod(lw, a, axis=None, dtype=None, out=None, keepdims=False):
    """product over axes, numpy's accumulator dtype"""
    x = array_arg(lw, a)
    axes = axes_arg(lw, axis, x.type.rank)
    elem = _numpy_dtype(np.prod, x, **_dtype_kwargs(lw, dtype))
    return finish(lw, _reduce(lw, tensor.ProdOp, x, axes, bool(lw.static(keepdims, "keepdims")),
                              elem), out, "prod")


def _extreme(op_cls, what: str):
    def handler(lw, a, axis=None, out=None, keepdims=False):
        x = array_arg(lw, a)
        axes = axes_arg(lw, axis, x.type.rank)
        keep = bool(lw.static(keepdims, "keepdims"))
        return finish(lw, _reduce(lw, op_cls, x, axes, keep, x.type.element), out, what)
    handler.__doc__ = f"{what}imum over axes (NaN propagates)"
    return handler


register("max", "amax", "ndarray.max")(_extreme(tensor.ReduceMaxOp, "max"))
register("min", "amin", "ndarray.min")(_extreme(tensor.ReduceMinOp, "min"))


def _logical(op_cls, what: str):
    def handler(lw, a, axis=None, out=None, keepdims=False):
        x = array_arg(lw, a)
        axes = axes_arg(lw, axis, x.type.rank)
        keep = bool(lw.static(keepdims, "keepdims"))
        return finish(lw, _reduce(lw, op_cls, x, axes, keep, i1), out, what)
    handler.__doc__ = f"`{what}` over axes (nonzero is true)"
    return handler


register("any", "ndarray.any")(_logical(tensor.AnyOp, "any"))
register("all", "ndarray.all")(_logical(tensor.AllOp, "all"))


def _mean(lw, x: Tensor, axes: tuple[int, ...], keepdims: bool, elem: ScalarType):
    acc = f32 if elem == f16 else elem
    s = _reduce(lw, tensor.SumOp, x, axes, keepdims, acc)
    n = count(lw, [d for a, d in enumerate(lw.em.dims(x)) if a in axes], acc)
    return lw.em.cast(apply_ufunc(lw.em, "true_divide", [s, n]), elem)  # type: ignore


@register("mean", "ndarray.mean")
def mean(lw, a, axis=None, dtype=None, out=None, keepdims=False):
    """arithmetic mean; float64 for integer input, float32 accumulation for float16"""
    x = array_arg(lw, a)
    axes = axes_arg(lw, axis, x.type.rank)
    elem = _numpy_dtype(np.mean, x, **_dtype_kwargs(lw, dtype))
    keep = bool(lw.static(keepdims, "keepdims"))
    return finish(lw, _mean(lw, x, axes, keep, elem), out, "mean")


def _var(lw, a, axis, dtype, ddof, keepdims) -> tuple[Scalar | Tensor, ScalarType]:
    x = array_arg(lw, a)
    axes = axes_arg(lw, axis, x.type.rank)
    elem = _numpy_dtype(np.var, x, **_dtype_kwargs(lw, dtype))
    acc = f32 if elem == f16 else elem
    xa = lw.em.cast(x, acc)
    mu = _mean(lw, xa, axes, True, acc)  # type: ignore[arg-type]
    d = apply_ufunc(lw.em, "subtract", [xa, mu])
    sq = _reduce(lw, tensor.SumOp, apply_ufunc(lw.em, "multiply", [d, d]), axes,
                 bool(lw.static(keepdims, "keepdims")), acc)  # type: ignore[arg-type]
    n = count(lw, [dd for k, dd in enumerate(lw.em.dims(x)) if k in axes], acc)
    dof = apply_ufunc(lw.em, "subtract", [n, lw.em.scalar(static_int(lw, ddof, "ddof"), acc)])
    return apply_ufunc(lw.em, "true_divide", [sq, dof]), elem  # type: ignore[return-value]


@register("var", "ndarray.var")
def var(lw, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """variance `mean(abs(x - x.mean())**2)` with `ddof`"""
    v, elem = _var(lw, a, axis, dtype, ddof, keepdims)
    return finish(lw, lw.em.cast(v, elem), out, "var")


@register("std", "ndarray.std")
def std(lw, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """standard deviation, `sqrt(var)`"""
    v, elem = _var(lw, a, axis, dtype, ddof, keepdims)
    return finish(lw, lw.em.cast(apply_ufunc(lw.em, "sqrt", [v]), elem), out, "std")


def _arg(op_cls, what: str):
    def handler(lw, a, axis=None, out=None, *, keepdims=False):
        x = array_arg(lw, a)
        keep = bool(lw.static(keepdims, "keepdims"))
        rank = x.type.rank
        if axis is None:
            t = TensorType((1,) * rank, index) if keep else index
            attrs: dict[str, object] = {"keepdims": keep} if keep else {}
            axes = tuple(range(rank))
        else:
            ax = normalize_axis(static_int(lw, lw.static(axis, "axis"), "axis"), rank)
            t = tensor.ReduceOp.result_type(x.type, [ax], keep, index)
            attrs, axes = {"axis": ax, "keepdims": keep}, (ax,)
        v = lw.em.result(op_cls([x.value], [t], attrs))
        result = lw.em.cast(_wrap(lw, v, x, axes, keep), i64)  # type: ignore[arg-type]
        return finish(lw, result, out, what)
    handler.__doc__ = f"index of the first {what[3:]}imum (int64)"
    return handler


register("argmax", "ndarray.argmax")(_arg(tensor.ArgMaxOp, "argmax"))
register("argmin", "ndarray.argmin")(_arg(tensor.ArgMinOp, "argmin"))
