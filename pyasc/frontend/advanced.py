"""Advanced indexing beyond one integer array: several index arrays, integers and
boolean masks mixed with them, and assignment through any of these.

The index tuple is split into *advanced* items — integer arrays, integers (when an
array is present they are 0-d index arrays in numpy), and boolean arrays, which stand
for their ``nonzero()`` coordinates (one ``int64`` array per mask axis, made with
``tensor.compress`` of ``arange`` coordinates) — and slices.  The slices are applied
first (a view of a buffer, a slice of a value), the advanced axes are transposed to the
front (again a view), and ``tensor.gather_nd`` reads / ``mem.scatter`` writes there.
Index arrays broadcast together (numpy's rule; static conflicts are E50002).  As in
numpy, the broadcast index dims replace the advanced axes in place when those are
adjacent in the index, and come first otherwise.  Assignment writes position by
position in C order, so the last of repeated indices wins.

Not supported (E50011): ``None`` (``np.newaxis``) in an index that has an array.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import broadcast_dims
from pyasc.frontend.numpy_registry import call_numpy
from pyasc.frontend.slicing import is_index_item, normalize_index, transpose_view
from pyasc.frontend.values import Buffer, Dim, Scalar, Tensor, static_dims
from pyasc.ir.ops import func, scatter, tensor
from pyasc.ir.types import DYN, TensorType, i1, i64, index

BasicLoad = Callable[..., object]
"""``load_basic(lw, base, items)``: ``base`` indexed by basic items (ints, slices)."""


def is_array_index(v: object) -> bool:
    """An index item that is an array (or a sequence that becomes one)."""
    return isinstance(v, Tensor | Buffer | list | np.ndarray)


@dataclass
class _Plan:
    """Advanced items resolved against an array of rank ``len(basic)``."""

    basic: list[object] = field(default_factory=list)  # one slice per source axis
    axes: list[int] = field(default_factory=list)  # source axes with advanced items
    indices: list[Scalar | Tensor] = field(default_factory=list)

    @property
    def adjacent_at(self) -> int:
        """Where numpy puts the index dims among the other axes."""
        a = self.axes
        return a[0] if a == list(range(a[0], a[0] + len(a))) else 0


def _items(lw, items: tuple, rank: int) -> list[object]:
    """Operands for array items and the ``...`` expanded (masks count their rank)."""
    if any(it is None for it in items):
        raise UnsupportedNumpyError("an index array combined with None (np.newaxis)",
                                    hint="add the axis afterwards with np.expand_dims")
    values = [lw.em.operand(it) if is_array_index(it) else it for it in items]
    if sum(v is Ellipsis for v in values) > 1:
        raise UnsupportedNumpyError("an index can only have a single ellipsis ('...')")
    used = sum(v.type.rank if _is_mask(v) else 1 for v in values if v is not Ellipsis)
    if used > rank:
        raise ShapeInferenceError(f"too many indices for array: array is {rank}-dimensional,"
                                  f" but {used} were indexed")
    fill = [slice(None)] * (rank - used)
    if Ellipsis not in values:
        return [*values, *fill]
    k = values.index(Ellipsis)
    return [*values[:k], *fill, *values[k + 1:]]


def _is_mask(v: object) -> bool:
    return isinstance(v, Tensor) and v.type.element == i1


def plan(lw, base: Tensor | Buffer, items: tuple, name: str | None = None) -> _Plan:
    """Split ``items`` into slices and advanced index operands over ``base`` (called
    ``name`` in bounds messages)."""
    dims = lw.em.dims(base)
    p = _Plan()
    for v in _items(lw, items, base.type.rank):
        axis = len(p.basic)
        if isinstance(v, slice):
            p.basic.append(v)
            continue
        if _is_mask(v):
            m = v.type.rank
            p.indices += nonzero(lw, v, dims[axis:axis + m])
            p.axes += range(axis, axis + m)
            p.basic += [slice(None)] * m
            continue
        if isinstance(v, Tensor):
            if not v.type.element.is_int:
                raise TypeMismatchError("arrays used as indices must be of integer (or "
                                        "boolean) type")
            p.indices.append(v)
        elif is_index_item(v):
            i = normalize_index(lw, v, dims[axis], axis, name)
            p.indices.append(i if isinstance(i, Scalar) else lw.em.const(i, index))
        else:
            raise TypeMismatchError("only integers, slices (':'), ellipsis ('...') and "
                                    "integer or boolean arrays are valid indices, got "
                                    f"{type(v).__name__}")
        p.axes.append(axis)
        p.basic.append(slice(None))
    return p


def nonzero(lw, mask: Tensor, sizes: tuple[Dim, ...]) -> list[Tensor]:
    """numpy's ``mask.nonzero()``: one ``int64`` coordinate array per mask axis, after
    checking the mask's shape against the indexed ``sizes``."""
    em = lw.em
    md = em.dims(mask)
    for a, (m, s) in enumerate(zip(md, sizes, strict=True)):
        if isinstance(m, int) and isinstance(s, int):
            if m != s:
                raise ShapeInferenceError(f"boolean index did not match indexed array along"
                                          f" axis {a}; size of axis is {s} but size of "
                                          f"corresponding boolean axis is {m}")
            continue
        same = indexmath.cmp(em, "eq", m, s)
        em.op(func.AssertOp([same], [], {"message": "boolean index did not match indexed "
                                         "array", "kind": "bounds"}))
    out = []
    for grid in coordinates(lw, md):
        grid = em.broadcast(grid, md)
        t = TensorType((DYN,), i64)
        out.append(Tensor(em.result(tensor.CompressOp([grid.value, mask.value], [t]))))
    return out


def coordinates(lw, dims: tuple[Dim, ...]) -> list[Tensor]:
    """Per axis ``a``, ``arange(dims[a])`` shaped to broadcast along that axis only."""
    rank = len(dims)
    return [lw.em.reshape(call_numpy(lw, "arange", [d], {}), [1] * a + [d] + [1] * (rank - a - 1))
            for a, d in enumerate(dims)]


def _front(lw, base: Tensor | Buffer, p: _Plan, load_basic: BasicLoad
           ) -> Tensor | Buffer:
    """``base`` with the slices applied and the advanced axes moved to the front."""
    view = load_basic(lw, base, tuple(p.basic))
    rest = [a for a in range(base.type.rank) if a not in p.axes]
    return transpose_view(lw, view, tuple(p.axes + rest))  # type: ignore[arg-type]


def _index_dims(lw, indices: list[Scalar | Tensor]) -> tuple[Dim, ...]:
    em = lw.em
    return broadcast_dims(em, [em.dims(i) if isinstance(i, Tensor) else () for i in indices])


def gather_nd(lw, src: Tensor, indices: list[Scalar | Tensor], name: str | None = None,
              axes: tuple[int, ...] | None = None) -> Scalar | Tensor:
    """``tensor.gather_nd``: ``src[indices...]`` over its leading axes (``name`` and the
    user's ``axes`` of the indices label bounds messages)."""
    em = lw.em
    dims = _index_dims(lw, indices) + tuple(em.dims(src))[len(indices):]
    shape = static_dims(dims)
    t = TensorType(shape, src.type.element) if shape else src.type.element
    labels = gather_labels({}, name, axes if axes is not None else tuple(range(len(indices))))
    v = em.result(scatter.GatherNdOp([src.value, *(i.value for i in indices)], [t], labels))
    return Tensor(v, dims) if shape else Scalar(v)


def _to_numpy_order(nb: int, rest: int, at: int) -> tuple[int, ...]:
    """Permutation from (index dims, other axes) to numpy's result order."""
    return (*range(nb, nb + at), *range(nb), *range(nb + at, nb + rest))


def load_advanced(lw, base: Tensor | Buffer, items: tuple, name: str | None,
                  load_basic: BasicLoad) -> Scalar | Tensor:
    """``base[items]`` with several (or mixed) advanced items; ``load_basic`` applies
    the basic items (``indexing.load_index``, passed in: indexing sits above)."""
    p = plan(lw, base, items, name)
    src = lw.em.value(_front(lw, base, p, load_basic))
    out = gather_nd(lw, src, p.indices, name, tuple(p.axes))  # type: ignore[arg-type]
    if isinstance(out, Scalar) or not p.adjacent_at:
        return out
    nb = len(_index_dims(lw, p.indices))
    rest = base.type.rank - len(p.axes)
    return transpose_view(lw, out, _to_numpy_order(nb, rest, p.adjacent_at))  # type: ignore


def store_advanced(lw, buf: Buffer, items: tuple, value: object, name: str | None,
                   load_basic: BasicLoad) -> None:
    """``buf[items] = value`` through index arrays or masks (last write wins)."""
    em = lw.em
    p = plan(lw, buf, items, name)
    dest = _front(lw, buf, p, load_basic)
    nb = _index_dims(lw, p.indices)
    rest = tuple(em.dims(dest))[len(p.axes):]
    order = _to_numpy_order(len(nb), len(rest), p.adjacent_at)
    numpy_dims = tuple((*nb, *rest)[a] for a in order)
    elem = buf.type.element
    v = em.operand(value)
    if isinstance(v, Tensor):
        v = squeeze_leading(lw, v, len(numpy_dims))
        _check_value_shape(em, em.dims(v), numpy_dims)
        v = em.cast(v, elem)
        if order != tuple(range(len(order))) and v.type.rank:
            inverse = tuple(order.index(a) for a in range(len(order)))
            v = transpose_view(lw, em.broadcast(v, numpy_dims), inverse)
    else:
        v = em.element(v, elem)
    em.op(scatter.ScatterOp([v.value, dest.value, *(i.value for i in p.indices)], [],
                            gather_labels({}, name, tuple(p.axes))))
    em.wrote()


def _check_value_shape(em, dims: tuple[Dim, ...], target: tuple[Dim, ...]) -> None:
    """The assigned value must broadcast to the indexing result (E50002)."""
    message = (f"shape mismatch: value array of shape {static_dims(tuple(dims))} could not "
               f"be broadcast to indexing result of shape {static_dims(target)}")
    try:
        out = broadcast_dims(em, [dims, target])
    except ShapeInferenceError:
        raise ShapeInferenceError(message) from None
    if len(out) != len(target) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                      for a, b in zip(out, target, strict=True)):
        raise ShapeInferenceError(message)


def gather_labels(attrs: dict, name: str | None, axes: tuple[int, ...]) -> dict:
    """``attrs`` plus the labels bounds messages use: the array's name and the user's
    axes of the index operands."""
    out = dict(attrs, axes=axes)
    if name:
        out["array"] = name
    return out


def squeeze_leading(lw, v: Tensor, rank: int) -> Tensor:
    """``v`` without leading size-1 dims beyond ``rank`` (numpy's setitem drops them)."""
    dims = list(lw.em.dims(v))
    while len(dims) > rank and dims[0] == 1:
        dims.pop(0)
    return lw.em.reshape(v, dims) if len(dims) != v.type.rank else v
