"""``pow(x, y)`` for float32 with any exponent, branch-free, computed in float64.

A loop calling ``powf`` (or ``llvm.pow``, which the JIT lowers to one libm call per
lane) does not vectorize: a focal loss ``(1 - p) ** gamma`` with a run-time ``gamma``
spent nearly all its time in those calls.  Here ``x ** y = 2^(y * log2|x|)`` with both
steps in float64, the way glibc's own ``powf`` works:

* ``log2|x|``: the float32 bits split ``|x| = 2^k * m`` with ``m`` in
  ``[sqrt(2)/2, sqrt(2))`` (denormals scaled by ``2^23`` first); with ``t = (m-1)/(m+1)``,
  ``ln m = 2t (1 + t^2/3 + t^4/5 + ...)`` (``t^2 <= 0.0295``: nine terms leave a relative
  error below ``2^-50``), so ``log2|x| = k + ln(m)/ln 2``, exact for powers of two;
* ``2^z``, ``z = y * log2|x|`` clamped to ``[-200, 200]`` (beyond it the float32 result is
  ``0`` or ``inf`` anyway): ``n = rint(z)``, ``r = z - n`` (exact, ``|r| <= 1/2``), the
  Taylor series of ``e^(r ln 2)`` to degree 12 (error below ``2^-51``) times ``2^n``
  built from bits; the one rounding to float32 at the end gives denormals and overflow.

The float64 result is within about ``2^-43`` relative of ``|x|^y``, so the float32 result
is the correctly rounded one except where ``|x|^y`` lies that close to a rounding
boundary (then one unit in the last place away; glibc's ``powf`` promises 0.82 ulp).
Exact cases (``2^k``, ``9^0.5``) come out exact.  An integral ``y`` with ``|y| < 32``
(a run-time ``gamma = 2.0``) is multiplied out in float64 instead, selected per element:
the same value as the constant exponent's expansion (``x*x`` rounded once for 2).

Special values follow C99/numpy ``powf``: ``x**0 = 1`` and ``1**y = 1`` (NaN included),
``(-1)**(+-inf) = 1``, NaN otherwise propagates; a negative finite ``x`` with a
non-integer ``y`` gives NaN; a negative ``x`` (``-0`` and ``-inf`` included) with an odd
integer ``y`` gives a negative result; zeros and infinities give ``0``/``inf`` through
``log2(0) = -inf`` and ``log2(inf) = inf``.
"""

from __future__ import annotations

import math

from pyasc.ir.passes.mathlib.emit import Val, horner, pow2, where
from pyasc.ir.types import f32, f64, i32, i64

SQRT_HALF_BITS = 0x3F3504F3  # float32 bits of sqrt(2)/2
ONE_BITS = 0x3F800000
MANT_MASK = 0x007FFFFF
NAN, INF = math.nan, math.inf

ATANH_SERIES = tuple(1.0 / (2 * k + 1) for k in range(9))
"""``atanh(t)/t = sum t^(2k)/(2k+1)``: ``ln m = 2 t * ATANH(t^2)``."""
EXP2_SERIES = tuple(math.log(2.0) ** k / math.factorial(k) for k in range(13))
"""``2^r = sum (r ln 2)^k / k!`` for ``|r| <= 1/2``."""
Z_LIMIT = 200.0
INT_BITS = 5
"""Integral exponents below ``2^INT_BITS`` in magnitude are multiplied out exactly as
constant ones are (``power.int_power``): ``x**2`` is then ``x*x`` rounded once, as numpy's
fast path computes it, where ``2^(2 log2 x)`` could land on the other side of a tie."""


def log2_abs(x: Val) -> Val:
    """``log2|x|`` in float64 for a float32 ``x`` (``-inf`` at 0, ``inf`` at inf)."""
    ax = x.abs()
    ix = ax.bits()
    tiny = ix.lt(0x00800000)
    ix = where(tiny, (ax * 2.0 ** 23).bits(), ix) + (ONE_BITS - SQRT_HALF_BITS)
    k = (ix >> 23) - 0x7F
    k = where(tiny, k - 23, k)
    m = ((ix & MANT_MASK) + SQRT_HALF_BITS).as_float(f32).cast(f64)
    t = (m - 1.0) / (m + 1.0)
    ln_m = (2.0 * t) * horner(t * t, ATANH_SERIES)
    y = k.cast(f64) + ln_m * (1.0 / math.log(2.0))
    y = x.em.special(ax.eq(0.0), -INF, y)
    return x.em.special(ax.eq(INF), INF, y)


def exp2_f64(z: Val) -> Val:
    """``2^z`` for float64 ``z`` whose float32 rounding is wanted (clamped; NaN kept)."""
    z = z.clamp(-Z_LIMIT, Z_LIMIT)
    z = where(z.ne(z), 0.0, z)  # a NaN must not reach the float-to-int conversion
    n = z.round()
    p = horner(z - n, EXP2_SERIES)
    return p * pow2(n.cast(i64), f64)


def int_power_f64(ax: Val, y: Val, small: Val) -> Val:
    """``|x|^y`` in float64 by binary powering where ``small`` (``y`` integral, ``|y| <
    2^INT_BITS``), the multiplications of the constant-exponent expansion in the same
    order; elsewhere garbage that the caller does not select."""
    n = where(small, y.abs(), 0.0).cast(i32)
    base, acc = ax.cast(f64), None
    for bit in range(INT_BITS):
        take = ((n >> bit) & 1).ne(0)
        acc = where(take, base, 1.0) if acc is None else where(take, acc * base, acc)
        if bit + 1 < INT_BITS:
            base = base * base
    assert acc is not None
    return where(y.lt(0.0), 1.0 / acc, acc)


def powf(x: Val, y: Val) -> Val:
    """``x ** y`` for float32 ``x`` and ``y`` of the same shape (see module doc)."""
    integral = y.floor().eq(y)
    small = integral & y.abs().lt(float(1 << INT_BITS))
    mag64 = exp2_f64(y.cast(f64) * log2_abs(x))
    mag = where(small, int_power_f64(x.abs(), y, small), mag64).cast(f32)
    half = y * 0.5
    odd = integral & half.floor().ne(half)
    r = where(x.bits().lt(0) & odd, -mag, mag)  # the sign bit: -0 and -inf included
    r = where(x.lt(0.0) & x.abs().ne(INF), where(integral, r, NAN), r)
    em = x.em
    r = em.special(x.ne(x) | y.ne(y), NAN, r)
    r = em.special(x.abs().eq(1.0) & y.abs().eq(INF), 1.0, r)
    return where(x.eq(1.0) | y.eq(0.0), 1.0, r)
