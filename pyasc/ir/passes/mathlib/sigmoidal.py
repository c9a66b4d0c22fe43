"""``tanh`` and ``erf`` for float32, branch-free.

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
* ``erf``: ``x + x P(x^2)`` for ``|x| < ERF_SPLIT``; above, ``1 - e^{Q(|x|)}`` where
  ``Q`` approximates ``log(erfc(t))`` (the form used by njuffa's erff), with ``|x|``
  clamped to ``ERF_ONE`` beyond which ``erf`` rounds to 1; both computed, one selected.
  NaN propagates through both branches; the polynomial branch keeps ``-0``.

Coefficients: ``benchmarks/math_remez.py``.
"""

from __future__ import annotations

import math

from pyasc.ir.passes.mathlib.emit import Val, copysign, fma, horner, mul_add, split, where
from pyasc.ir.passes.mathlib.exp import LOG2E, exp
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

ERF_SPLIT = 0.921875
ERF_ONE = 3.9375
# erf(x) = x + x P(x^2), |x| <= ERF_SPLIT; relative error 2^-29.3
ERF_P = (_H("0x1.06eba8p-3"), _H("-0x1.81274p-2"), _H("0x1.ce2d64p-4"), _H("-0x1.b80118p-6"),
         _H("0x1.544a1ap-8"), _H("-0x1.a60c26p-11"), _H("0x1.4f79c2p-14"))
# log(erfc(t)) = Q(t), ERF_SPLIT <= t <= ERF_ONE; error of erf 2^-33.6
ERF_Q = (_H("0x1.82d54p-13"), _H("-0x1.212b28p+0"), _H("-0x1.443808p-1"), _H("-0x1.bc06fap-4"),
         _H("0x1.9cf6dep-6"), _H("-0x1.13a0d6p-8"), _H("0x1.cf8dbep-12"),
         _H("-0x1.6dafd8p-16"))


def _with_sign_of(y: Val, x: Val) -> Val:
    """``y >= 0`` with the sign of ``x`` (``x`` NaN: ``y``, itself NaN then)."""
    return where(x.lt(0.0), -y, y)


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


def erf(x: Val) -> Val:
    """``erf(x)`` (1.25 ulp measured)."""
    a = x.abs()
    near = x + x * horner(x * x, ERF_P)
    far = 1.0 - exp(horner(a.min(ERF_ONE), ERF_Q))
    return where(a.lt(ERF_SPLIT), near, _with_sign_of(far, x))
