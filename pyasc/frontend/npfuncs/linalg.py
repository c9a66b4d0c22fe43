"""Products: ``matmul`` (and ``@``), ``dot`` and ``outer``.

Operands are promoted to their common dtype (``np.result_type``) before
``tensor.matmul``; shapes are checked at compile time (E50002 when the contracted
dimensions differ).  ``dot`` follows numpy for scalars (a product) and 1-D/2-D arrays;
``dot`` of arrays with more than two dimensions is not supported.
"""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.npfuncs.common import array_arg, finish
from pyasc.frontend.numpy_registry import register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Dim, Scalar, Tensor
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
    """dot product: scalars multiply, 1-D/2-D arrays as matmul"""
    x, y = lw.em.operand(a), lw.em.operand(b)
    if not isinstance(x, Tensor) or not isinstance(y, Tensor) or \
            x.type.rank == 0 or y.type.rank == 0:
        return finish(lw, apply_ufunc(lw.em, "multiply", [x, y]), out, "dot")
    if x.type.rank > 2 or y.type.rank > 2:
        raise UnsupportedNumpyError("np.dot of arrays with more than 2 dimensions",
                                    hint="use np.matmul (it broadcasts batch dimensions)")
    return matmul(lw, x, y, out=out)


@register("outer")
def outer(lw, a, b, out=None):
    """outer product of the flattened inputs"""
    from pyasc.frontend.npfuncs.shapes import ravel

    x, y = ravel(lw, a), ravel(lw, b)
    dx, dy = lw.em.dims(x), lw.em.dims(y)
    col = lw.em.reshape(lw.em.value(x), (*dx, 1))  # type: ignore[arg-type]
    row = lw.em.reshape(lw.em.value(y), (1, *dy))  # type: ignore[arg-type]
    return finish(lw, apply_ufunc(lw.em, "multiply", [col, row]), out, "outer")

