"""Rearranging arrays: ``tril triu roll diff repeat pad meshgrid``, and the diagonal
masks ``eye identity tri``.

Each is composed of existing tensor ops, so every backend runs it as it runs those:

* ``tril``/``triu``: ``np.where`` of an ``arange`` row/column comparison, with a zero of
  the array's dtype (numpy's ``where(mask, m, zeros(1, m.dtype))``; ``-0.0`` kept);
  ``eye``/``identity``/``tri``: the same comparison as ones and zeros of ``dtype``;
* ``roll`` and ``pad`` (``edge``, ``reflect``): a gather (``np.take``) along each axis
  with an index map.  For a static length the map is numpy's own (``np.roll``/``np.pad``
  of ``arange(n)``, so every wrap and multi-period reflection is numpy's by
  construction); for a run-time length it is computed with ``%`` and ``where``;
  ``pad`` ``constant`` concatenates filled blocks axis by axis, so corners take the
  value of the later axis as in numpy;
* ``diff``: ``x[1:] - x[:-1]`` along the axis ``n`` times (``!=`` for booleans);
* ``repeat`` (a scalar count): a size-1 axis broadcast to the count and merged;
* ``meshgrid``: reshapes and broadcasts (a tuple, as numpy 2 returns).
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.indexing import load_index
from pyasc.frontend.npfuncs.common import (
    array_arg,
    as_dtype,
    normalize_axis,
    shape_arg,
    static_int,
)
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Dim, Scalar, Tensor
from pyasc.ir.types import i1


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


def _int_or_scalar(lw, v: object, what: str) -> int | Scalar:
    """A compile-time integer, or a run-time integer scalar."""
    x = lw.em.operand(v)
    if isinstance(x, Scalar):
        if not x.type.is_int:
            raise TypeMismatchError(f"{what} must be an integer")
        return x
    return static_int(lw, x, what)


def _iota(lw, n: Dim) -> Tensor:
    """``np.arange(n)`` (int64)."""
    return array_arg(lw, call_numpy(lw, "arange", [n], {}))


def _tri(lw, m: object, k: object, pred: str) -> object:
    x = array_arg(lw, m)
    if x.type.rank == 0:
        raise ShapeInferenceError("input must be at least 1-d")
    dims = lw.em.dims(x)
    rows_n, cols_n = (dims[-2], dims[-1]) if x.type.rank >= 2 else (dims[-1], dims[-1])
    rows = lw.em.reshape(_iota(lw, rows_n), (rows_n, 1))
    offset = _u(lw, "subtract", _iota(lw, cols_n), rows)
    mask = _u(lw, pred, offset, _int_or_scalar(lw, k, "k"))
    zero = lw.em.scalar(0, x.type.element)
    return call_numpy(lw, "where", [mask, x, zero], {})


def _band(lw, n: object, m: object, k: object, pred: str, dtype: object) -> object:
    """``pred(col - row, k)`` over an ``n`` x ``m`` grid as ones and zeros of ``dtype``."""
    rows_n, = shape_arg(lw, n)
    cols_n, = shape_arg(lw, n if m is None else m)
    t = as_dtype(lw, dtype) or as_dtype(lw, float)
    rows = lw.em.reshape(_iota(lw, rows_n), (rows_n, 1))
    mask = _u(lw, pred, _u(lw, "subtract", _iota(lw, cols_n), rows),
              _int_or_scalar(lw, k, "k"))
    return call_numpy(lw, "where", [mask, lw.em.scalar(1, t), lw.em.scalar(0, t)], {})


@register("eye")
def eye(lw, N, M=None, k=0, dtype=float):  # noqa: N803 - numpy's parameter names
    """ones on diagonal `k` of an `N` x `M` array, zeros elsewhere"""
    return _band(lw, N, M, k, "equal", dtype)


@register("identity")
def identity(lw, n, dtype=float):
    """the `n` x `n` identity matrix"""
    return _band(lw, n, None, 0, "equal", dtype)


@register("tri")
def tri(lw, N, M=None, k=0, dtype=float):  # noqa: N803 - numpy's parameter names
    """ones at and below diagonal `k` of an `N` x `M` array, zeros elsewhere"""
    return _band(lw, N, M, k, "less_equal", dtype)


@register("tril")
def tril(lw, m, k=0):
    """lower triangle of the last two axes (zeros above diagonal `k`)"""
    return _tri(lw, m, k, "less_equal")


@register("triu")
def triu(lw, m, k=0):
    """upper triangle of the last two axes (zeros below diagonal `k`)"""
    return _tri(lw, m, k, "greater_equal")


def _gather(lw, x: Tensor, ax: int, static_map, runtime_map) -> Tensor:
    """``np.take(x, idx, axis=ax)`` with ``idx`` from ``static_map(n)`` (numpy, at
    compile time; ``None`` when it needs run-time values) or ``runtime_map(n)`` (IR)."""
    n = lw.em.dims(x)[ax]
    known = static_map(n) if isinstance(n, int) else None
    idx = lw.em.constant_array(known.astype(np.int64)) if known is not None \
        else runtime_map(n)
    return array_arg(lw, call_numpy(lw, "take", [x, idx], {"axis": ax}))


def _pairs(lw, shift: object, axis: object, rank: int) -> dict[int, object]:
    """numpy's broadcast of ``shift`` and ``axis``, summed per axis."""
    shifts = shift if isinstance(shift, tuple | list) else (shift,)
    axes = lw.static(axis, "axis")
    axes = tuple(axes) if isinstance(axes, tuple | list) else (axes,)
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ShapeInferenceError("'shift' and 'axis' should be scalars or 1D sequences "
                                  "of the same length")
    total: dict[int, object] = {}
    n = max(len(shifts), len(axes))
    for s, a in zip(shifts * (n // len(shifts)), axes * (n // len(axes)), strict=True):
        ax = normalize_axis(static_int(lw, a, "axis"), rank)
        s = _int_or_scalar(lw, s, "shift")
        total[ax] = _u(lw, "add", total[ax], s) if ax in total else s
    return total


@register("roll")
def roll(lw, a, shift, axis=None):
    """elements shifted along `axis` with wrap-around (`None`: the flattened array)"""
    x = array_arg(lw, a)
    if axis is None:
        flat = roll(lw, call_numpy(lw, "ravel", [x], {}), shift, 0)
        return lw.em.reshape(flat, lw.em.dims(x))
    for ax, s in _pairs(lw, shift, axis, x.type.rank).items():
        x = _gather(lw, x, ax,
                    lambda n, s=s: np.roll(np.arange(n), s) if isinstance(s, int) else None,
                    lambda n, s=s: _u(lw, "remainder", _u(lw, "subtract", _iota(lw, n), s), n))
    return x


def _along(rank: int, ax: int, item: slice) -> tuple:
    return (slice(None),) * ax + (item,) + (slice(None),) * (rank - ax - 1)


def _end_block(lw, v: object, x: Tensor, ax: int) -> Tensor:
    """``prepend``/``append`` of ``np.diff``: a scalar is broadcast to size 1 along
    ``ax``."""
    e = array_arg(lw, v)
    if e.type.rank == 0:
        dims = list(lw.em.dims(x))
        dims[ax] = 1
        return lw.em.broadcast(e, dims)
    return e


@register("diff")
def diff(lw, a, n=1, axis=-1, prepend=None, append=None):
    """`n`-th discrete difference along `axis` (`!=` for booleans), `prepend`/`append`"""
    x = array_arg(lw, a)
    times = static_int(lw, n, "n")
    if times < 0:
        raise ShapeInferenceError(f"order must be non-negative but got {times}")
    rank = x.type.rank
    if rank == 0:
        raise ShapeInferenceError("diff requires input that is at least one dimensional")
    ax = normalize_axis(static_int(lw, axis, "axis"), rank)
    if times and (prepend is not None or append is not None):
        parts = [_end_block(lw, v, x, ax) for v in (prepend,) if v is not None]
        parts += [x] + [_end_block(lw, v, x, ax) for v in (append,) if v is not None]
        x = array_arg(lw, call_numpy(lw, "concatenate", [parts], {"axis": ax}))
    op = "not_equal" if x.type.element == i1 else "subtract"
    for _ in range(times):
        hi = load_index(lw, x, _along(rank, ax, slice(1, None)))
        lo = load_index(lw, x, _along(rank, ax, slice(None, -1)))
        x = array_arg(lw, _u(lw, op, hi, lo))
    return x


@register("repeat", "ndarray.repeat")
def repeat(lw, a, repeats, axis=None):
    """each element repeated `repeats` (a scalar) times along `axis` (`None`: flattened)"""
    x = array_arg(lw, a)
    if isinstance(lw.em.operand(repeats), Tensor) or isinstance(repeats, tuple | list):
        raise UnsupportedNumpyError("np.repeat with an array of counts makes an array "
                                    "whose size depends on the data",
                                    hint="repeat by a scalar count")
    if axis is None:
        x, ax = array_arg(lw, call_numpy(lw, "ravel", [x], {})), 0
    else:
        ax = normalize_axis(static_int(lw, axis, "axis"), x.type.rank)
    r = shape_arg(lw, [_int_or_scalar(lw, repeats, "repeats")])[0]
    dims = list(lw.em.dims(x))
    wide = lw.em.broadcast(lw.em.reshape(x, [*dims[:ax + 1], 1, *dims[ax + 1:]]),
                           [*dims[:ax + 1], r, *dims[ax + 1:]])
    merged = indexmath.mul(lw.em, dims[ax], r)
    return lw.em.reshape(wide, [*dims[:ax], merged, *dims[ax + 1:]])


@register("meshgrid")
def meshgrid(lw, *xi, copy=True, sparse=False, indexing="xy"):
    """coordinate arrays (a tuple) from 1-D coordinates, `indexing` `xy` or `ij`"""
    how = lw.static(indexing, "indexing")
    if how not in ("xy", "ij"):
        raise TypeMismatchError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [array_arg(lw, call_numpy(lw, "ravel", [v], {})) for v in xi]
    lengths = [lw.em.dims(x)[0] for x in xs]
    order = list(range(len(xs)))
    if how == "xy" and len(xs) > 1:
        order[0], order[1] = 1, 0
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * len(xs)
        shape[order[i]] = lengths[i]
        outs.append(lw.em.reshape(x, shape))
    if not lw.static(sparse, "sparse"):
        full = [lengths[order.index(k)] for k in range(len(xs))]
        outs = [lw.em.broadcast(o, full) for o in outs]
    return tuple(outs)



PAD_MODES = ("constant", "edge", "reflect")


def _pad_widths(lw, pad_width: object, rank: int) -> np.ndarray:
    """``pad_width`` as numpy reads it: ``(rank, 2)`` non-negative integers."""
    w = np.asarray(lw.static(pad_width, "pad_width"))
    if w.dtype.kind not in "iu":
        raise TypeMismatchError("`pad_width` must be of integral type.")
    try:
        pairs = np.broadcast_to(w, (rank, 2))
    except ValueError:
        raise ShapeInferenceError(f"unable to broadcast pad_width of shape {w.shape} to "
                                  f"({rank}, 2)") from None
    if (pairs < 0).any():
        raise ShapeInferenceError("index can't contain negative values")
    return pairs


def _pad_values(lw, values: object, rank: int) -> list[tuple[object, object]]:
    """``constant_values`` per axis (before, after): numbers, or one run-time scalar."""
    v = values if isinstance(values, tuple | list) else lw.em.operand(values)
    if isinstance(v, Scalar):
        return [(v, v)] * rank
    if isinstance(v, Tensor):
        raise UnsupportedNumpyError("np.pad: constant_values must be numbers or a scalar")
    pairs = np.broadcast_to(np.asarray(lw.static(values, "constant_values")), (rank, 2))
    return [(a.item(), b.item()) for a, b in pairs]


def _pad_constant(lw, x: Tensor, ax: int, widths: tuple[int, int],
                  values: tuple[object, object]) -> Tensor:
    t = x.type.element
    parts = []
    for w, v in zip(widths, values, strict=True):
        dims = list(lw.em.dims(x))
        dims[ax] = int(w)
        s = v if isinstance(v, Scalar) else lw.em.scalar(v)
        parts.append(lw.em.fill(lw.em.cast(s, t), dims))  # numpy assigns (casts) it
    parts.insert(1, x)
    return array_arg(lw, call_numpy(lw, "concatenate", [parts], {"axis": ax}))


def _pad_map(lw, how: str, before: int, after: int):
    """The index maps of ``edge``/``reflect`` padding (static, run-time)."""
    def static_map(n: int) -> np.ndarray:
        try:
            return np.pad(np.arange(n), (before, after), mode=how)  # type: ignore
        except ValueError as exc:
            raise ShapeInferenceError(str(exc)) from None

    def runtime_map(n: Scalar) -> object:
        i = _iota_from(lw, -before, indexmath.add(lw.em, n, after))
        if how == "edge":
            return _u(lw, "minimum", _u(lw, "maximum", i, 0), _u(lw, "subtract", n, 1))
        period = _u(lw, "maximum", _u(lw, "subtract", _u(lw, "multiply", n, 2), 2), 1)
        m = _u(lw, "remainder", i, period)
        return call_numpy(lw, "where", [_u(lw, "less", m, n), m,
                                        _u(lw, "subtract", period, m)], {})
    return static_map, runtime_map


def _iota_from(lw, start: int, stop: Dim) -> Tensor:
    return array_arg(lw, call_numpy(lw, "arange", [start, stop], {}))


@register("pad")
def pad(lw, array, pad_width, mode="constant", *, constant_values=0, reflect_type="even"):
    """pad every axis by `pad_width`: `constant` (values per axis), `edge`, `reflect`"""
    x = array_arg(lw, array)
    how = lw.static(mode, "mode")
    if how not in PAD_MODES or lw.static(reflect_type, "reflect_type") != "even":
        raise UnsupportedNumpyError(f"np.pad(mode={how!r}) is not supported",
                                    hint="modes: " + ", ".join(PAD_MODES) +
                                    " (reflect_type 'even')")
    rank = x.type.rank
    values = _pad_values(lw, constant_values, rank) if how == "constant" else []
    for ax, (before, after) in enumerate(_pad_widths(lw, pad_width, rank)):
        if before == after == 0:
            continue
        if how == "constant":
            x = _pad_constant(lw, x, ax, (before, after), values[ax])
        else:
            x = _gather(lw, x, ax, *_pad_map(lw, how, int(before), int(after)))
    return x
