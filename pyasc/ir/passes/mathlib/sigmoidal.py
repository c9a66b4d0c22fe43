"""``tanh`` and ``erf`` for float32, branch-free and each in one branch.

* ``tanh``: one formula for every ``x``, from ``w = e^{-2|x|}``:
  ``tanh|x| = (1 - w)/(1 + w) = h/(1 - h)`` with ``h = (1 - w)/2``.  ``|x|`` is reduced
  by multiples of ``ln2/2`` (``|x| = -n ln2 + u``, ``n`` a multiple of 1/2, ``|u| <=
  ln2/4``, ``s = 2^{2n}`` exact, ``w = s e^{-2u}``), so ``h = (1 - s)/2 + s u +
  s u^2 G(u)/2``: the first two terms are summed exactly (Fast2Sum) and the third is
  small, so ``h_hi + tail`` carries ``h`` beyond float32 precision.  One division gives
  ``y0 = h/(1 - h)`` (about 2 ulp), and ``y = h (1 + y0)`` (the same fixed point, with
  ``h`` as ``h_hi + tail``) damps that error by ``y/(1 + y) <= 1/2``.
  ``|x|`` is clamped to ``TANH_CUT``, where the result is exactly 1; the sign is copied
  from ``x`` (``-0`` and NaN exact).  See docs/math-accuracy.md.
* ``erf``: one formula for every ``x``: ``erf t = 1 - e^{-L(t)}`` with ``t = |x|``
  and ``L = -log(erfc)``, a polynomial ``L(t) = c0 t + t^2 R(t)`` on ``[0, ERF_ONE]``
  (``c0 = 2/sqrt(pi)`` as a float32 head + tail, so that small ``t`` keep their
  relative accuracy), ``t`` clamped to ``ERF_ONE`` beyond which ``erf`` rounds to 1.
  ``L = n ln2 + v`` (``n`` an integer, ``|v| <= ln2/2``) gives
  ``erf t = (1 - 2^-n) + 2^-n (1 - e^{-v})``: ``1 - 2^-n`` is exact, the second term the
  smaller one, ``1 - e^{-v}`` is ``expm1``'s polynomial, and no subtraction cancels
  (for small ``t``, ``n = 0`` and the result is ``1 - e^{-L}`` itself, about ``L``).
  The sign is copied from ``x`` bitwise (``-0`` and NaN exact).

Coefficients: ``benchmarks/math_remez.py``.
"""

from __future__ import annotations

import math

from pyasc.ir.passes.mathlib.emit import Val, copysign, fma, horner, mul_add, split
from pyasc.ir.passes.mathlib.exp import EXPM1_P, LOG2E
from pyasc.ir.types import f32

_H = float.fromhex

TANH_CUT = 9.010913
"""|x| clamp: tanh rounds to 1 from 9.01091; the expansion gives exactly 1 here."""
# 1 - e^{-2u} = 2u + u^2 G(u), |u| <= ln2/4; relative error 2^-25.6
TANH_G = (_H("-0x1.fffffep+0"), _H("0x1.5554aap+0"), _H("-0x1.55579ep-1"),
          _H("0x1.12327ap-2"), _H("-0x1.6ad3d6p-4"))
HALF_ROUND = 1.5 * 2.0 ** 22 + 63.5
"""Adding it rounds to a multiple of 1/2 (its ulp) and leaves ``2n + 127`` in the low
mantissa bits of the sum (``2 * HALF_ROUND = 127 mod 2^22``): shifted into the exponent
field they are ``2^{2n}``."""
LN2 = math.log(2.0)
LN2_HI, LN2_LO = split(LN2, 16)

ERF_ONE = 3.9375
"""|x| clamp: erf rounds to 1 from 3.9192; the expansion gives exactly 1 here."""
ERF_C0_HI, ERF_C0_LO = _H("0x1.20ep+0"), _H("-0x1.457decp-15")
"""``2/sqrt(pi)``: a 12-bit head (its products with 12-bit heads of ``t`` are exact)."""
# -log(erfc(t)) = c0 t + t^2 R(t), 0 <= t <= ERF_ONE; weighted error of erf 2^-27.5
ERF_R = (_H("0x1.45f308p-1"), _H("0x1.a4f3fp-4"), _H("-0x1.394468p-6"), _H("-0x1.00a09p-12"),
         _H("0x1.d3becap-10"), _H("-0x1.7c0faap-11"), _H("0x1.4bfd9p-13"),
         _H("-0x1.3a1eeap-16"), _H("0x1.fc3cfap-21"), _H("-0x1.f85606p-27"))
# 1 - e^{-v} = v + v^2 M(v): expm1's polynomial at -v, negated
ERF_M = tuple((-1.0) ** (k + 1) * c for k, c in enumerate(EXPM1_P))
INT_ROUND = 1.5 * 2.0 ** 23 + 127
"""Adding it rounds to an integer (its ulp) and leaves ``127 - n`` in the low mantissa
bits of the sum: shifted into the exponent field they are ``2^-n``."""

def _reduce_half_ln2(a: Val) -> tuple[Val, Val]:
    """``a = -n ln2 + u`` for ``0 <= a <= TANH_CUT``: ``(s, u)`` with ``s = 2^{2n}``
    and ``|u| <= ln2/4`` (``n`` rounded to a multiple of 1/2 by ``HALF_ROUND``)."""
    v = mul_add(a, -LOG2E, HALF_ROUND)
    s = (v.bits() << 23).as_float(f32)
    n = v - HALF_ROUND  # exact; -13 <= n <= 0
    if a.em.fma:  # float32 LN2 is 1.9e-9 off: u moves by |n| times that, y < 0.05 ulp
        return s, fma(n, LN2, a)
    return s, (a + n * LN2_HI) + n * LN2_LO  # Cody-Waite: n * LN2_HI and the sum exact


def tanh(x: Val) -> Val:
    """``tanh(x)`` in one branch (module doc; 1.5 ulp measured)."""
    a = x.abs().min(TANH_CUT)
    s, u = _reduce_half_ln2(a)
    us = u * s
    hs = mul_add(s, -0.5, 0.5)  # (1 - s)/2, exact
    h_hi = hs + us
    h_lo = (hs - h_hi) + us  # Fast2Sum: hs = 0 or hs >= 1/4 >= |us|
    tail = mul_add(us * u, horner(u, [c / 2 for c in TANH_G]), h_lo)
    h = h_hi + tail
    y0 = h / (1.0 - h)
    y = h_hi + mul_add(h_hi, y0, mul_add(tail, y0, tail))  # h (1 + y0), h = h_hi + tail
    return copysign(y, x)


def _neg_log_erfc(t: Val) -> tuple[Val, Val]:
    """``-log(erfc(t)) = head + tail`` for ``0 <= t <= ERF_ONE``: ``head = c0 t_hi``
    is exact (``t_hi``: the 12 leading bits of ``t``), ``tail`` the small rest."""
    t_hi = (t.bits() & -(1 << 12)).as_float(f32)
    rest = t * mul_add(t, horner(t, ERF_R), ERF_C0_LO)  # c0_lo t + t^2 R(t)
    return t_hi * ERF_C0_HI, mul_add(t - t_hi, ERF_C0_HI, rest)


def erf(x: Val) -> Val:
    """``erf(x)`` in one branch (module doc; 1.12 ulp measured)."""
    l_hi, l_lo = _neg_log_erfc(x.abs().min(ERF_ONE))
    k = mul_add(l_hi + l_lo, -LOG2E, INT_ROUND)
    s = (k.bits() << 23).as_float(f32)  # 2^-n, exact
    minus_n = k - INT_ROUND  # exact; -26 <= -n <= 0
    # v = head + tail: head exact (Sterbenz) wherever 2^-n leaves v's error visible
    head = mul_add(minus_n, LN2_HI, l_hi)
    tail = mul_add(minus_n, LN2_LO, l_lo)
    v = head + tail
    one_minus = head + mul_add(v * v, horner(v, ERF_M), tail)  # 1 - e^{-v}, head last
    return copysign(mul_add(s, one_minus, 1.0 - s), x)
