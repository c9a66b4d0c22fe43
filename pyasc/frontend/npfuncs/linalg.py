"""Products: ``matmul`` (and ``@``), ``dot`` and ``outer``; ``linalg.norm``.

Operands are promoted to their common dtype (``np.result_type``) and then to the dtype
numpy's own ``matmul``/``dot`` gives two arrays of it (the same dtype, except where a
dtype's package registers a wider product: ml_dtypes' ``bfloat16 @ bfloat16`` is
``float32``, its ``np.dot`` stays ``bfloat16``) before ``tensor.matmul``; shapes are
checked at compile time (E50002 when the contracted dimensions differ). ``dot`` follows
numpy: scalars multiply, 1-D/2-D arrays and a 1-D operand are ``matmul``; for N-D arrays
it sums over the last axis of ``a`` and the second-to-last of ``b`` (``dot(a, b)[i, j,
k, m] = sum(a[i, j, :] * b[k, :, m])``), computed as one 2-D ``matmul`` of ``a``
reshaped to ``(-1, K)`` and ``b`` with its contracted axis moved first and reshaped to
``(K, -1)``.

``np.linalg.norm`` is numpy's own composition of these and the reductions (the default
norm of a whole array is ``sqrt(dot(x, x))`` of the flattened array, as numpy computes
it); the matrix norms that need singular values (``ord=2, -2, 'nuc'``) are refused.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from pyasc.errors import (
    ArgumentError,
    ShapeInferenceError,
    TypeMismatchError,
    UnsupportedNumpyError,
)
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.npfuncs.common import array_arg, finish, normalize_axis, static_int
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.slicing import transpose_view
from pyasc.frontend.values import Dim, Scalar, Tensor, static_dims
from pyasc.ir.ops import tensor
from pyasc.ir.ops.tensor import matmul_shape
from pyasc.ir.types import ScalarType, TensorType, f64, scalar_from_numpy


def _matmul_dims(em, a: Tensor, b: Tensor) -> tuple[Dim, ...]:
    da, db = list(em.dims(a)), list(em.dims(b))
    a2 = [1, *da] if len(da) == 1 else da
    b2 = [*db, 1] if len(db) == 1 else db
    batch = broadcast_dims(em, [tuple(a2[:-2]), tuple(b2[:-2])])
    out = [*batch, a2[-2], b2[-1]]
    if len(da) == 1:
        out.pop(-2)
    if len(db) == 1:
        out.pop(-1)
    return tuple(out)


@functools.lru_cache(maxsize=64)
def product_type(t: ScalarType, numpy_fn: str) -> ScalarType:
    """The dtype of numpy's own ``np.<numpy_fn>`` of two 1x1 arrays of ``t`` (a sample:
    numpy, and the packages that register dtypes with it, decide)."""
    one = np.ones((1, 1), dtype=t.to_numpy())
    return scalar_from_numpy(getattr(np, numpy_fn)(one, one).dtype)


@register("matmul")
def matmul(lw, x1, x2, /, out=None):
    """matrix product with numpy's 1-D, 2-D and batched rules"""
    return _matmul(lw, x1, x2, out, "matmul")


def _matmul(lw, x1, x2, out, numpy_fn: str):
    a, b = array_arg(lw, x1), array_arg(lw, x2)
    if a.type.rank == 0 or b.type.rank == 0:
        raise TypeMismatchError("matmul: input operand does not have enough dimensions",
                                hint="use * for scalars")
    shape = matmul_shape(a.type.shape, b.type.shape)
    if shape is None:
        raise ShapeInferenceError(f"matmul: shapes {tuple(a.type.shape)} and "
                                  f"{tuple(b.type.shape)} are not aligned")
    t = product_type(result_type([a, b])[0], numpy_fn)
    a, b = lw.em.cast(a, t), lw.em.cast(b, t)
    v = lw.em.result(tensor.MatmulOp.new(a.value, b.value))  # type: ignore[union-attr]
    dims = _matmul_dims(lw.em, a, b)  # type: ignore[arg-type]
    result = Tensor(v, dims) if isinstance(v.type, TensorType) else Scalar(v)
    return finish(lw, result, out, numpy_fn)


@register("dot", "ndarray.dot")
def dot(lw, a, b, out=None):
    """dot product: scalars multiply; else sums a's last axis with b's second-to-last"""
    x, y = lw.em.operand(a), lw.em.operand(b)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor) or \
            x.type.rank == 0 or y.type.rank == 0:
        return finish(lw, apply_ufunc(lw.em, "multiply", [x, y]), out, "dot")
    if x.type.rank <= 2 and y.type.rank <= 2 or x.type.rank == 1 or y.type.rank == 1:
        return _matmul(lw, x, y, out, "dot")  # shapes as matmul (the dtype: dot's)
    return finish(lw, _dot_nd(lw, x, y), out, "dot")


def _dot_nd(lw, a: Tensor, b: Tensor) -> Tensor:
    """N-D ``dot`` as one 2-D matmul of flattened operands (see the module docstring)."""
    em = lw.em
    da, db = tuple(em.dims(a)), tuple(em.dims(b))
    k_a, k_b = da[-1], db[-2]
    if isinstance(k_a, int) and isinstance(k_b, int) and k_a != k_b:
        raise ShapeInferenceError(f"shapes {static_dims(da)} and {static_dims(db)} not "
                                  f"aligned: {k_a} (dim {len(da) - 1}) != {k_b} (dim "
                                  f"{len(db) - 2})")
    k = k_a if isinstance(k_a, int) else k_b
    rb = len(db)
    b_first = transpose_view(lw, b, (rb - 2, *range(rb - 2), rb - 1))
    a2 = em.reshape(a, (_product(em, da[:-1]), k))
    b2 = em.reshape(em.value(b_first), (k, _product(em, db[:-2] + db[-1:])))
    flat = _matmul(lw, a2, b2, None, "dot")
    return em.reshape(flat, (*da[:-1], *db[:-2], db[-1]))  # type: ignore[arg-type]


def _product(em, dims: tuple[Dim, ...]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = indexmath.mul(em, out, d)
    return out


@register("outer")
def outer(lw, a, b, out=None):
    """outer product of the flattened inputs"""
    x, y = call_numpy(lw, "ravel", [a], {}), call_numpy(lw, "ravel", [b], {})
    dx, dy = lw.em.dims(x), lw.em.dims(y)
    col = lw.em.reshape(lw.em.value(x), (*dx, 1))  # type: ignore[arg-type]
    row = lw.em.reshape(lw.em.value(y), (1, *dy))  # type: ignore[arg-type]
    return finish(lw, apply_ufunc(lw.em, "multiply", [col, row]), out, "outer")



def _abs(lw, x: Tensor) -> object:
    return apply_ufunc(lw.em, "absolute", [x])


def _vector_norm(lw, x: Tensor, o: object, axis: int, keep: bool) -> object:
    kw = {"axis": axis, "keepdims": keep}
    if o in (None, 2):
        return apply_ufunc(lw.em, "sqrt", [call_numpy(
            lw, "sum", [apply_ufunc(lw.em, "multiply", [x, x])], kw)])
    if o == math.inf:
        return call_numpy(lw, "max", [_abs(lw, x)], kw)
    if o == -math.inf:
        return call_numpy(lw, "min", [_abs(lw, x)], kw)
    if o == 0:
        nonzero = lw.em.cast(array_arg(lw, apply_ufunc(lw.em, "not_equal", [x, 0])),
                             x.type.element)
        return call_numpy(lw, "sum", [nonzero], kw)
    if o == 1:
        return call_numpy(lw, "sum", [_abs(lw, x)], kw)
    if isinstance(o, str):
        raise ArgumentError(f"Invalid norm order '{o}' for vectors")
    t = x.type.element
    total = call_numpy(lw, "sum", [apply_ufunc(lw.em, "power", [_abs(lw, x),
                                                                lw.em.scalar(o, t)])], kw)
    return apply_ufunc(lw.em, "power", [total, lw.em.scalar(1.0 / o, t)])


_MATRIX = {1: ("max", 0), math.inf: ("max", 1), -1: ("min", 0), -math.inf: ("min", 1)}
"""Matrix norms: the extreme (over the other axis) of absolute sums over an axis."""


def _matrix_norm(lw, x: Tensor, o: object, axes: tuple[int, int], keep: bool) -> object:
    if o in (None, "fro", "f"):
        ret = apply_ufunc(lw.em, "sqrt", [call_numpy(
            lw, "sum", [apply_ufunc(lw.em, "multiply", [x, x])], {"axis": axes})])
    elif o in _MATRIX:
        extreme, summed = _MATRIX[o]
        sums = call_numpy(lw, "sum", [_abs(lw, x)], {"axis": axes[summed]})
        other = axes[1 - summed] - (axes[1 - summed] > axes[summed])
        ret = call_numpy(lw, extreme, [sums], {"axis": other})
    elif o in (2, -2, "nuc"):
        raise UnsupportedNumpyError(f"np.linalg.norm(ord={o!r}) of a matrix needs its "
                                    "singular values (an SVD), which pyasc does not compute",
                                    hint="ord=None ('fro'), 1, -1, inf or -inf")
    else:
        raise ArgumentError("Invalid norm order for matrices.")
    if keep:
        dims = [1 if a in axes else d for a, d in enumerate(lw.em.dims(x))]
        ret = lw.em.reshape(array_arg(lw, ret), dims)
    return ret


@register("linalg.norm")
def norm(lw, x, ord=None, axis=None, keepdims=False):
    """vector (ord None/2, 1, inf, -inf, 0, p) or matrix (None/fro, 1, -1, inf, -inf) norm

    over `axis`, with `keepdims` (numpy's own composition of the reductions)."""
    v = array_arg(lw, x)
    if not v.type.element.is_float:
        v = lw.em.cast(v, f64)  # type: ignore[assignment]
    o, keep, rank = lw.static(ord, "ord"), bool(lw.static(keepdims, "keepdims")), v.type.rank
    if axis is None:
        if o is None or (o in ("f", "fro") and rank == 2) or (o == 2 and rank == 1):
            flat = call_numpy(lw, "ravel", [v], {})
            ret = apply_ufunc(lw.em, "sqrt", [dot(lw, flat, flat)])
            return lw.em.reshape(array_arg(lw, ret), [1] * rank) if keep else ret
        axes = tuple(range(rank))
    else:
        items = lw.static(axis, "axis")
        items = items if isinstance(items, tuple) else (items,)
        axes = tuple(normalize_axis(static_int(lw, a, "axis"), rank) for a in items)
    if len(axes) == 1:
        return _vector_norm(lw, v, o, axes[0], keep)
    if len(axes) == 2 and axes[0] != axes[1]:
        return _matrix_norm(lw, v, o, axes, keep)  # type: ignore[arg-type]
    raise ShapeInferenceError("Improper number of dimensions to norm." if len(axes) != 2
                              else "Duplicate axes given.")
