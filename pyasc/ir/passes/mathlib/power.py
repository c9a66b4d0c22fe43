"""``pow(x, c)`` with a constant exponent ``c``, as multiplications or ``sqrt``.

* ``c = 0.5``: ``sqrt(x)`` with ``pow``'s special values (``(-0)**0.5 = +0``,
  ``(-inf)**0.5 = inf``): an array base to a scalar 0.5, numpy's ``sqrt`` fast path,
  is ``math.sqrt`` from the frontend (``composed.power``), so what reaches this is a
  scalar base (numpy's and Python's scalar ``**`` use ``pow``) or an array of exponents;
* ``c = 0, 1, 2, -1``: ``1``, ``x``, ``x*x``, ``1/x`` in the operand's type (correctly
  rounded: numpy's fast paths compute the same);
* other integers ``3 <= |c| <= MAX_INT_EXPONENT`` for f32/f16/bf16: repeated squaring in
  float64 (no overflow or underflow before the final rounding, relative error below
  ``2^-50``) and one rounding to the result type, so the result is correctly rounded
  except in double-rounding cases (at most one unit in the last place apart from
  numpy's ``powf``);
* any other exponent of a float32/float16/bfloat16 power (non-integer or large
  constants, run-time values such as a ``gamma`` argument, arrays of exponents):
  :func:`pyasc.ir.passes.mathlib.powf.powf`, ``2^(y log2|x|)`` in float64, branch-free;
* float64 with ``|c| >= 3`` or a non-constant exponent, and exponents that broadcast
  ``x``, stay ``math.pow`` (libm).
"""

from __future__ import annotations

import math

from pyasc.ir.core import DenseArray, Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.passes.mathlib.emit import Emitter, Val, where
from pyasc.ir.passes.mathlib.powf import powf
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import DYN, ScalarType, TensorType, element_type, f32, f64, index

MAX_INT_EXPONENT = 16


def constant_exponent(v: Value) -> float | None:
    """The value of a constant (scalar, uniform dense, or filled) exponent, else None."""
    if isinstance(v, OpResult) and isinstance(v.op, tensor.FillOp):
        v = v.op.operand_values[0]
    c = constant_value(v)
    if isinstance(c, DenseArray):
        flat = c.array.reshape(-1)
        if flat.size == 0 or not (flat == flat[0]).all():
            return None
        c = flat[0].item()
    return float(c) if isinstance(c, int | float) and not isinstance(c, bool) else None


def int_power(x: Val, n: int) -> Val:
    """``x**n`` for ``n >= 1`` by binary powering."""
    result: Val | None = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    assert result is not None
    return result


def expand_pow(op: Operation, em: Emitter) -> Value | None:
    """The expansion of ``math.pow`` (see module doc), or ``None`` to keep it."""
    c = constant_exponent(op.operand_values[1])
    x = em.wrap(op.operand_values[0])
    if x.value.type != op.result.type or not x.elem.is_float:
        return None
    if c == 0.5:
        return where(x.eq(-math.inf), math.inf, x.sqrt().abs()).value
    if c is None or not c.is_integer() or abs(c) > MAX_INT_EXPONENT:
        return _general(op, x, em)
    n = int(c)
    if n == 0:
        return em.rw.splat(1.0, like=x.value)
    native = {1: lambda: x, 2: lambda: x * x, -1: lambda: 1.0 / x}
    if n in native:
        return native[n]().value
    if x.elem == f64:
        return None
    p = int_power(x.cast(f64), abs(n))
    return (p if n > 0 else 1.0 / p).cast(x.elem).value


def _general(op: Operation, x: Val, em: Emitter) -> Value | None:
    """``x ** y`` by :func:`powf` (computed in float32), or ``None`` for float64 and for
    an exponent of another element type."""
    y = op.operand_values[1]
    if x.elem == f64 or element_type(y.type) != x.elem:
        return None
    if y.type != x.value.type:
        if not isinstance(y.type, ScalarType):
            return None
        y = _fill(em, y, x.value)
    return powf(x.cast(f32), em.wrap(y).cast(f32)).cast(x.elem).value


def _fill(em: Emitter, scalar: Value, like: Value) -> Value:
    """``scalar`` broadcast to ``like``'s tensor type (dims read from ``like``)."""
    t = like.type
    assert isinstance(t, TensorType)
    dims = [em.rw.insert(tensor.DimOp([like], [index], {"axis": a})).result
            for a, d in enumerate(t.shape) if d == DYN]
    return em.rw.insert(tensor.FillOp.new(scalar, t, dims)).result
