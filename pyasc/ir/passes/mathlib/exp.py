"""``exp``, ``exp2``, ``expm1`` and ``sigmoid`` for float32, branch-free.

Method (as in Cephes/SLEEF): ``x = q*ln2 + r`` with ``q = rint(x/ln2)`` and ``|r| <=
ln2/2``; ``r`` is computed Cody-Waite style with ``ln2 = LN2_HI + LN2_LO``, where
``LN2_HI`` has 16 significant bits so that ``q*LN2_HI`` is exact for every ``|q| <=
256``.  A minimax polynomial gives ``e^r`` (or ``e^r - 1``), and ``2^q`` is applied by
two exact multiplications with powers of two built from integer bits (:func:`ldexp`),
the second of which rounds into the denormal range or overflows exactly once.

Special values need no selects in ``exp``/``exp2``: the input is clamped first (``+-inf``
become finite values whose results are ``inf``/``0``), and a NaN input flows through
the polynomial into the result.  The polynomial coefficients come from
``benchmarks/math_remez.py`` (weighted minimax, rounded to float32).
"""

from __future__ import annotations

import math

from pyasc.ir.passes.mathlib.emit import Val, horner, ldexp, pow2, split, where
from pyasc.ir.types import i32

LOG2E = 1.4426950408889634
LN2_HI, LN2_LO = split(math.log(2.0), 16)

EXP_MAX = 104.0
"""|x| clamp: e^104 overflows float32 and e^-104 rounds to 0, and q stays in ldexp range."""

_H = float.fromhex
# e^r = 1 + r + r^2 P(r), |r| <= ln2/2; relative error 2^-27.7
EXP_P = (_H("0x1.fffffcp-2"), _H("0x1.55548cp-3"), _H("0x1.555858p-5"),
         _H("0x1.124214p-7"), _H("0x1.6aea2ep-10"))
# e^r - 1 = r + r^2 P(r), |r| <= ln2/2; relative error 2^-27.6
EXPM1_P = (_H("0x1p-1"), _H("0x1.55552cp-3"), _H("0x1.555502p-5"), _H("0x1.1155a8p-7"),
           _H("0x1.6d35aap-10"), _H("0x1.404cc8p-13"))
# 2^s = 1 + s P(s), |s| <= 1/2; relative error 2^-31.9
EXP2_P = (_H("0x1.62e43p-1"), _H("0x1.ebfbe0p-3"), _H("0x1.c6b06ep-5"), _H("0x1.3b2a64p-7"),
          _H("0x1.5da53ap-10"), _H("0x1.440bb6p-13"), _H("0x1.e1729ap-17"))


def reduce_ln2(x: Val) -> tuple[Val, Val]:
    """``(q, r)`` with ``x = q*ln2 + r``, ``q`` integral (float), ``|r| <= ln2/2``."""
    q = (x * LOG2E).round()
    r = x - q * LN2_HI - q * LN2_LO
    return q, r


def exp(x: Val) -> Val:
    """``e^x``: max error about 0.6 ulp (see docs/math-accuracy.md)."""
    q, r = reduce_ln2(x.clamp(-EXP_MAX, EXP_MAX))
    u = 1.0 + (r + r * r * horner(r, EXP_P))
    return ldexp(u, q.cast(i32))


def exp2(x: Val) -> Val:
    """``2^x``: ``q = rint(x)`` makes ``s = x - q`` exact, so only the polynomial errs."""
    xc = x.clamp(-160.0, 160.0)
    q = xc.round()
    s = xc - q
    u = 1.0 + s * horner(s, EXP2_P)
    return ldexp(u, q.cast(i32))


def expm1(x: Val) -> Val:
    """``e^x - 1`` as ``2^q * p + (2^q - 1)`` with ``p = e^r - 1``.

    For ``q`` in [-24, 60] both terms are exact or singly rounded, so the sum rounds
    once; for larger ``q`` the ``-1`` is negligible and ``ldexp(p + 1, q)`` handles the
    overflow.  Below -40 the result is -1 (to float32 precision) anyway.
    """
    q, r = reduce_ln2(x.clamp(-40.0, EXP_MAX))
    p = r + r * r * horner(r, EXPM1_P)
    qi = q.cast(i32)
    t = pow2(qi.min(127))
    near = (t - 1.0) + t * p
    far = ldexp(p + 1.0, qi)
    y = where(q.gt(60.0), far, near)
    return x.em.special(x.eq(0.0), x, y)  # -0 -> -0 (the sum above gives +0)


def sigmoid(x: Val) -> Val:
    """``1/(1+e^-x)`` computed from ``e = e^-|x|`` (never overflows): ``1/(1+e)`` for
    ``x >= 0`` and ``e/(1+e)`` below, which keeps tiny results (denormals) accurate."""
    e = exp(-x.abs())
    d = 1.0 + e
    return where(x.ge(0.0), 1.0 / d, e / d)
