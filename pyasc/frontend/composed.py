"""numpy ufuncs composed from the IR's existing elementwise ops.

``deg2rad rad2deg copysign heaviside hypot logaddexp logaddexp2 sinh cosh fmod nextafter
bitwise_count`` need no op of their own: each is a short formula over ``arith``/``math``
ops, so every backend (and its vectorizer) runs it as it runs those ops.  Each entry is
an ``Emit`` of the ufunc table (``elementwise.UFUNCS``): it receives the operands
already cast to numpy's loop dtype and returns the result in the output dtype.

float16/bfloat16 loops compute in float32 and round once at the end, as numpy's half
loops do (``npy_half`` -> ``float`` -> the float routine -> ``npy_half``), except where
numpy works on the half's own bits (``nextafter``, ``copysign``) or only selects
(``heaviside``).  The formulas are written out with :class:`~pyasc.ir.passes.mathlib.
emit.Val`, the same operator-overloading builder the math expansions use; accuracy
notes per function are in ``docs/math-accuracy.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pyasc.frontend.emit import Emitter
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.ops import math as m
from pyasc.ir.passes.mathlib.emit import Emitter as FormulaEmitter
from pyasc.ir.passes.mathlib.emit import Val, where
from pyasc.ir.types import ScalarType, f32, i16, i32, i64, scalar_from_numpy

Formula = Callable[..., Val]
NARROW = ("f16", "bf16")
BITS_OF = {16: i16, 32: i32, 64: i64}
"""The signed integer holding a float's bits, by width."""


class _Insert:
    """The one method of a rewriter that :class:`Val` uses: insert at the frontend's
    insertion point (with the user's source location)."""

    def __init__(self, em: Emitter) -> None:
        self.em = em

    def insert(self, op: Operation) -> Operation:
        return self.em.op(op)


def formula(fn: Formula, narrow_in_f32: bool = True) -> Callable:
    """The ufunc-table ``Emit`` of ``fn`` (a function of :class:`Val` operands)."""
    def emit(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
        b = FormulaEmitter(_Insert(em))
        xs = [b.wrap(v) for v in vs]
        if narrow_in_f32 and xs[0].elem.name in NARROW:
            return fn(*(x.cast(f32) for x in xs)).cast(t).value
        return fn(*xs).cast(t).value
    return emit


def call(cls: type[Operation], x: Val) -> Val:
    """A unary ``math`` op on ``x``."""
    return x.em.emit(cls.new(x.value))  # type: ignore[attr-defined]


def _np(x: Val) -> type:
    return x.elem.to_numpy().type


# ------------------------------------------------------------------ scaling and signs

def deg2rad(x: Val) -> Val:
    """numpy's ``x * (pi / 180)`` with the constant computed in the loop dtype."""
    t = _np(x)
    return x * float(t(np.pi / 180))


def rad2deg(x: Val) -> Val:
    """numpy's ``x * (180 / pi)``: the quotient of the dtype's 180 and pi (for float32
    that is one ulp from ``float32(180 / pi)``)."""
    t = _np(x)
    return x * float(t(180) / t(np.pi))


def bits(x: Val) -> Val:
    """The float's bits as the signed integer of its width."""
    return x.em.emit(arith.BitcastOp.new(x.value, BITS_OF[x.elem.bitwidth]))


def from_bits(b: Val, t: ScalarType) -> Val:
    return b.em.emit(arith.BitcastOp.new(b.value, t))


def copysign(x: Val, y: Val) -> Val:
    """The magnitude of ``x`` with the sign bit of ``y`` (also of NaN and -0.0)."""
    sign = -(1 << (x.elem.bitwidth - 1))  # the sign bit, as a signed constant
    return from_bits((bits(x) & ~sign) | (bits(y) & sign), x.elem)


def heaviside(x: Val, h: Val) -> Val:
    """NaN for NaN, ``h`` at (either) zero, else 0 below and 1 above."""
    step = where(x.lt(0.0), x.em.const(0.0, x.elem), 1.0)
    return where(call(m.IsNanOp, x), x, where(x.eq(0.0), h, step))


# ------------------------------------------------------------------- exp and log

def hypot(x: Val, y: Val) -> Val:
    """``a * sqrt(1 + (b/a)**2)`` with ``a >= b`` the magnitudes: no overflow or
    underflow in the squares; an infinity wins over NaN (C99), ``0`` when both are 0."""
    ax, ay = x.abs(), y.abs()
    a, b = ax.max(ay), ax.min(ay)
    r = b / a
    h = a * (r * r + 1.0).sqrt()
    h = where(a.eq(0.0), 0.0, h)
    # two selects, not an ``or`` of the tests: the vector unit has no i1 ``or``
    return where(call(m.IsInfOp, x), math.inf, where(call(m.IsInfOp, y), math.inf, h))


def logaddexp(x: Val, y: Val) -> Val:
    """``max + log1p(exp(-|x - y|))``; equal inputs (infinities too) give ``x + ln 2``."""
    d = (x - y).abs()
    s = x.max(y) + call(m.Log1pOp, call(m.ExpOp, -d))
    return where(x.eq(y), x + math.log(2.0), s)


def logaddexp2(x: Val, y: Val) -> Val:
    """``max + log1p(2**-|x - y|) / ln 2``; equal inputs give ``x + 1``."""
    d = (x - y).abs()
    s = x.max(y) + call(m.Log1pOp, call(m.Exp2Op, -d)) * (1.0 / math.log(2.0))
    return where(x.eq(y), x + 1.0, s)


def _big(a: Val) -> Val:
    """``exp(a) / 2`` as ``(exp(a/2) / 2) * exp(a/2)``: finite up to cosh's own
    overflow threshold (``exp(a)`` alone overflows ``ln 2`` earlier)."""
    h = call(m.ExpOp, a * 0.5)
    return (h * 0.5) * h


def _exp_gone(x: Val) -> float:
    """Beyond this ``|x|``, ``exp(-|x|)`` is below half an ulp of ``exp(|x|)``."""
    return 10.0 if x.elem == f32 else 20.0


def cosh(x: Val) -> Val:
    a = x.abs()
    e = call(m.ExpOp, a)
    return where(a.gt(_exp_gone(x)), _big(a), (e + 1.0 / e) * 0.5)


def sinh(x: Val) -> Val:
    """From ``E = expm1(|x|)``: ``(E + E / (E + 1)) / 2`` keeps small ``x`` accurate
    (no cancellation); the sign restored with ``-0.0`` kept."""
    a = x.abs()
    e = call(m.Expm1Op, a)
    s = where(a.gt(_exp_gone(x)), _big(a), (e + e / (e + 1.0)) * 0.5)
    return where(x.eq(0.0), x, where(x.lt(0.0), -s, s))


# --------------------------------------------------------------------- remainders

def fmod_float(x: Val, y: Val) -> Val:
    """C ``fmod`` (sign of the dividend), exact: numpy's floor remainder of the
    magnitudes is exact and equals ``fmod`` of non-negative operands."""
    r = x.em.emit(arith.RemOp.new(x.abs().value, y.abs().value))
    return copysign(r, x)


def fmod_int(x: Val, y: Val) -> Val:
    """C ``%`` from numpy's floor remainder (sign of the divisor); 0 for a zero divisor
    and for ``MIN % -1`` as numpy gives."""
    r = x.em.emit(arith.RemOp.new(x.value, y.value))
    if not x.elem.is_signed:
        return r
    differ = r.ne(0) & (r.lt(0) ^ x.lt(0))
    return where(differ, r - y, r)


def nextafter(x: Val, y: Val) -> Val:
    """The next representable value after ``x`` toward ``y``, on the bits of the
    dtype itself (float16 steps by float16 ulps as numpy's ``npy_half_nextafter``)."""
    t, b = x.elem, bits(x)
    away = x.gt(0.0) ^ y.gt(x)  # moving toward zero: the magnitude's bits shrink
    step = from_bits(where(away, b - 1, b + 1), t)
    tiniest = from_bits(where(y.lt(0.0), b.em.const(-(1 << (t.bitwidth - 1)) + 1,
                                                     b.elem), 1), t)
    out = where(x.eq(0.0), tiniest, step)
    out = where(x.eq(y), y, out)
    return where(call(m.IsNanOp, x) | call(m.IsNanOp, y), x + y, out)


_SWAR = (0x55, 0x33, 0x0F, 0x01)


def bitwise_count(x: Val) -> Val:
    """Set bits of ``|x|`` (numpy 2): SWAR popcount on the unsigned bits (``|MIN|``
    wraps to ``MIN``, whose unsigned bits have one bit set, as numpy counts)."""
    width = x.elem.bitwidth
    u = x.abs().cast(scalar_from_numpy(np.dtype(f"u{width // 8}"))) if x.elem.is_signed \
        else x
    rep = sum(1 << k for k in range(0, width, 8))  # 0x0101...01
    c55, c33, c0f, c01 = (c * rep for c in _SWAR)
    v = u - ((u >> 1) & c55)
    v = (v & c33) + ((v >> 2) & c33)
    v = (v + (v >> 4)) & c0f
    return (v * c01) >> (width - 8) if width > 8 else v
