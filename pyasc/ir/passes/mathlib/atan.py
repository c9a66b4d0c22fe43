"""``atan`` for float32, branch-free: a three-way reduction and a fitted polynomial.

``|x|`` is mapped to ``t`` with ``|t| <= 1/2`` and an offset: ``t = -1/|x|`` (offset
``pi/2``) above ``tan(3pi/8)``, ``t = (|x| - 1)/(|x| + 1)`` (offset ``pi/4``) above
``1/2``, else ``t = |x|``; the three cases are one division whose operands are chosen
by selects.  The middle split is at 1/2, not Cephes' ``tan(pi/8)``, so that ``|x| - 1``
is exact (Sterbenz) wherever it is used.  ``atan(t) = t + t^3 A(t^2)`` (minimax,
relative error 2^-31.7, ``benchmarks/math_remez.py atan``); the offsets are added as
float32 head + tail.
``atan(+-inf) = +-pi/2``, NaN stays NaN, ``atan(-0) = -0`` (a select, left out under
fastmath).  ``arctan2``, ``arcsin`` and ``arccos`` are composed from it in the
frontend (``pyasc/frontend/composed.py``).
"""

from __future__ import annotations

import math

import numpy as np

from pyasc.ir.passes.mathlib.emit import Val, horner, where

_H = float.fromhex
# atan(t) = t + t^3 A(t^2), |t| <= 1/2; relative error 2^-31.7
ATAN_A = (_H("-0x1.555552p-2"), _H("0x1.999744p-3"), _H("-0x1.24503p-3"),
          _H("0x1.c07266p-4"), _H("-0x1.480d18p-4"), _H("0x1.3fd44p-5"))
TAN_3PIO8 = math.tan(3 * math.pi / 8)
MIDDLE = 0.5


def head_tail(value: float) -> tuple[float, float]:
    """``value`` as a float32 head and the float32 of the rest."""
    hi = float(np.float32(value))
    return hi, float(np.float32(value - hi))


PIO2 = head_tail(math.pi / 2)
PIO4 = head_tail(math.pi / 4)


def atan(x: Val) -> Val:
    a = x.abs()
    big, mid = a.gt(TAN_3PIO8), a.gt(MIDDLE)
    zero = x.em.const(0.0, x.elem)
    num = where(big, -1.0, where(mid, a - 1.0, a))
    den = where(big, a, where(mid, a + 1.0, 1.0))
    t = num / den
    z = t * t
    p = t + t * (z * horner(z, ATAN_A))
    hi = where(big, PIO2[0], where(mid, PIO4[0], zero))
    lo = where(big, PIO2[1], where(mid, PIO4[1], zero))
    r = hi + (p + lo)
    y = where(x.lt(0.0), -r, r)
    return x.em.special(x.eq(0.0), x, y)
