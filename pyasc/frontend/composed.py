"""numpy ufuncs composed from the IR's existing elementwise ops.

``deg2rad rad2deg copysign heaviside fmax fmin hypot logaddexp logaddexp2 sinh cosh fmod nextafter
bitwise_count arctan2 arcsin arccos arcsinh arccosh arctanh cbrt power`` need no op of their
own: each is a short formula over ``arith``/``math`` ops (``math.atan`` for the inverse
trigonometric ones), so every backend (and its vectorizer) runs it as it runs those
ops.  Each entry is an ``Emit`` of the ufunc table (``elementwise.UFUNCS``): it receives
the operands already cast to numpy's loop dtype and returns the result in the output
dtype.

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
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import ScalarType, TensorType, f32, i16, i32, i64, scalar_from_numpy

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


def power(x: Val, y: Val) -> Val:
    """numpy's ``power``. An array to a scalar exponent of 0.5 is ``sqrt``: the fast path
    of numpy's float32/float64 loops for a stride-0 exponent, whose ``(-0)**0.5 = -0`` and
    ``(-inf)**0.5 = nan`` differ from ``pow``'s ``+0`` and ``inf``; a run-time scalar
    exponent selects it where it is 0.5. Scalar bases, arrays of exponents and the half
    loops (float16, bfloat16: ``pow`` through float) keep ``pow``; ``**`` of a half array
    to a Python float has its own fast path (``operators``)."""
    fast_half = x.elem.name in ("f32", "f64") and isinstance(x.value.type, TensorType) \
        and isinstance(y.value.type, ScalarType)
    c = constant_value(y.value) if fast_half else None
    if fast_half and c == 0.5:
        return x.sqrt()
    p = x.em.emit(m.PowOp.new(x.value, y.value))
    return where(y.eq(0.5), x.sqrt(), p) if fast_half and c is None else p


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


def fmax(x: Val, y: Val) -> Val:
    """numpy's ``fmax``: ``maximum`` unless one operand is NaN, then the other (NaN only
    when both are).  Equal operands (``-0.0``, ``0.0``) resolve as ``maximum``'s, which
    is what numpy's loops do for float16 and for float32/float64 arrays (its scalar
    loop, a length-1 call, returns the first: numpy itself differs by length there)."""
    return where(_isnan(y), x, where(_isnan(x), y, x.max(y)))


def fmin(x: Val, y: Val) -> Val:
    """numpy's ``fmin``: ``minimum`` ignoring a NaN operand (see :func:`fmax`)."""
    return where(_isnan(y), x, where(_isnan(x), y, x.min(y)))


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


def _big(a: Val, e: Val) -> Val:
    """``exp(a) / 2`` from ``e ~ exp(a)``, and as ``(exp(a/2) / 2) * exp(a/2)`` where
    ``exp(a)`` overflows but its half does not (the last ``ln 2`` below cosh's own
    overflow threshold)."""
    h = call(m.ExpOp, a * 0.5)
    over = 88.0 if a.elem == f32 else 709.0
    return where(a.lt(over), e * 0.5, (h * 0.5) * h)


def _exp_gone(x: Val) -> float:
    """Beyond this ``|x|``, ``exp(-|x|)`` is below half an ulp of ``exp(|x|)``."""
    return 10.0 if x.elem == f32 else 20.0


def cosh(x: Val) -> Val:
    a = x.abs()
    e = call(m.ExpOp, a)
    return where(a.gt(_exp_gone(x)), _big(a, e), (e + 1.0 / e) * 0.5)


def sinh(x: Val) -> Val:
    """From ``E = expm1(|x|)``: ``(E + E / (E + 1)) / 2`` keeps small ``x`` accurate
    (no cancellation); the sign restored with ``-0.0`` kept."""
    a = x.abs()
    e = call(m.Expm1Op, a)
    s = where(a.gt(_exp_gone(x)), _big(a, e + 1.0), (e + e / (e + 1.0)) * 0.5)
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


# ------------------------------------------------------------ inverse trig / hyperbolic

PI_TAIL64 = 1.2246467991473532e-16
"""pi - float64(pi)."""


def _pi(x: Val) -> tuple[float, float]:
    """pi as a head and tail in ``x``'s dtype."""
    if x.elem.bitwidth == 64:
        return math.pi, PI_TAIL64
    hi = float(np.float32(math.pi))
    return hi, float(np.float32(math.pi - hi))


def _sign_set(v: Val) -> Val:
    """``v`` has its sign bit set (``-0.0`` included: ``1/-0.0 = -inf``), with a compare
    and a select the vector unit has (no bit operations)."""
    return where(v.eq(0.0), 1.0 / v, v).lt(0.0)


def _isnan(v: Val) -> Val:
    return call(m.IsNanOp, v)


def arctan2(y: Val, x: Val) -> Val:
    """C99's ``atan2``: ``atan(|y|/|x|)`` moved to the quadrant of ``(x, y)``; both
    infinite gives ``pi/4`` or ``3pi/4``, ``y = 0`` gives ``0`` or ``pi``, signs of zeros
    kept."""
    ax, ay = x.abs(), y.abs()
    a = call(m.AtanOp, ay / ax)
    a = where(call(m.IsInfOp, ax), where(call(m.IsInfOp, ay), math.pi / 4, a), a)
    a = where(ay.eq(0.0), y.em.const(0.0, y.elem), a)
    pi_hi, pi_lo = _pi(x)
    r = where(_sign_set(x), (pi_hi - a) + pi_lo, a)
    r = where(_sign_set(y), -r, r)
    return where(_isnan(x), x, where(_isnan(y), y, r))


def _cosine_side(x: Val) -> Val:
    """``sqrt(1 - x^2)``: ``(1 - |x|)(1 + |x|)`` from ``|x| = 1/2`` (``1 - |x|`` is
    exact there, and ``x*x`` would lose the bits that cancel), ``1 - x*x`` below (an
    error of ``x*x`` is small next to ``1 - x*x >= 3/4``)."""
    a = x.abs()
    return where(a.lt(0.5), 1.0 - x * x, (1.0 - a) * (1.0 + a)).sqrt()


def arcsin(x: Val) -> Val:
    return arctan2(x, _cosine_side(x))


def arccos(x: Val) -> Val:
    return arctan2(_cosine_side(x), x)


def _huge(x: Val) -> float:
    """Beyond this ``|x|``, ``x^2 + 1`` rounds to ``x^2`` (and ``x^2`` may overflow)."""
    return 2.0 ** 12 if x.elem == f32 else 2.0 ** 28


def _odd(x: Val, r: Val) -> Val:
    """``r`` computed from ``|x|``, given ``x``'s sign (``-0.0`` kept)."""
    return where(x.eq(0.0), x, where(x.lt(0.0), -r, r))


def arcsinh(x: Val) -> Val:
    """``log1p(a + a^2 / (1 + sqrt(1 + a^2)))`` (no cancellation near 0), and
    ``log(a) + ln 2`` for huge ``a = |x|``."""
    a = x.abs()
    small = call(m.Log1pOp, a + a * a / ((a * a + 1.0).sqrt() + 1.0))
    big = call(m.LogOp, a) + math.log(2.0)
    return _odd(x, where(a.gt(_huge(x)), big, small))


def arccosh(x: Val) -> Val:
    """``log1p(t + sqrt(2t + t^2))``, ``t = x - 1`` below 2 (``t`` exact there);
    ``log(2x - 1/(x + sqrt(x^2 - 1)))`` above; ``log(x) + ln 2`` for huge ``x``;
    NaN below 1."""
    t = x - 1.0
    near = call(m.Log1pOp, t + (t * 2.0 + t * t).sqrt())
    mid = call(m.LogOp, x * 2.0 - 1.0 / (x + (x * x - 1.0).sqrt()))
    big = call(m.LogOp, x) + math.log(2.0)
    r = where(x.gt(_huge(x)), big, where(x.lt(2.0), near, mid))
    return where(x.lt(1.0), math.nan, r)


def arctanh(x: Val) -> Val:
    """``log1p(2a + 2a^2 / (1 - a)) / 2`` below ``a = 0.5``, ``log1p(2a / (1 - a)) / 2``
    above (``a = |x|``); ``+-inf`` at ``+-1``, NaN beyond."""
    a = x.abs()
    small = call(m.Log1pOp, a * 2.0 + a * 2.0 * a / (1.0 - a))
    large = call(m.Log1pOp, a * 2.0 / (1.0 - a))
    return _odd(x, where(a.lt(0.5), small, large) * 0.5)


def cbrt(x: Val) -> Val:
    """``exp2(log2|x| / 3)`` refined by one Newton step ``y + (|x|/y^2 - y) / 3`` (it
    squares the first guess's relative error), the sign put back; zeros and
    infinities are their own cube roots."""
    a = x.abs()
    third = 1.0 / 3.0
    y = call(m.Exp2Op, call(m.Log2Op, a) * third)
    y = y + (a / (y * y) - y) * third
    return where(call(m.IsInfOp, x), x, _odd(x, y))
