"""``sin`` and ``cos`` for float32, branch-free, accurate for ``|x| <= TRIG_MAX``.

Range reduction runs in float64: ``q = rint(x * 2/pi)`` and ``r = x - q*pi/2`` with
``pi/2`` in three parts (Cody-Waite), the first two of 23 significant bits so that
``q*part`` is exact for ``|q| < 2^30``; the 99 bits of ``pi/2`` keep ``r`` accurate even
for the float32 inputs closest to a multiple of ``pi/2``.  ``r`` (rounded to float32,
``|r| <= pi/4``) feeds minimax polynomials for ``sin`` and ``cos`` and the quadrant
``q mod 4`` picks and negates them with selects.

Beyond ``TRIG_MAX = 2^30`` the products ``q*part`` round and the error grows with
``|x|``: by ``|x| ~ 2^40`` the result is noise, though always in ``[-1, 1]`` (``r`` is
clamped).  Such arguments have float32 spacings of 128 and more, so they carry no phase
information anyway; numpy (libm) still reduces them exactly.
``+-inf`` and NaN give NaN.  ``sin(-0) = -0`` (a select, left out under fastmath).
"""

from __future__ import annotations

import math
from fractions import Fraction

from pyasc.ir.passes.mathlib.emit import Val, horner, where
from pyasc.ir.types import f32, f64, i32

TRIG_MAX = 2.0 ** 30
PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628")


def cody_waite_parts(value: Fraction, bits: int, n: int) -> tuple[float, ...]:
    """``value`` as ``n`` doubles: ``n-1`` heads of ``bits`` significant bits each (exact
    products with integers below ``2^(53-bits)``) and a full-precision tail."""
    parts: list[float] = []
    rest = value
    for _ in range(n - 1):
        _, e = math.frexp(float(rest))
        scale = Fraction(2) ** (bits - e)
        head = Fraction(round(rest * scale)) / scale
        parts.append(float(head))
        rest -= head
    return (*parts, float(rest))


PIO2 = cody_waite_parts(PI / 2, 23, 3)
TWO_OVER_PI = float(2 / PI)
R_MAX = 0.8  # > pi/4: the polynomials stay within [-1, 1] up to here

_H = float.fromhex
# sin(r) = r + r^3 S(r^2), |r| <= pi/4; relative error 2^-31.9
SIN_S = (_H("-0x1.555556p-3"), _H("0x1.111174p-7"), _H("-0x1.a05954p-13"),
         _H("0x1.7c0e2ap-19"))
# cos(r) = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4; relative error 2^-36.4
COS_C = (_H("0x1.555556p-5"), _H("-0x1.6c175ep-10"), _H("0x1.a071c6p-16"),
         _H("-0x1.360c82p-22"))


def _reduce(x: Val) -> tuple[Val, Val, Val]:
    """``(sin r, cos r, q)`` for ``x = q*pi/2 + r`` (``q`` as i32)."""
    xd = x.cast(f64)
    q = (xd * TWO_OVER_PI).round()
    r = (xd - q * PIO2[0] - q * PIO2[1] - q * PIO2[2]).cast(f32)
    r = r.clamp(-R_MAX, R_MAX)  # only binds beyond TRIG_MAX: keeps results in [-1, 1]
    z = r * r
    s = r + r * (z * horner(z, SIN_S))
    c = 1.0 + z * (-0.5 + z * horner(z, COS_C))
    return s, c, q.cast(i32)


def _quadrant(qi: Val, bit: int, plus: int = 0) -> Val:
    """``(q + plus) & bit != 0``: bit 0 swaps sin and cos, bit 1 negates."""
    return ((qi + plus) & bit).ne(0)


def sin(x: Val) -> Val:
    """``sin(x)``: quadrants 0..3 give ``s, c, -s, -c``."""
    s, c, qi = _reduce(x)
    y = where(_quadrant(qi, 1), c, s)
    y = where(_quadrant(qi, 2), -y, y)
    return x.em.special(x.eq(0.0), x, y)


def cos(x: Val) -> Val:
    """``cos(x)``: quadrants 0..3 give ``c, -s, -c, s``."""
    s, c, qi = _reduce(x)
    y = where(_quadrant(qi, 1), s, c)
    return where(_quadrant(qi, 2, plus=1), -y, y)
