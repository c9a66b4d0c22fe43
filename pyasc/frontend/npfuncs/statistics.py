"""Order statistics and sorted lookups: ``median quantile percentile searchsorted
interp``.

* ``median``/``quantile``/``percentile`` (method ``linear``) sort along the axis
  (``tensor.sort``: NaN last) and take the elements numpy's partition would.  ``q``
  is a compile-time value; for a static length numpy's virtual indices and weights
  (``(n - 1) * q``, ``_get_indexes``, ``_get_gamma``) are computed by numpy's own
  expressions at compile time, for a run-time length (``dynamic_shape``) the kernel
  computes the same float64 expressions; the
  interpolation is numpy's ``_lerp`` (``a + d*t``, or ``b - d*(1-t)`` from ``t >= 0.5``)
  in numpy's dtypes (a Python-number ``q`` is weak, an array ``q`` is float64).  A
  slice holding NaN gives NaN, as in numpy.  ``median`` is the ``mean`` of the one or
  two middle elements.
* ``searchsorted`` counts, for each value, the elements of the sorted array before it
  (``<`` for ``side='left'``, ``<=`` for ``'right'``, NaN ordered last): a comparison
  broadcast over both arrays and a sum, O(len(a) * len(v)), on any backend.
* ``interp`` is numpy's C loop as array expressions: the interval of each ``x`` found
  with the counting search, numpy's slope formula and its NaN fallbacks, in float64
  (as numpy computes it; float64 does not exist on the device: E50041 there).
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg, normalize_axis, static_int
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Dim, Scalar, Tensor
from pyasc.ir.types import f64, i64, index


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


def _sorted_along(lw, a: object, axis: object) -> tuple[Tensor, int, Dim]:
    """The array sorted along the axis (flattened when None), the axis, its length."""
    x = array_arg(lw, a)
    if axis is None:
        x, ax = array_arg(lw, call_numpy(lw, "ravel", [x], {})), 0
    else:
        ax = normalize_axis(static_int(lw, axis, "axis"), x.type.rank)
    n = lw.em.dims(x)[ax]
    if n == 0:
        raise ShapeInferenceError("cannot take a median or quantile of an empty axis")
    return array_arg(lw, call_numpy(lw, "sort", [x], {"axis": ax})), ax, n


def _at(lw, s: Tensor, ax: int, i: Dim) -> object:
    return call_numpy(lw, "take", [s, i if isinstance(i, Scalar) else int(i)], {"axis": ax})


def _nan_last(lw, s: Tensor, ax: int, n: Dim, r: object) -> object:
    """numpy's ``_median_nancheck``: a slice whose last sorted element is NaN is NaN."""
    if not s.type.element.is_float:
        return r
    last = _at(lw, s, ax, indexmath.sub(lw.em, n, 1))
    return call_numpy(lw, "where", [_u(lw, "isnan", last), last, r], {})


def _keep(lw, r: object, ax: int, keepdims: object, lead: int = 0) -> object:
    if not lw.static(keepdims, "keepdims"):
        return r
    return call_numpy(lw, "expand_dims", [r, lead + ax], {})


@register("median")
def median(lw, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """middle value (mean of the two middle ones) along `axis`; NaN if any is NaN"""
    if out is not None:
        raise UnsupportedNumpyError("np.median(out=...) is not supported")
    s, ax, n = _sorted_along(lw, a, axis)
    if isinstance(n, int):
        h = n // 2
        mid = call_numpy(lw, "take", [s, lw.em.constant_array(np.arange(h - 1 + n % 2,
                                                                        h + 1))], {"axis": ax})
        middle = call_numpy(lw, "mean", [mid], {"axis": ax})
    else:
        middle = _runtime_middle(lw, s, ax, n)
    r = _nan_last(lw, s, ax, n, middle)
    if axis is None:
        return _keep_all(lw, r, a, 0) if lw.static(keepdims, "keepdims") else r
    return _keep(lw, r, ax, keepdims)


def _runtime_middle(lw, s: Tensor, ax: int, n: Scalar) -> object:
    """The median of a run-time length: the mean of one or of the two middle elements,
    chosen by the length's parity (both are numpy's ``mean``)."""
    em = lw.em
    lo = _at(lw, s, ax, indexmath.floordiv(em, indexmath.sub(em, n, 1), 2))
    hi = _at(lw, s, ax, indexmath.floordiv(em, n, 2))
    one = call_numpy(lw, "mean", [call_numpy(lw, "stack", [[lo]], {"axis": ax})],
                     {"axis": ax})
    two = call_numpy(lw, "mean", [call_numpy(lw, "stack", [[lo, hi]], {"axis": ax})],
                     {"axis": ax})
    odd = Scalar(indexmath.cmp(em, "eq", indexmath.mod(em, n, 2), 1))
    return call_numpy(lw, "where", [odd, one, two], {})


def _keep_all(lw, r: object, a: object, lead: int) -> object:
    """``keepdims`` of a reduction over every axis: size-1 axes after ``lead`` q axes."""
    rank = array_arg(lw, a).type.rank
    value = array_arg(lw, r)
    return lw.em.reshape(value, [*lw.em.dims(value)[:lead], *[1] * rank])


def _virtual(n: int, q: np.ndarray):
    """numpy's linear-method indices and weights for ``n`` values (compile time)."""
    virtual = np.asanyarray((n - 1) * q)  # numpy's _QuantileMethods["linear"]
    if virtual.dtype.kind in "iu":
        return virtual, virtual, None
    prev = np.floor(virtual)
    gamma = np.asarray(virtual - prev)
    above, below = virtual >= n - 1, virtual < 0
    nxt = np.where(above, -1, np.where(below, 0, prev + 1)).astype(np.intp)
    prev = np.where(above, -1, np.where(below, 0, prev)).astype(np.intp)
    return prev, nxt, gamma


def _lerp(lw, lo: object, hi: object, gamma: float, weak: bool) -> object:
    """numpy's ``_lerp(a, b, t)`` with a compile-time ``t``."""
    t = float(gamma) if weak else np.float64(gamma)
    diff = _u(lw, "subtract", hi, lo)
    if gamma >= 0.5:
        return _u(lw, "subtract", hi, _u(lw, "multiply", diff, 1 - t))
    return _u(lw, "add", lo, _u(lw, "multiply", diff, t))


def _runtime_quantile(lw, s: Tensor, ax: int, n: Scalar, q: np.generic,
                      weak: bool) -> object:
    """numpy's linear quantile for a run-time length: the same float64 index
    ``(n - 1) * q``, bounds and weight as :func:`_virtual`, computed by the kernel."""
    em = lw.em
    last = indexmath.sub(em, n, 1)
    if q.dtype.kind in "iu":
        return _at(lw, s, ax, indexmath.mul(em, last, int(q)))
    virtual = _u(lw, "multiply", em.cast_scalar(last, f64), np.float64(q))
    floor = _u(lw, "floor", virtual)
    above = Scalar(_u(lw, "greater_equal", virtual, em.cast_scalar(last, f64)).value)
    lower = em.cast_scalar(floor, index)  # type: ignore[arg-type]
    prev = indexmath.select(em, above.value, last, lower)
    nxt = indexmath.select(em, above.value, last, indexmath.add(em, lower, 1))
    base = call_numpy(lw, "where", [above, -1.0, floor], {})
    t = _u(lw, "subtract", virtual, base)
    t = Scalar(t.value, weak=weak)  # type: ignore[union-attr]
    lo, hi = _at(lw, s, ax, prev), _at(lw, s, ax, nxt)
    diff = _u(lw, "subtract", hi, lo)
    low = _u(lw, "add", lo, _u(lw, "multiply", diff, t))
    rest = Scalar(_u(lw, "subtract", 1.0, t).value, weak=weak)  # type: ignore[union-attr]
    high = _u(lw, "subtract", hi, _u(lw, "multiply", diff, rest))
    return call_numpy(lw, "where", [_u(lw, "greater_equal", t, 0.5), high, low], {})


def _quantile(lw, a, q_user: object, q: np.ndarray, axis, keepdims) -> object:
    if not ((q >= 0) & (q <= 1)).all():
        raise TypeMismatchError("Quantiles must be in the range [0, 1]")
    weak = type(q_user) in (int, float)
    s, ax, n = _sorted_along(lw, a, axis)
    results = []
    if isinstance(n, int):
        prev, nxt, gamma = _virtual(n, np.asarray(q))
        for k in np.ndindex(*np.shape(q)):
            lo = _at(lw, s, ax, prev[k] % n)
            r = lo if gamma is None else _lerp(lw, lo, _at(lw, s, ax, nxt[k] % n),
                                               gamma[k], weak)
            results.append(_nan_last(lw, s, ax, n, r))
    else:
        for k in np.ndindex(*np.shape(q)):
            r = _runtime_quantile(lw, s, ax, n, np.asarray(q)[k], weak)
            results.append(_nan_last(lw, s, ax, n, r))
    if np.ndim(q) == 0:
        r = results[0]
    else:
        r = call_numpy(lw, "stack", [results], {})
        r = lw.em.reshape(array_arg(lw, r), [*np.shape(q), *lw.em.dims(array_arg(lw, r))[1:]])
    if axis is None:
        return _keep_all(lw, r, a, np.ndim(q)) if lw.static(keepdims, "keepdims") else r
    return _keep(lw, r, ax, keepdims, np.ndim(q))


def _method(lw, method: object) -> None:
    if lw.static(method, "method") != "linear":
        raise UnsupportedNumpyError("only method='linear' (numpy's default) is supported")


@register("quantile")
def quantile(lw, a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False):
    """`q`-th quantiles (static `q` in [0, 1]) along `axis`, method `linear`"""
    _method(lw, method)
    qs = lw.static(q, "q")
    return _quantile(lw, a, qs, np.asanyarray(qs), axis, keepdims)


@register("percentile")
def percentile(lw, a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    """`q`-th percentiles (static `q` in [0, 100]) along `axis`, method `linear`"""
    _method(lw, method)
    qs = lw.static(q, "q")
    return _quantile(lw, a, qs, np.true_divide(qs, 100), axis, keepdims)


def _count_before(lw, a: object, v: object, right: bool) -> object:
    """How many elements of the 1-D ``a`` sort before each ``v`` (NaN last)."""
    xs = array_arg(lw, a)
    if xs.type.rank != 1:
        raise ShapeInferenceError("object too deep for desired array")
    val = lw.em.operand(v)
    col = lw.em.reshape(val, [*lw.em.dims(val), 1]) if isinstance(val, Tensor) else val
    nan_v = _u(lw, "isnan", col)
    if right:
        before = _u(lw, "logical_or", _u(lw, "less_equal", xs, col), nan_v)
    else:
        before = _u(lw, "logical_or", _u(lw, "less", xs, col),
                    _u(lw, "logical_and", nan_v, _u(lw, "logical_not", _u(lw, "isnan", xs))))
    return lw.em.cast(lw.em.operand(call_numpy(lw, "sum", [before], {"axis": -1})), i64)


@register("searchsorted", "ndarray.searchsorted")
def searchsorted(lw, a, v, side="left", sorter=None):
    """insertion positions (int64) of `v` in the sorted 1-D `a` (`side`, `sorter`)"""
    where = lw.static(side, "side")
    if where not in ("left", "right"):
        raise TypeMismatchError(f"side must be 'left' or 'right' (got {where!r})")
    if sorter is not None:
        a = call_numpy(lw, "take", [a, sorter], {})
    return _count_before(lw, a, v, where == "right")


def _f64(lw, v: object) -> object:
    x = lw.em.operand(v)
    return lw.em.cast(x if isinstance(x, Scalar | Tensor) else lw.em.scalar(float(x)), f64)


@register("interp")
def interp(lw, x, xp, fp, left=None, right=None, period=None):
    """piecewise-linear interpolation of `(xp, fp)` at `x` (float64, numpy's formula)"""
    if period is not None:
        raise UnsupportedNumpyError("np.interp(period=...) is not supported")
    xv, px, py = _f64(lw, x), array_arg(lw, _f64(lw, xp)), array_arg(lw, _f64(lw, fp))
    n = lw.em.dims(px)[0]
    if not isinstance(n, int) or n == 0:
        raise UnsupportedNumpyError("np.interp needs xp of a non-zero length known at "
                                    "compile time")
    at = lambda arr, i: call_numpy(lw, "take", [arr, i], {})  # noqa: E731
    lval = at(py, 0) if left is None else _f64(lw, left)
    rval = at(py, n - 1) if right is None else _f64(lw, right)
    j = _u(lw, "subtract", _count_before(lw, px, xv, True), 1)
    r = _between(lw, xv, px, py, j, n) if n > 1 else at(py, 0)
    r = call_numpy(lw, "where", [_u(lw, "greater", xv, at(px, n - 1)), rval, r], {})
    r = call_numpy(lw, "where", [_u(lw, "less", xv, at(px, 0)), lval, r], {})
    if n == 1:  # numpy's one-point loop has no NaN test: NaN is neither < nor >
        return r
    return call_numpy(lw, "where", [_u(lw, "isnan", xv), xv, r], {})


def _between(lw, x, px, py, j, n: int) -> object:
    """numpy's value for ``xp[j] <= x <= xp[-1]``: the slope formula, its NaN fallbacks,
    and ``fp[j]`` where ``x`` is a knot or the last point."""
    at = lambda arr, i: call_numpy(lw, "take", [arr, i], {})  # noqa: E731
    jj = _u(lw, "minimum", _u(lw, "maximum", j, 0), n - 2)
    x0, x1, y0, y1 = at(px, jj), at(px, _u(lw, "add", jj, 1)), at(py, jj), \
        at(py, _u(lw, "add", jj, 1))
    slope = _u(lw, "true_divide", _u(lw, "subtract", y1, y0), _u(lw, "subtract", x1, x0))
    r = _u(lw, "add", _u(lw, "multiply", slope, _u(lw, "subtract", x, x0)), y0)
    again = _u(lw, "add", _u(lw, "multiply", slope, _u(lw, "subtract", x, x1)), y1)
    r = call_numpy(lw, "where", [_u(lw, "isnan", r), again, r], {})
    flat = _u(lw, "logical_and", _u(lw, "isnan", r), _u(lw, "equal", y0, y1))
    r = call_numpy(lw, "where", [flat, y0, r], {})
    jc = _u(lw, "minimum", _u(lw, "maximum", j, 0), n - 1)
    knot = _u(lw, "logical_or", _u(lw, "equal", j, n - 1), _u(lw, "equal", at(px, jc), x))
    return call_numpy(lw, "where", [knot, at(py, jc), r], {})
