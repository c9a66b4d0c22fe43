"""Array creation and conversion: ``zeros ones empty full *_like arange linspace asarray
array copy ascontiguousarray astype``, scalar-type calls (``np.float32(x)``), ``x.item()``
and ``x.fill(v)``.

New arrays are tensor values; bound to a name the function writes into, they get a
buffer (``mem.alloc``) at the assignment.  ``np.empty`` is filled with zeros (its
contents are unspecified anyway).  ``np.ascontiguousarray`` of a contiguous buffer is
that same buffer, as numpy returns the same object.  ``np.linspace`` repeats numpy's
own arithmetic (``arange * step + start``, ``arange / div * delta`` when the step is
0, the last value set to ``stop``), so its values are numpy's bit for bit.
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.npfuncs.common import (
    array_arg,
    as_dtype,
    new_object,
    python_dtype,
    shape_arg,
    strong,
)
from pyasc.frontend.numpy_registry import register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, f64, i1, index


def _fill(lw, dims, value: object, t: ScalarType) -> Tensor:
    v = lw.em.operand(value)
    if isinstance(v, Tensor):
        raise TypeMismatchError("the fill value must be a scalar")
    s = lw.em.element(v, t)
    return lw.em.fill(s, dims)  # type: ignore[arg-type]


@register("zeros")
def zeros(lw, shape, dtype="float64"):
    """new array of zeros (default float64)"""
    return _fill(lw, shape_arg(lw, shape), 0, as_dtype(lw, dtype))  # type: ignore[arg-type]


@register("ones")
def ones(lw, shape, dtype="float64"):
    """new array of ones (default float64)"""
    return _fill(lw, shape_arg(lw, shape), 1, as_dtype(lw, dtype))  # type: ignore[arg-type]


@register("empty")
def empty(lw, shape, dtype="float64"):
    """new array (zero-filled: the contents of np.empty are unspecified)"""
    return _fill(lw, shape_arg(lw, shape), 0, as_dtype(lw, dtype))  # type: ignore[arg-type]


@register("full")
def full(lw, shape, fill_value, dtype=None):
    """new array filled with `fill_value` (dtype from the value by default)"""
    t = as_dtype(lw, dtype) or python_dtype(lw.em.operand(fill_value))
    return _fill(lw, shape_arg(lw, shape), fill_value, t)


def _like(lw, a: object, dtype: object) -> tuple[tuple, ScalarType]:
    x = a if isinstance(a, Tensor | Buffer) else array_arg(lw, a)
    return lw.em.dims(x), as_dtype(lw, dtype) or x.type.element


@register("zeros_like")
def zeros_like(lw, a, dtype=None):
    """zeros with the shape and dtype of `a`"""
    dims, t = _like(lw, a, dtype)
    return _fill(lw, dims, 0, t)


@register("ones_like")
def ones_like(lw, a, dtype=None):
    """ones with the shape and dtype of `a`"""
    dims, t = _like(lw, a, dtype)
    return _fill(lw, dims, 1, t)


@register("empty_like")
def empty_like(lw, a, dtype=None):
    """array with the shape and dtype of `a` (zero-filled)"""
    dims, t = _like(lw, a, dtype)
    return _fill(lw, dims, 0, t)


@register("full_like")
def full_like(lw, a, fill_value, dtype=None):
    """`fill_value` with the shape and dtype of `a`"""
    dims, t = _like(lw, a, dtype)
    return _fill(lw, dims, fill_value, t)


@register("arange")
def arange(lw, start, stop=None, step=None, dtype=None):
    """evenly spaced values; int64 for integers, float64 if any bound is a float"""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    em = lw.em
    bounds = [em.operand(v) for v in (start, stop, step)]
    t, _ = result_type(bounds)
    t = as_dtype(lw, dtype) or strong(t)
    n = _arange_length(lw, bounds)
    t0 = f64 if not t.is_int and not t.is_float else t
    first, delta = (em.cast(v if isinstance(v, Scalar) else em.scalar(v, t0), t0)
                    for v in (bounds[0], bounds[2]))
    shape = (n,) if isinstance(n, int) else (DYN,)
    dims = [] if isinstance(n, int) else [n.value]
    op = tensor.ArangeOp([first.value, delta.value, *dims], [TensorType(shape, t0)])
    return Tensor(em.result(op), (n,))


def _arange_length(lw, bounds: list[object]):
    em = lw.em
    if all(isinstance(v, int) and not isinstance(v, bool) for v in bounds):
        return len(range(*bounds))  # type: ignore[arg-type]
    if not any(isinstance(v, Scalar) for v in bounds):
        return max(0, int(np.ceil((bounds[1] - bounds[0]) / bounds[2])))  # type: ignore
    if all(isinstance(v, int) or isinstance(v, Scalar) and v.type.is_int for v in bounds):
        a, b, s = (v if isinstance(v, int) else em.cast_scalar(v, index) for v in bounds)
        n = indexmath.neg(em, indexmath.floordiv(em, indexmath.sub(em, a, b), s))
        return indexmath.maximum(em, 0, n)
    a, b, s = (em.cast(v if isinstance(v, Scalar) else em.scalar(v, f64), f64)
               for v in bounds)
    span = em.result(arith.SubOp.new(b.value, a.value))
    q = em.result(m.CeilOp.new(em.result(arith.DivOp.new(span, s.value))))
    n = Scalar(em.result(arith.CastOp.new(q, index)), weak=True)
    return indexmath.maximum(em, 0, n)


@register("asarray")
def asarray(lw, a, dtype=None):
    """the same array (cast when `dtype` differs); sequences become constants"""
    x = lw.em.operand(a) if not isinstance(a, Buffer) else a
    t = as_dtype(lw, dtype)
    if isinstance(x, Buffer):
        return x if t is None or t == x.type.element else lw.em.cast(lw.em.snapshot(x), t)
    x = array_arg(lw, x)
    return x if t is None else lw.em.cast(x, t)


@register("array")
def array(lw, a, dtype=None):
    """a new array with a copy of the data"""
    x = array_arg(lw, a)
    t = as_dtype(lw, dtype)
    return new_object(x if t is None else lw.em.cast(x, t), a)


@register("copy", "ndarray.copy")
def copy(lw, a):
    """a new array with a copy of the data"""
    return new_object(array_arg(lw, a), a)


@register("ascontiguousarray")
def ascontiguousarray(lw, a, dtype=None):
    """C-contiguous array: the same buffer when already contiguous, else a copy"""
    t = as_dtype(lw, dtype)
    if isinstance(a, Buffer) and (t is None or t == a.type.element):
        if a.type.is_contiguous:
            return a
        copy_t = MemRefType(a.type.shape, a.type.element)
        return Buffer(lw.em.result(mem.ContiguousOp([a.value], [copy_t])), a.dims)
    x = array_arg(lw, a)
    if x.type.rank == 0:
        x = lw.em.reshape(x, (1,))
    return x if t is None else lw.em.cast(x, t)


@register("astype", "ndarray.astype")
def astype(lw, x, dtype, /, copy=True):
    """cast to `dtype` (numpy's unsafe casting: float to int truncates)"""
    t = as_dtype(lw, dtype)
    v = lw.em.operand(x)
    if not is_runtime(v):
        v = lw.em.scalar(v, python_dtype(v))
    out = lw.em.cast(v, t)  # type: ignore[arg-type]
    return new_object(out, x) if copy is not False and isinstance(out, Tensor) else out


def _scalar_type(name: str):
    def handler(lw, x=0, /):
        target = _ir(name)
        v = lw.em.operand(x)
        if isinstance(v, Scalar):  # a Python int must fit (numpy 2); the result is strong
            lw.em.check_fits(v, target)
            return Scalar(lw.em.cast_scalar(v, target).value)
        if is_runtime(v):
            return lw.em.cast(v, target)
        try:
            value = np.dtype(name).type(v)
        except (OverflowError, ValueError, TypeError) as exc:
            raise TypeMismatchError(f"np.{name}({v!r}): {exc}") from None
        return lw.em.scalar(value, target)
    handler.__doc__ = f"`np.{name}(x)`: a {name} scalar, or an array cast to {name}"
    return handler


def _ir(name: str) -> ScalarType:
    from pyasc.ir.types import scalar_from_numpy

    return scalar_from_numpy(np.dtype(name))


for _name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64"):
    register(_name)(_scalar_type(_name))
_bf16 = _scalar_type("bfloat16")  # numpy has none: ml_dtypes' type, e.g. a.dtype.type(0)
_bf16.__doc__ = ("`ml_dtypes.bfloat16(x)` (or `a.dtype.type(x)` of a bfloat16 array): a "
                 "bfloat16 scalar, or an array cast to bfloat16")
register("ml_dtypes.bfloat16")(_bf16)


@register("finfo", "iinfo")
def type_info(lw, dtype):
    """machine limits of a dtype (`.eps`, `.max`, `.min`, `.tiny`, `.bits`...)"""
    from pyasc.frontend.npfuncs.common import as_dtype

    t = as_dtype(lw, dtype.dtype if isinstance(dtype, Tensor | Buffer | Scalar) else dtype)
    np_t = t.to_numpy()  # type: ignore[union-attr]
    return np.finfo(np_t) if np_t.kind == "f" else np.iinfo(np_t)


@register("ndarray.item")
def item(lw, x, /):
    """the single element of a size-1 array as a Python scalar"""
    from pyasc.frontend.truth import _single_element

    s = x if isinstance(x, Scalar) else _single_element(lw, x)
    t = s.type
    py = i1 if t == i1 else f64 if t.is_float else index
    return Scalar(lw.em.cast_scalar(s, py).value, weak=True)


@register("ndarray.fill")
def fill(lw, x, value, /):
    """in-place fill of an array the function owns or was passed"""
    if not isinstance(x, Buffer):
        raise UnsupportedNumpyError("x.fill() needs an array the function can write",
                                    hint="assign the array to a name first")
    s = lw.em.operand(value)
    t = x.type.element
    lw.em.write(lw.em.element(s, t), x)



@register("linspace")
def linspace(lw, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` (static) evenly spaced scalars from `start` to `stop`, numpy's arithmetic"""
    from pyasc.frontend.elementwise import apply_ufunc

    em, n = lw.em, lw.static(num, "num")
    ends = [em.operand(v) for v in (start, stop)]
    if any(isinstance(v, Tensor) for v in ends) or isinstance(n, bool) or \
            not isinstance(n, int | np.integer) or n < 0:
        raise TypeMismatchError("np.linspace needs scalar start and stop and a "
                                "non-negative integer num known at compile time")
    t, _ = result_type(ends)
    t = t if t.is_float else f64  # numpy's ensure_inexact
    a, b = (em.cast(v if isinstance(v, Scalar) else em.scalar(v, t), t) for v in ends)
    div = n - 1 if lw.static(endpoint, "endpoint") else n
    y = em.constant_array(np.arange(n, dtype=t.to_numpy()))
    delta = apply_ufunc(em, "subtract", [b, a])
    step: object = float("nan")
    if div > 0:
        step = apply_ufunc(em, "true_divide", [delta, div])
        scaled = apply_ufunc(em, "multiply", [apply_ufunc(em, "true_divide", [y, div]),
                                              delta])
        y = call_where(lw, apply_ufunc(em, "equal", [step, 0]), scaled,
                       apply_ufunc(em, "multiply", [y, step]))
    else:
        y = apply_ufunc(em, "multiply", [y, delta])
    y = apply_ufunc(em, "add", [y, a])
    if div == n - 1 and n > 1:  # endpoint: the last value is `stop` exactly
        y = call_where(lw, em.constant_array(np.arange(n) == n - 1), b, y)
    out_t = as_dtype(lw, dtype) or t
    if out_t.is_int:
        y = apply_ufunc(em, "floor", [y])
    y = em.cast(y, out_t)  # type: ignore[arg-type]
    if lw.static(axis, "axis") not in (0, -1):
        raise TypeMismatchError("np.linspace of scalars has one axis: axis must be 0")
    return (y, step) if lw.static(retstep, "retstep") else y


def call_where(lw, cond: object, x: object, y: object) -> object:
    """``np.where(cond, x, y)`` through the registry."""
    from pyasc.frontend.numpy_registry import call_numpy

    return call_numpy(lw, "where", [cond, x, y], {})
