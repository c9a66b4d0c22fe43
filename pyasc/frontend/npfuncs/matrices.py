"""Array functions built from reshapes, broadcasts, slices and gathers:
``flip fliplr flipud tile kron cross diag diagonal trace``.

* ``flip``: a ``::-1`` slice along each axis (a view, as numpy's);
* ``tile``/``kron``: the operands reshaped so each axis is split in two (``(1, n)``
  and ``(r, 1)``), broadcast (``tile``) or multiplied (``kron``, numpy's dtype of the
  product), and the pairs merged;
* ``cross``: numpy's component formulas ``a1*b2 - a2*b1``... on the vector axis, the
  components stacked back on that axis (3-vectors);
* ``diagonal``: the two axes moved last and read with index arrays ``(i, i + k)``;
  ``diag`` of a 1-D array is ``where(col - row == k, v, 0)``; ``trace`` sums the
  diagonal with ``np.sum``'s dtype rules.
"""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.indexing import load_index
from pyasc.frontend.npfuncs.common import (
    array_arg,
    axes_arg,
    normalize_axis,
    shape_arg,
    static_int,
)
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Dim, Tensor


def _along(rank: int, ax: int, item: object) -> tuple:
    return (slice(None),) * ax + (item,) + (slice(None),) * (rank - ax - 1)


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


@register("flip")
def flip(lw, m, axis=None):
    """`m` reversed along `axis` (an int, a tuple, or `None`: every axis)"""
    x = array_arg(lw, m)
    rank = x.type.rank
    out: object = x
    for ax in axes_arg(lw, axis, rank):
        out = load_index(lw, out, _along(rank, ax, slice(None, None, -1)))
    return out


@register("fliplr")
def fliplr(lw, m):
    """`m` reversed along axis 1 (at least 2-D)"""
    if array_arg(lw, m).type.rank < 2:
        raise ShapeInferenceError("Input must be >= 2-d.")
    return flip(lw, m, 1)


@register("flipud")
def flipud(lw, m):
    """`m` reversed along axis 0 (at least 1-D)"""
    if array_arg(lw, m).type.rank < 1:
        raise ShapeInferenceError("Input must be >= 1-d.")
    return flip(lw, m, 0)


def _lead_ones(lw, x: Tensor, rank: int) -> Tensor:
    """``x`` with size-1 axes in front up to ``rank`` axes."""
    dims = lw.em.dims(x)
    return lw.em.reshape(x, (1,) * (rank - len(dims)) + tuple(dims))


def _interleave(lw, x: Tensor, outer: bool) -> Tensor:
    """``x`` with a size-1 axis before (``outer``) or after each axis."""
    dims: list[Dim] = []
    for d in lw.em.dims(x):
        dims += [1, d] if outer else [d, 1]
    return lw.em.reshape(x, dims)


def _merge_pairs(lw, x: Tensor) -> Tensor:
    dims = lw.em.dims(x)
    return lw.em.reshape(x, [indexmath.mul(lw.em, dims[i], dims[i + 1])
                             for i in range(0, len(dims), 2)])


@register("tile")
def tile(lw, A, reps):
    """`A` repeated `reps` times per axis (numpy's padding of `A.ndim` and `reps`)"""
    x = array_arg(lw, A)
    r = shape_arg(lw, reps)
    rank = max(x.type.rank, len(r))
    r = (1,) * (rank - len(r)) + r
    x = _interleave(lw, _lead_ones(lw, x, rank), outer=True)
    dims = list(lw.em.dims(x))
    dims[0::2] = r
    return _merge_pairs(lw, lw.em.broadcast(x, dims))


@register("kron")
def kron(lw, a, b):
    """Kronecker product: blocks `a[i, j] * b` (numpy's dtype of the product)"""
    x, y = array_arg(lw, a), array_arg(lw, b)
    rank = max(x.type.rank, y.type.rank)
    x = _interleave(lw, _lead_ones(lw, x, rank), outer=False)
    y = _interleave(lw, _lead_ones(lw, y, rank), outer=True)
    return _merge_pairs(lw, array_arg(lw, _u(lw, "multiply", x, y)))


@register("cross")
def cross(lw, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """cross product of 3-vectors along `axis` (or `axisa`/`axisb`/`axisc`), broadcast"""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = array_arg(lw, a), array_arg(lw, b)
    xs, ys = (_components(lw, v, ax) for v, ax in ((x, axisa), (y, axisb)))
    (a0, a1, a2), (b0, b1, b2) = xs, ys
    parts = [_u(lw, "subtract", _u(lw, "multiply", p, q), _u(lw, "multiply", r, s))
             for p, q, r, s in ((a1, b2, a2, b1), (a2, b0, a0, b2), (a0, b1, a1, b0))]
    parts = [array_arg(lw, p) for p in parts]
    rank = parts[0].type.rank + 1
    return call_numpy(lw, "stack", [parts],
                      {"axis": normalize_axis(static_int(lw, axisc, "axisc"), rank)})


def _components(lw, x: Tensor, axis: object) -> list[object]:
    if x.type.rank == 0:
        raise ShapeInferenceError("np.cross needs arrays of vectors, not scalars")
    ax = normalize_axis(static_int(lw, axis, "axis"), x.type.rank)
    n = lw.em.dims(x)[ax]
    if n != 3:
        raise UnsupportedNumpyError(f"np.cross of vectors of {n} components",
                                    hint="pyasc computes the cross product of 3-vectors "
                                         "(numpy 2 deprecates 2-vectors)")
    return [load_index(lw, x, _along(x.type.rank, ax, k)) for k in range(3)]


def _moved_last(lw, x: Tensor, ax1: int, ax2: int) -> Tensor:
    rest = [a for a in range(x.type.rank) if a not in (ax1, ax2)]
    return array_arg(lw, call_numpy(lw, "transpose", [x, (*rest, ax1, ax2)], {}))


@register("diagonal", "ndarray.diagonal")
def diagonal(lw, a, offset=0, axis1=0, axis2=1):
    """the diagonal `offset` of the plane (`axis1`, `axis2`), as the last axis"""
    x = array_arg(lw, a)
    rank = x.type.rank
    if rank < 2:
        raise ShapeInferenceError("diag requires an array of at least two dimensions")
    ax1, ax2 = (normalize_axis(static_int(lw, v, "axis"), rank) for v in (axis1, axis2))
    if ax1 == ax2:
        raise ShapeInferenceError("axis1 and axis2 cannot be the same")
    k = static_int(lw, offset, "offset")
    x = _moved_last(lw, x, ax1, ax2)
    rows, cols = lw.em.dims(x)[-2:]
    em = lw.em
    length = indexmath.maximum(em, indexmath.minimum(
        em, indexmath.add(em, rows, min(k, 0)), indexmath.sub(em, cols, max(k, 0))), 0)
    i = array_arg(lw, call_numpy(lw, "arange", [length], {}))
    items = (slice(None),) * (rank - 2) + (_u(lw, "add", i, max(-k, 0)),
                                           _u(lw, "add", i, max(k, 0)))
    return load_index(lw, x, items)


@register("diag")
def diag(lw, v, k=0):
    """1-D `v`: a square array with `v` on diagonal `k`; 2-D: its diagonal `k`"""
    x = array_arg(lw, v)
    if x.type.rank == 2:
        return diagonal(lw, x, k)
    if x.type.rank != 1:
        raise ShapeInferenceError("Input must be 1- or 2-d.")
    k = static_int(lw, k, "k")
    em = lw.em
    n = indexmath.add(em, em.dims(x)[0], abs(k))
    zeros = em.fill(em.scalar(0, x.type.element), (abs(k),))
    padded = array_arg(lw, call_numpy(lw, "concatenate", [[x, zeros]], {}))
    values = em.reshape(padded, (n, 1) if k >= 0 else (1, n))
    iota = array_arg(lw, call_numpy(lw, "arange", [n], {}))
    offset = _u(lw, "subtract", em.reshape(iota, (1, n)), em.reshape(iota, (n, 1)))
    mask = _u(lw, "equal", offset, k)
    return call_numpy(lw, "where", [mask, em.broadcast(values, (n, n)),
                                    em.scalar(0, x.type.element)], {})


@register("trace", "ndarray.trace")
def trace(lw, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """sum of the diagonal `offset` (`np.sum`'s dtype rules)"""
    d = diagonal(lw, a, offset, axis1, axis2)
    return call_numpy(lw, "sum", [d], {"axis": -1, "dtype": dtype, "out": out})
