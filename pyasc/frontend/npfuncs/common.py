"""Argument helpers shared by the numpy handlers: dtypes, axes, shapes and ``out=``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend.operators import write_out
from pyasc.frontend.promotion import to_ir
from pyasc.frontend.values import Buffer, Dim, Scalar, Tensor, is_number
from pyasc.ir.types import ScalarType, f64, i1, i64, index


def as_dtype(lw, dtype: object) -> ScalarType | None:
    """The IR type of a ``dtype=`` argument (``np.float32``, ``'int8'``, ``float``...)."""
    if dtype is None:
        return None
    value = lw.static(dtype, "dtype")
    try:
        dt = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeMismatchError(f"data type {value!r} not understood") from None
    return to_ir(dt)


def strong(t: ScalarType) -> ScalarType:
    """The dtype numpy gives an array made from Python scalars of type ``t``."""
    return i64 if t == index else t


def python_dtype(v: object) -> ScalarType:
    """numpy's dtype for a Python or numpy scalar (``np.asarray(v).dtype``)."""
    if isinstance(v, Scalar):
        return strong(v.type)
    if isinstance(v, bool):
        return i1
    if isinstance(v, int):
        return i64
    if isinstance(v, float):
        return f64
    return to_ir(np.asarray(v).dtype)


def static_int(lw, v: object, what: str) -> int:
    """A compile-time integer argument (``what`` names it in errors)."""
    value = lw.static(v, what)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeMismatchError(f"{what} must be an integer, got {type(value).__name__}")
    return int(value)


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[0, rank)`` (negative axes count from the end)."""
    if not -rank <= axis < rank:
        raise ShapeInferenceError(f"axis {axis} is out of bounds for array of dimension "
                                  f"{rank}")
    return axis % rank if rank else 0


def axes_arg(lw, axis: object, rank: int) -> tuple[int, ...]:
    """Sorted, normalized axes of an ``axis=`` argument (``None``: every axis)."""
    if axis is None:
        return tuple(range(rank))
    value = lw.static(axis, "axis")
    items = value if isinstance(value, tuple | list) else (value,)
    axes = [normalize_axis(static_int(lw, a, "axis"), rank) for a in items]
    if len(set(axes)) != len(axes):
        raise ShapeInferenceError("repeated axis")
    return tuple(sorted(axes))


def array_arg(lw, v: object) -> Tensor:
    """An array-like argument as a tensor value (scalars become 0-d arrays)."""
    x = lw.em.operand(v)
    if isinstance(x, Tensor):
        return x
    s = x if isinstance(x, Scalar) else lw.em.scalar(x, python_dtype(x))
    if s.type == index:
        s = lw.em.cast_scalar(s, i64)
    return lw.em.fill(s, ())


def new_object(x: Scalar | Tensor, source: object) -> Scalar | Tensor:
    """``x`` as a new array (``copy``, ``flatten``...): another frontend object than
    ``source`` even when the value is the same, since returning both must give two
    arrays (``compiler._flatten_result``: one object returned twice is one result)."""
    return Tensor(x.value, x.dims) if x is source and isinstance(x, Tensor) else x


def shape_arg(lw, shape: object) -> tuple[Dim, ...]:
    """A shape argument (an int or a sequence of ints) as dims."""
    items = shape if isinstance(shape, tuple | list) else (shape,)
    dims: list[Dim] = []
    for d in items:
        if isinstance(d, Scalar):
            if not d.type.is_int:
                raise TypeMismatchError("array dimensions must be integers")
            dims.append(_non_negative(lw, d if d.type == index else
                                      lw.em.cast_scalar(d, index)))
        elif is_number(d) and isinstance(d, int) and not isinstance(d, bool) or \
                isinstance(d, np.integer):
            if d < 0:
                raise ShapeInferenceError("negative dimensions are not allowed")
            dims.append(int(d))
        else:
            raise TypeMismatchError(f"expected an integer dimension, got {type(d).__name__}")
    return tuple(dims)


def _non_negative(lw, d: Scalar) -> Scalar:
    """A run-time dimension, checked as numpy checks it (``ValueError`` when negative)."""
    from pyasc.frontend import indexmath
    from pyasc.ir.ops import func

    if d.lo is None or d.lo < 0:
        ok = indexmath.cmp(lw.em, "ge", d, 0)
        lw.em.op(func.AssertOp([ok], [], {"message": "negative dimensions are not allowed",
                                          "kind": "shape"}))
    return d


def finish(lw, result: Tensor | Scalar, out: object, what: str) -> object:
    """Return ``result``, or write it into ``out=`` (numpy rules) and return ``out``."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, Buffer):
        raise UnsupportedNumpyError("out= must be an array the function owns or was passed",
                                    hint="pass a parameter or an array assigned to a name")

    write_out(lw, result, out, what)
    return out


def count(lw, dims: Sequence[Dim], t: ScalarType) -> Scalar:
    """The product of ``dims`` as a scalar of type ``t`` (a constant when static)."""
    from pyasc.frontend import indexmath

    n: Dim = 1
    for d in dims:
        n = indexmath.mul(lw.em, n, d)
    if isinstance(n, int):
        return lw.em.const(float(n) if t.is_float else n, t)
    return lw.em.cast_scalar(n, t)
