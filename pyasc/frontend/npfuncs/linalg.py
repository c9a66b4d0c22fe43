"""Products: ``matmul`` (and ``@``), ``dot`` and ``outer``.

Operands are promoted to their common dtype (``np.result_type``) before
``tensor.matmul``; shapes are checked at compile time (E50002 when the contracted
dimensions differ).  ``dot`` follows numpy: scalars multiply, 1-D/2-D arrays and a 1-D
operand are ``matmul``; for N-D arrays it sums over the last axis of ``a`` and the
second-to-last of ``b`` (``dot(a, b)[i, j, k, m] = sum(a[i, j, :] * b[k, :, m])``),
computed as one 2-D ``matmul`` of ``a`` reshaped to ``(-1, K)`` and ``b`` with its
contracted axis moved first and reshaped to ``(K, -1)``.
"""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, TypeMismatchError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.npfuncs.common import array_arg, finish
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.slicing import transpose_view
from pyasc.frontend.values import Dim, Scalar, Tensor, static_dims
from pyasc.ir.ops import tensor
from pyasc.ir.ops.tensor import matmul_shape
from pyasc.ir.types import TensorType


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


@register("matmul")
def matmul(lw, x1, x2, /, out=None):
    """matrix product with numpy's 1-D, 2-D and batched rules"""
    a, b = array_arg(lw, x1), array_arg(lw, x2)
    if a.type.rank == 0 or b.type.rank == 0:
        raise TypeMismatchError("matmul: input operand does not have enough dimensions",
                                hint="use * for scalars")
    shape = matmul_shape(a.type.shape, b.type.shape)
    if shape is None:
        raise ShapeInferenceError(f"matmul: shapes {tuple(a.type.shape)} and "
                                  f"{tuple(b.type.shape)} are not aligned")
    t, _ = result_type([a, b])
    a, b = lw.em.cast(a, t), lw.em.cast(b, t)
    v = lw.em.result(tensor.MatmulOp.new(a.value, b.value))  # type: ignore[union-attr]
    dims = _matmul_dims(lw.em, a, b)  # type: ignore[arg-type]
    result = Tensor(v, dims) if isinstance(v.type, TensorType) else Scalar(v)
    return finish(lw, result, out, "matmul")


@register("dot", "ndarray.dot")
def dot(lw, a, b, out=None):
    """dot product: scalars multiply; else sums a's last axis with b's second-to-last"""
    x, y = lw.em.operand(a), lw.em.operand(b)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor) or \
            x.type.rank == 0 or y.type.rank == 0:
        return finish(lw, apply_ufunc(lw.em, "multiply", [x, y]), out, "dot")
    if x.type.rank <= 2 and y.type.rank <= 2 or x.type.rank == 1 or y.type.rank == 1:
        return matmul(lw, x, y, out=out)  # numpy's dot and matmul agree here
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
    flat = matmul(lw, a2, b2)
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

