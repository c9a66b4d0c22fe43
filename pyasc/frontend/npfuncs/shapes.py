"""Array attributes and shape manipulation.

Attributes: ``shape`` (a tuple of ints, run-time ints for dynamic dims), ``ndim``,
``dtype``, ``size``, ``T``.  Functions: ``reshape`` (one ``-1`` inferred), ``transpose``
/ ``swapaxes``, ``expand_dims``, ``squeeze``, ``ravel``/``flatten``, ``concatenate``,
``stack``, ``broadcast_to``, ``take``.  On a buffer, ``transpose``/``.T`` and the
``reshape`` of a contiguous buffer are views (``mem.transpose``/``mem.reshape``) as in
numpy; other results are values.
"""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import broadcast_dims
from pyasc.frontend.iteration import Product
from pyasc.frontend.npfuncs.common import (
    array_arg,
    axes_arg,
    new_object,
    normalize_axis,
    shape_arg,
    static_int,
)
from pyasc.frontend.numpy_registry import register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.pybuiltins import BUILTIN_CALLS
from pyasc.frontend.slicing import transpose_view
from pyasc.frontend.values import Buffer, Dim, Scalar, Tensor, static_dims
from pyasc.ir.ops import func, mem, tensor
from pyasc.ir.types import MemRefType, TensorType


def _array(lw, x: object) -> Tensor | Buffer:
    return x if isinstance(x, Tensor | Buffer) else array_arg(lw, x)


@register("ndarray.shape", "shape", kind="attribute")
def shape(lw, x):
    """tuple of dims (run-time ints for dynamic dims)"""
    if isinstance(x, Scalar):
        return ()
    return tuple(lw.em.dims(_array(lw, x)))


@register("ndarray.ndim", "ndim", kind="attribute")
def ndim(lw, x):
    """number of dimensions"""
    return 0 if isinstance(x, Scalar) else _array(lw, x).type.rank


@register("ndarray.dtype", kind="attribute")
def dtype(lw, x):
    """the numpy dtype"""
    t = x.type if isinstance(x, Scalar) else _array(lw, x).type.element
    return t.to_numpy()


@register("ndarray.size", "size", kind="attribute")
def size(lw, x):
    """number of elements"""
    if isinstance(x, Scalar):
        return 1
    n: Dim = 1
    for d in lw.em.dims(_array(lw, x)):
        n = indexmath.mul(lw.em, n, d)
    return n


@register("ndarray.T", kind="attribute")
def transpose_attr(lw, x):
    """reversed axes (a view of a buffer)"""
    if isinstance(x, Scalar):
        return x
    return transpose_view(lw, _array(lw, x), tuple(reversed(range(x.type.rank))))


@register("transpose")
def transpose(lw, a, axes=None):
    """permute axes (reversed by default)"""
    x = _array(lw, a)
    rank = x.type.rank
    if axes is None:
        return transpose_view(lw, x, tuple(reversed(range(rank))))
    perm = tuple(normalize_axis(static_int(lw, p, "axes"), rank)
                 for p in lw.static(axes, "axes"))
    if sorted(perm) != list(range(rank)):
        raise ShapeInferenceError("axes don't match array")
    return transpose_view(lw, x, perm)


@register("ndarray.transpose")
def transpose_method(lw, x, *axes):
    """`x.transpose(*axes)` or `x.transpose(axes)`"""
    if len(axes) == 1 and isinstance(axes[0], tuple | list):
        axes = tuple(axes[0])
    return transpose(lw, x, axes or None)


@register("swapaxes", "ndarray.swapaxes")
def swapaxes(lw, a, axis1, axis2):
    """exchange two axes"""
    x = _array(lw, a)
    rank = x.type.rank
    i, j = (normalize_axis(static_int(lw, v, "axis"), rank) for v in (axis1, axis2))
    perm = list(range(rank))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose_view(lw, x, tuple(perm))


def _new_dims(lw, x: Tensor | Buffer, newshape: object) -> tuple[Dim, ...]:
    items = list(newshape) if isinstance(newshape, tuple | list) else [newshape]
    unknown = [i for i, d in enumerate(items) if isinstance(d, int) and d == -1]
    if len(unknown) > 1:
        raise ShapeInferenceError("can only specify one unknown dimension")
    known = [d for i, d in enumerate(items) if i not in unknown]
    dims = list(shape_arg(lw, known))
    total: Dim = 1
    for d in lw.em.dims(x):
        total = indexmath.mul(lw.em, total, d)
    part: Dim = 1
    for d in dims:
        part = indexmath.mul(lw.em, part, d)
    if unknown:
        if isinstance(total, int) and isinstance(part, int) and (part == 0 or total % part):
            raise ShapeInferenceError(f"cannot reshape array of size {total} into shape "
                                      f"{tuple(items)}")
        dims.insert(unknown[0], indexmath.floordiv(lw.em, total, part))
    elif isinstance(total, int) and isinstance(part, int) and total != part:
        raise ShapeInferenceError(f"cannot reshape array of size {total} into shape "
                                  f"{tuple(items)}")
    return tuple(dims)


def _check_size(lw, x: Tensor | Buffer, dims: tuple[Dim, ...]) -> None:
    """The run-time check that a view reshape keeps the size (numpy's ValueError; a
    static mismatch was refused already).  Tensor reshapes are checked when they are
    lowered; a buffer view is only a descriptor, so without this check a wrong size
    would read past the buffer."""
    total: Dim = 1
    for d in lw.em.dims(x):
        total = indexmath.mul(lw.em, total, d)
    part: Dim = 1
    for d in dims:
        part = indexmath.mul(lw.em, part, d)
    if isinstance(total, int) and isinstance(part, int):
        return
    values = [v for v in (total, *dims) if not isinstance(v, int)]
    names = iter(range(len(values)))
    text = [str(v) if isinstance(v, int) else f"{{{next(names)}}}" for v in (total, *dims)]
    shape = "(" + ",".join(text[1:]) + ("," if len(dims) == 1 else "") + ")"
    ok = indexmath.cmp(lw.em, "eq", total, part)
    lw.em.op(func.AssertOp([ok, *(v.value for v in values)], [], {
        "message": f"cannot reshape array of size {text[0]} into shape {shape}",
        "kind": "shape"}))


def _reshape(lw, x: Tensor | Buffer, newshape: object) -> Tensor | Buffer:
    dims = _new_dims(lw, x, newshape)
    if isinstance(x, Buffer) and x.type.is_contiguous:
        _check_size(lw, x, dims)
        t = MemRefType(static_dims(dims), x.type.element)
        op = mem.ReshapeOp([x.value, *lw.em.dim_values(dims)], [t])
        return Buffer(lw.em.result(op), dims)
    return lw.em.reshape(lw.em.value(x), dims)  # type: ignore[arg-type]


@register("reshape")
def reshape(lw, a, /, shape):
    """new shape with the same size; one dim may be -1 (a view of a contiguous buffer)"""
    return _reshape(lw, _array(lw, a), lw_tuple(shape))


def lw_tuple(v: object) -> object:
    """A list shape argument as a tuple."""
    return tuple(v) if isinstance(v, list) else v


@register("ndarray.reshape")
def reshape_method(lw, x, *shape):
    """`x.reshape(2, 3)` or `x.reshape((2, 3))`"""
    if len(shape) == 1:
        return reshape(lw, x, shape[0])
    return reshape(lw, x, tuple(shape))


@register("ravel", "ndarray.ravel")
def ravel(lw, a):
    """flattened array (a view of a contiguous buffer)"""
    return _reshape(lw, _array(lw, a), -1)


@register("ndarray.flatten")
def flatten(lw, x):
    """flattened copy"""
    return new_object(lw.em.reshape(array_arg(lw, x), _new_dims(lw, _array(lw, x), -1)), x)


@register("expand_dims")
def expand_dims(lw, a, axis):
    """insert size-1 axes at `axis` (int or tuple)"""
    x = array_arg(lw, a)
    items = lw.static(axis, "axis")
    items = items if isinstance(items, tuple | list) else (items,)
    rank = x.type.rank + len(items)
    axes = sorted(normalize_axis(static_int(lw, v, "axis"), rank) for v in items)
    dims = list(lw.em.dims(x))
    for ax in axes:
        dims.insert(ax, 1)
    return lw.em.reshape(x, dims)


@register("squeeze", "ndarray.squeeze")
def squeeze(lw, a, axis=None):
    """remove size-1 axes (all static ones, or those in `axis`)"""
    x = array_arg(lw, a)
    dims = lw.em.dims(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(dims) if d == 1)
    else:
        axes = axes_arg(lw, axis, x.type.rank)
        if any(dims[i] != 1 for i in axes):
            raise ShapeInferenceError("cannot select an axis to squeeze out which has size "
                                      "not equal to one")
    return lw.em.reshape(x, [d for i, d in enumerate(dims) if i not in axes])


@register("broadcast_to")
def broadcast_to(lw, array, shape):
    """broadcast to `shape` (a value)"""
    x = lw.em.value(lw.em.operand(array))
    dims = shape_arg(lw, shape)
    src = lw.em.dims(x) if isinstance(x, Tensor) else ()
    out = broadcast_dims(lw.em, [src, dims])
    if len(out) != len(dims) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                    for a, b in zip(out, dims, strict=True)):
        raise ShapeInferenceError(f"cannot broadcast shape {static_dims(tuple(src))} to "
                                  f"{static_dims(dims)}")
    return lw.em.broadcast(x, dims)


def _common(lw, arrays: object, what: str) -> list[Tensor]:
    if not isinstance(arrays, tuple | list) or not arrays:
        raise UnsupportedNumpyError(f"np.{what} needs a non-empty tuple or list of arrays")
    xs = [array_arg(lw, a) for a in arrays]
    t, _ = result_type(xs)
    return [lw.em.cast(x, t) for x in xs]  # type: ignore[misc]


@register("concatenate")
def concatenate(lw, arrays, /, axis=0):
    """join arrays along an existing axis (`axis=None` flattens first)"""
    xs = _common(lw, arrays, "concatenate")
    if axis is None:
        xs = [lw.em.reshape(x, _new_dims(lw, x, -1)) for x in xs]
        axis = 0
    rank = xs[0].type.rank
    if rank == 0 or any(x.type.rank != rank for x in xs):
        raise ShapeInferenceError("all the input arrays must have the same number of "
                                  "dimensions (and at least one)")
    ax = normalize_axis(static_int(lw, axis, "axis"), rank)
    all_dims = [lw.em.dims(x) for x in xs]
    for k in range(rank):
        static = {d[k] for d in all_dims if isinstance(d[k], int)}
        if k != ax and len(static) > 1:
            raise ShapeInferenceError(f"all the input array dimensions except for the "
                                      f"concatenation axis must match exactly, but along "
                                      f"dimension {k} the sizes are {sorted(static)}")
    total: Dim = 0
    for d in all_dims:
        total = indexmath.add(lw.em, total, d[ax])
    dims = tuple(total if k == ax else next((d[k] for d in all_dims if isinstance(d[k], int)),
                                            all_dims[0][k]) for k in range(rank))
    t = TensorType(static_dims(dims), xs[0].type.element)
    op = tensor.ConcatOp([x.value for x in xs], [t], {"axis": ax})
    return Tensor(lw.em.result(op), dims)


@register("stack")
def stack(lw, arrays, axis=0):
    """join arrays along a new axis"""
    xs = _common(lw, arrays, "stack")
    rank = xs[0].type.rank + 1
    ax = normalize_axis(static_int(lw, axis, "axis"), rank)
    expanded = [expand_dims(lw, x, ax) for x in xs]
    return concatenate(lw, expanded, axis=ax)


@register("take", "ndarray.take")
def take(lw, a, indices, axis=None):
    """elements at integer `indices` along `axis` (flattened when None)"""
    from pyasc.frontend.indexing import array_name, gather_labels

    x = array_arg(lw, a)
    name = array_name(a, None) or array_name(x, None)
    if axis is None:
        x, ax = lw.em.reshape(x, _new_dims(lw, x, -1)), 0
    else:
        ax = normalize_axis(static_int(lw, axis, "axis"), x.type.rank)
    idx = lw.em.operand(indices)
    if isinstance(idx, Tensor):
        if not idx.type.element.is_int:
            raise TypeMismatchError("indices must be integers")
        dims = tuple(lw.em.dims(x))
        out = dims[:ax] + tuple(lw.em.dims(idx)) + dims[ax + 1:]
        t = TensorType(static_dims(out), x.type.element)
        op = tensor.GatherOp([x.value, idx.value], [t],
                             gather_labels({"axis": ax}, name, (ax,)))
        return Tensor(lw.em.result(op), out)
    from pyasc.frontend.indexing import load_index

    items = (slice(None),) * ax + (idx,)
    return load_index(lw, x, items, name)



@register("ndindex")
def ndindex(lw, *shape):
    """index tuples of `shape`, only as a `for` loop's iterable: a loop nest"""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    if not shape:
        raise UnsupportedNumpyError("np.ndindex() needs at least one dimension")
    return Product(tuple(BUILTIN_CALLS[range](lw, d) for d in shape))
