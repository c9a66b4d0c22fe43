"""Basic indexing arithmetic: integers, slices, ``...`` and ``None`` against a shape.

:func:`resolve_basic` turns an index tuple into per-axis ``(offset, size, step)`` with
Python's semantics (negative indices count from the end; slice bounds are clamped;
negative steps walk backwards), computed with :mod:`indexmath` so that everything
known at compile time folds and run-time bounds only cost IR where facts do not decide.
A compile-time integer index out of bounds of a static dimension is reported at compile
time (``IndexOutOfBoundsError``, an ``IndexError``; numpy would raise when the line
runs).  Unless ``boundscheck=False``, run-time indices get a ``func.assert`` of kind
``bounds`` on the index as written (``-size <= i < size``, the parts the index's known
bounds leave open), reporting the index and the size; the ``hoist-checks`` pass moves
the checks of affine indices out of loops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.errors import (
    IndexOutOfBoundsError,
    ShapeInferenceError,
    TypeMismatchError,
    UnsupportedNumpyError,
)
from pyasc.frontend import indexmath as im
from pyasc.frontend.values import Buffer, Dim, Scalar, Tensor, static_dims
from pyasc.ir.ops import arith, func, mem, tensor
from pyasc.ir.ops.func import bounds_message, format_message
from pyasc.ir.types import DYN, MemRefType, TensorType, contiguous_strides, index


@dataclass
class Access:
    """A resolved basic index over an array of rank ``len(offsets)``."""

    offsets: list[Dim] = field(default_factory=list)
    sizes: list[Dim] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    full: list[bool] = field(default_factory=list)
    drop: list[int] = field(default_factory=list)
    newaxes: list[int] = field(default_factory=list)

    @property
    def is_element(self) -> bool:
        return len(self.drop) == len(self.offsets) and not self.newaxes

    @property
    def is_identity(self) -> bool:
        return all(self.full) and not self.drop

    def result_dims(self) -> list[Dim]:
        return [s for a, s in enumerate(self.sizes) if a not in self.drop]


def is_index_item(v: object) -> bool:
    """An integer usable as an index (compile-time or run-time)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    if hasattr(v, "dtype") and not isinstance(v, Scalar) and not hasattr(v, "shape"):
        return v.dtype.kind in "iu"  # type: ignore[union-attr]
    return isinstance(v, Scalar) and v.type.is_int


def expand(items: tuple, rank: int) -> list[object]:
    """``items`` with ``...`` (or the missing trailing axes) spelled as full slices."""
    if sum(it is Ellipsis for it in items) > 1:
        raise UnsupportedNumpyError("an index can only have a single ellipsis ('...')")
    n_idx = sum(it is not None and it is not Ellipsis for it in items)
    if n_idx > rank:
        raise ShapeInferenceError(f"too many indices for array: array is {rank}-dimensional, "
                                  f"but {n_idx} were indexed")
    fill = [slice(None)] * (rank - n_idx)
    if Ellipsis not in items:
        return [*items, *fill]
    k = items.index(Ellipsis)
    return [*items[:k], *fill, *items[k + 1:]]


def resolve_basic(lw, dims: tuple[Dim, ...], items: tuple, name: str | None = None) -> Access:
    """Per-axis offsets/sizes/steps for ``items`` (ints, slices, ``...``, ``None``) over
    the array called ``name`` (for bounds messages)."""
    acc, axis = Access(), 0
    for it in expand(items, len(dims)):
        if it is None:
            acc.newaxes.append(len(acc.offsets) - len(acc.drop) + len(acc.newaxes))
            continue
        d = dims[axis]
        if isinstance(it, slice):
            o, s, st, full = slice_params(lw, it, d)
        elif is_index_item(it):
            o, s, st, full = normalize_index(lw, it, d, axis, name), 1, 1, False
            acc.drop.append(axis)
        else:
            raise TypeMismatchError("only integers, slices (':'), ellipsis ('...'), "
                                    "np.newaxis ('None') and integer or boolean arrays are "
                                    f"valid indices, got {type(it).__name__}")
        acc.offsets.append(o)
        acc.sizes.append(s)
        acc.steps.append(st)
        acc.full.append(full)
        axis += 1
    return acc


def _as_index(lw, v: object) -> int | Scalar:
    if isinstance(v, int):
        return v
    if isinstance(v, Scalar):
        return v if v.type == index else lw.em.cast_scalar(v, index)
    return int(v)  # type: ignore[call-overload]  - numpy integer scalar


def normalize_index(lw, i: object, d: Dim, axis: int, name: str | None = None) -> Dim:
    """A non-negative in-range index for integer index ``i`` on a dim of size ``d`` of
    the array called ``name`` (for messages); checked unless ``boundscheck=False``."""
    em = lw.em
    i = _as_index(lw, i)
    if isinstance(i, int) and isinstance(d, int):
        if not -d <= i < d:
            raise IndexOutOfBoundsError(format_message(bounds_message(axis, name), [i, d]))
        return i + d if i < 0 else i
    if lw.unit.options.get("boundscheck", True):
        _check_bounds(lw, i, d, axis, name)
    if isinstance(i, int):
        return i if i >= 0 else im.add(em, d, i)
    if i.lo is not None and i.lo >= 0:
        return i
    if i.hi is not None and i.hi < 0:
        return im.add(em, d, i)
    neg = im.cmp(em, "lt", i, 0)
    r = im.select(em, neg, im.add(em, d, i), i)
    r.lo = 0 if i.lo is not None and isinstance(d, int) and i.lo >= -d else None
    return r


def _check_bounds(lw, i: int | Scalar, d: Dim, axis: int, name: str | None) -> None:
    """``-d <= i < d`` at run time (the parts the bounds of ``i`` do not decide), naming
    the index and the size in the message (numpy's ``IndexError`` text)."""
    em = lw.em
    lo, hi = im.bound(i, "lo"), im.bound(i, "hi")
    conds = []
    if not (lo is not None and (lo >= 0 or isinstance(d, int) and lo >= -d)):
        conds.append(im.cmp(em, "ge", i, im.neg(em, d)))
    if not (isinstance(d, int) and hi is not None and hi < d):
        conds.append(im.cmp(em, "lt", i, d))
    if not conds:
        return
    cond = conds[0] if len(conds) == 1 else em.result(arith.AndOp.new(*conds))
    values = index_values(em, [i, d])
    em.op(func.AssertOp([cond, *values], [], {"message": bounds_message(axis, name),
                                              "kind": "bounds"}))


def slice_params(lw, sl: slice, d: Dim) -> tuple[Dim, Dim, int, bool]:
    """``(offset, size, step, is_full)`` of a slice on a dim of size ``d``."""
    step = 1 if sl.step is None else lw.static(sl.step, "a slice step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise TypeMismatchError("slice indices must be integers or None")
    if step == 0:
        raise ShapeInferenceError("slice step cannot be zero")
    start = None if sl.start is None else _as_index(lw, sl.start)
    stop = None if sl.stop is None else _as_index(lw, sl.stop)
    full = sl.start is None and sl.stop is None and step == 1
    if isinstance(d, int) and all(x is None or isinstance(x, int) for x in (start, stop)):
        o, e, st = slice(start, stop, step).indices(d)
        n = len(range(o, e, st))
        return (o if n else 0), n, st, full or (o == 0 and e == d and st == 1)
    em = lw.em
    n = abs(step)
    if step > 0:
        o = 0 if start is None else _clamp(lw, start, d, 0, d)
        span = _fitted_span(em, start, stop, d)
        if span is not None:  # >= 0 already: no max(0, ...)
            return o, im.floordiv(em, im.add(em, span, n - 1), n), step, full
        e = d if stop is None else _clamp(lw, stop, d, 0, d)
        span = im.sub(em, e, o)
    else:
        last = im.add(em, d, -1)
        o = last if start is None else _clamp(lw, start, d, -1, last)
        e = -1 if stop is None else _clamp(lw, stop, d, -1, last)
        span = im.sub(em, o, e)
    size = im.maximum(em, 0, im.floordiv(em, im.add(em, span, n - 1), n))
    # A backward slice clamped to start at -1 is empty; keep its offset in range.
    return (o if step > 0 else im.maximum(em, o, 0)), size, step, full


# The largest constant a slice bound may hold for its length to be fitted (the fit
# evaluates ``2 * MAX_FIT_BOUND + 5`` extents); past it the general clamps are emitted.
MAX_FIT_BOUND = 2048


def _along(x: int | Scalar | None, d: Scalar) -> tuple[int, int] | None:
    """``(slope, const)`` with ``x == slope * d + const`` (``d`` itself is ``(1, 0)``,
    ``h - 2`` of ``h = x.shape[0]`` is ``(1, -2)``), ``(0, 0)`` for ``None``; else None."""
    if x is None or isinstance(x, int):
        return 0, x or 0
    base, off = x.affine
    return (1, off) if base is d.affine[0] and d.affine[1] == 0 else None


def _length_form(start: int | Scalar | None, stop: int | Scalar | None,
                 d: Dim) -> tuple[int, int | None] | int | None:
    """``(p, q)`` when the length of ``[start:stop]`` on a run-time extent ``d >= 0`` is
    ``min(max(d + p, 0), q)`` for every ``d`` (``q`` None: unbounded), ``0`` when it is
    always empty, else None.

    Bounds are constants or ``d + k`` (numpy wraps them at run time when negative).  The
    length is then a piecewise-linear function of ``d`` whose pieces meet where two of
    ``0``, ``d``, ``c``, ``d + k``, ``2d + k`` cross: at ``d <= 2M`` for constants of size
    at most ``M``.  Beyond ``2M + 2`` both the length and the fitted form are linear, so
    agreeing on every ``d`` in ``0..2M + 4`` (Python's own ``slice.indices``) proves them
    equal everywhere.  The form is canonical: ``p = 1 - (the first d with a non-empty
    slice)`` and ``q`` the length it levels off at determine it, so slices of equal
    length (``x[:-2]``, ``x[1:-1]``, ``x[2:]``, ``x[1:h - 1]``: ``max(d - 2, 0)``) get one
    expression, which ``stencil-windows`` needs to see shifted views as one domain.
    """
    if isinstance(d, int):
        return None
    forms = (_along(start, d), _along(stop, d))
    if forms[0] is None or forms[1] is None:
        return None
    big = max(abs(forms[0][1]), abs(forms[1][1]))
    if big > MAX_FIT_BOUND:
        return None
    top = 2 * big + 4
    fs, fe = forms
    lengths = [len(range(*slice(None if start is None else fs[0] * n + fs[1],
                                None if stop is None else fe[0] * n + fe[1]).indices(n)))
               for n in range(top + 1)]
    if not any(lengths):
        return 0
    p = 1 - next(n for n, v in enumerate(lengths) if v)
    q = lengths[top] if lengths[top] == lengths[top - 1] else None
    fitted = [max(n + p, 0) if q is None else min(max(n + p, 0), q) for n in range(top + 1)]
    bent = -p if q is None else q - p  # the form's last breakpoint
    return (p, q) if fitted == lengths and bent <= top - 2 else None


def _fitted_span(em, start: int | Scalar | None, stop: int | Scalar | None,
                 d: Dim) -> Dim | None:
    """The length of ``[start:stop]`` in its canonical form (:func:`_length_form`)."""
    form = _length_form(start, stop, d)
    if form is None or isinstance(form, int):
        return form
    p, q = form
    span = im.maximum(em, im.add(em, d, p), 0)
    return span if q is None else im.minimum(em, span, q)


def _clamp(lw, x: int | Scalar, d: Dim, lo: Dim, hi: Dim) -> Dim:
    em = lw.em
    if isinstance(x, int):
        x = x if x >= 0 else im.add(em, d, x)
    elif not (x.lo is not None and x.lo >= 0):
        neg = im.cmp(em, "lt", x, 0)
        x = im.select(em, neg, im.add(em, d, x), x)
    return im.maximum(em, im.minimum(em, x, hi), lo)


def index_values(em, values: list[Dim]) -> list:
    """Materialize index dims as IR values."""
    return [v.value if isinstance(v, Scalar) else em.const(v, index).value for v in values]


def view_type(src: MemRefType, acc: Access) -> MemRefType:
    """The memref type of a subview: contiguous when the view is a C-order block."""
    shape = tuple(s if isinstance(s, int) else DYN for s in acc.result_dims())
    if src.is_contiguous and _contiguous_view(acc):
        return MemRefType(shape, src.element)
    base = src.strides if src.strides is not None else contiguous_strides(src.shape)
    # Negative strides stay dynamic: -1 is the DYN marker, and backends read them anyway.
    strides = tuple(DYN if base[a] == DYN or acc.steps[a] < 0 else base[a] * acc.steps[a]
                    for a in range(len(acc.offsets)) if a not in acc.drop)
    if DYN not in shape and strides == contiguous_strides(shape):
        return MemRefType(shape, src.element)
    return MemRefType(shape, src.element, strides)


def _contiguous_view(acc: Access) -> bool:
    """A C-order block: leading ints, then one unit-step slice, then full axes."""
    axes = range(len(acc.offsets))
    first = next((a for a in axes if a not in acc.drop), None)
    if first is None:
        return True
    return acc.steps[first] == 1 and all(acc.full[a] for a in axes if a > first)


def transpose_view(lw, x: Tensor | Buffer, perm: tuple[int, ...]) -> Tensor | Buffer:
    """``x`` with its axes permuted: a strided view of a buffer, a transpose of a value."""
    if perm == tuple(range(len(perm))):
        return x
    dims = tuple(lw.em.dims(x)[p] for p in perm)
    shape = static_dims(dims)
    if isinstance(x, Buffer):
        base = x.type.strides or contiguous_strides(x.type.shape)
        t = MemRefType(shape, x.type.element, tuple(base[p] for p in perm))
        return Buffer(lw.em.result(mem.TransposeOp([x.value], [t], {"perm": perm})), dims)
    t2 = TensorType(shape, x.type.element)
    return Tensor(lw.em.result(tensor.TransposeOp([x.value], [t2], {"perm": perm})), dims)
