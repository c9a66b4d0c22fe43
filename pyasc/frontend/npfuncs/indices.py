"""Flat and multi-dimensional indices: ``unravel_index`` and ``ravel_multi_index``, and
the indices of nonzero elements (``nonzero``, ``flatnonzero``, ``argwhere``).

Both take integer scalars or arrays and a shape, in C or Fortran order, and give
``int64`` (numpy's ``intp``) results: ``unravel_index`` a tuple of coordinates
(``divmod`` by each dimension from the fastest-varying one), ``ravel_multi_index`` the
flat index (coordinates times strides).  Out-of-range input raises ``ValueError`` as in
numpy (``mode='raise'``); ``ravel_multi_index`` also has ``mode='wrap'`` and
``'clip'`` (one mode for every coordinate).
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import TypeMismatchError, UnsupportedNumpyError
from pyasc.failures import raise_kind
from pyasc.frontend import indexmath
from pyasc.frontend.advanced import nonzero
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg, shape_arg
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Dim, Scalar, Tensor
from pyasc.ir.ops import func
from pyasc.ir.types import i64


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


def _ints(lw, v: object) -> Scalar | Tensor:
    x = lw.em.operand(v)
    if not isinstance(x, Scalar | Tensor):
        x = lw.em.scalar(x)
    elem = x.type if isinstance(x, Scalar) else x.type.element
    if not elem.is_int:
        raise TypeMismatchError("only int indices permitted")
    return lw.em.cast(x, i64)


def _check(lw, ok: object, message: str) -> None:
    """``ValueError(message)`` unless ``ok`` (a bool scalar or array) holds everywhere."""
    if isinstance(ok, Tensor):
        ok = call_numpy(lw, "all", [ok], {})
    if isinstance(ok, Scalar):
        lw.em.op(func.AssertOp([ok.value], [], {"message": message,
                                             "kind": raise_kind("ValueError")}))


def _order(lw, order: object, dims: tuple[Dim, ...]) -> list[int]:
    """Axes from the fastest-varying to the slowest."""
    o = lw.static(order, "order")
    if o not in ("C", "F"):
        raise UnsupportedNumpyError("order must be 'C' or 'F'")
    axes = list(range(len(dims)))
    return axes[::-1] if o == "C" else axes


def _size(lw, dims: tuple[Dim, ...]) -> Dim:
    n: Dim = 1
    for d in dims:
        n = indexmath.mul(lw.em, n, d)
    return n


@register("unravel_index")
def unravel_index(lw, indices, shape, order="C"):
    """coordinates (int64) of flat `indices` in an array of `shape`"""
    dims = shape_arg(lw, shape)
    idx = _ints(lw, indices)
    size = _size(lw, dims)
    inside = _u(lw, "logical_and", _u(lw, "greater_equal", idx, 0), _u(lw, "less", idx, size))
    _check(lw, inside, "index is out of bounds for array with size "
           f"{size if isinstance(size, int) else 'of the shape'}")
    coords: dict[int, object] = {}
    rest: object = idx
    for ax in _order(lw, order, dims):
        coords[ax] = _u(lw, "remainder", rest, dims[ax])
        rest = _u(lw, "floor_divide", rest, dims[ax])
    return tuple(lw.em.cast(lw.em.operand(coords[a]), i64) for a in range(len(dims)))


_MODES = ("raise", "wrap", "clip")


@register("ravel_multi_index")
def ravel_multi_index(lw, multi_index, dims, mode="raise", order="C"):
    """flat index (int64) of coordinates `multi_index` in an array of shape `dims`"""
    shape = shape_arg(lw, dims)
    coords = [_ints(lw, c) for c in multi_index]
    if len(coords) != len(shape):
        raise TypeMismatchError(f"parameter multi_index must be a sequence of length "
                                f"{len(shape)}")
    how = lw.static(mode, "mode")
    if how not in _MODES:
        raise UnsupportedNumpyError(f"clipmode must be one of {', '.join(_MODES)}")
    flat: object = 0
    stride: Dim = 1
    for ax in _order(lw, order, shape):
        c, d = coords[ax], shape[ax]
        if how == "wrap":
            c = _u(lw, "remainder", c, d)
        elif how == "clip":
            c = _u(lw, "minimum", _u(lw, "maximum", c, 0), _u(lw, "subtract", d, 1))
        else:
            _check(lw, _u(lw, "logical_and", _u(lw, "greater_equal", c, 0),
                          _u(lw, "less", c, d)), "invalid entry in coordinates array")
        flat = _u(lw, "add", flat, _u(lw, "multiply", c, stride))
        stride = indexmath.mul(lw.em, stride, d)
    return lw.em.cast(lw.em.operand(flat), i64)


def nonzero_coordinates(lw, a: object, what: str) -> list[Tensor]:
    """``a.nonzero()``: one ``int64`` array of coordinates per axis of ``a``, in C order
    (a run-time length, as ``x[mask]``'s); ``a != 0`` is numpy's truth (NaN is true)."""
    x = array_arg(lw, a)
    if x.type.rank == 0:  # numpy 2 refuses it rather than guessing a shape
        raise TypeMismatchError(f"{what} of a 0-d array is not allowed",
                                hint="use np.atleast_1d(x) first, as numpy says")
    mask = x if x.type.element.is_bool else _u(lw, "not_equal", x, 0)
    return nonzero(lw, mask, lw.em.dims(mask))


@register("nonzero", "ndarray.nonzero")
def nonzero_(lw, a):
    """a tuple of `int64` coordinate arrays, one per axis, of the nonzero elements"""
    return tuple(nonzero_coordinates(lw, a, "nonzero"))


@register("flatnonzero")
def flatnonzero(lw, a):
    """flat indices (`int64`) of the nonzero elements of `a` raveled"""
    return nonzero_coordinates(lw, call_numpy(lw, "ravel", [a], {}), "flatnonzero")[0]


@register("argwhere")
def argwhere(lw, a):
    """`(count, a.ndim)` `int64` coordinates of the nonzero elements (0-d: `(count, 0)`)"""
    x = lw.em.operand(a)
    if isinstance(x, Tensor) and x.type.rank == 0 or not isinstance(x, Tensor):
        # numpy: argwhere(atleast_1d(a))[:, :0], one empty row per nonzero
        flat = nonzero_coordinates(lw, call_numpy(lw, "ravel", [a], {}), "argwhere")[0]
        return call_numpy(lw, "zeros", [(lw.em.dims(flat)[0], 0)], {"dtype": np.int64})
    return call_numpy(lw, "stack", [nonzero_coordinates(lw, a, "argwhere")], {"axis": 1})
