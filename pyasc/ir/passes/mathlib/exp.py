"""``exp``, ``exp2``, ``expm1`` and ``sigmoid`` for float32, branch-free.

Method (as in Cephes/SLEEF): ``x = q*ln2 + r`` with ``q = rint(x/ln2)`` and ``|r| <=
ln2/2``; ``r`` is computed Cody-Waite style with ``ln2 = LN2_HI + LN2_LO``, where
``LN2_HI`` has 16 significant bits so that ``q*LN2_HI`` is exact for every ``|q| <=
256``.  A minimax polynomial gives ``e^r`` (or ``e^r - 1``), and ``2^q`` is applied by
two exact multiplications with powers of two built from integer bits (:func:`ldexp`),
the second of which rounds into the denormal range or overflows exactly once.

``exp2`` uses the same polynomial on ``s*ln2`` with ``s = x - rint(x)`` (exact), split
so that its head is exact too.  Special values need no selects in ``exp``/``exp2``: the
input is clamped first (``+-inf`` become finite values whose results are ``inf``/``0``),
and a NaN input flows through the polynomial into the result.  The polynomial coefficients come from
``benchmarks/math_remez.py`` (weighted minimax, rounded to float32).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pyasc.ir.passes.mathlib.emit import Val, horner, ldexp, pow2, split, where
from pyasc.ir.types import f32, i32

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


class Reduced(NamedTuple):
    """``x = q*ln2 + r`` with ``r = r_hi - c``: ``r_hi`` exact, ``c`` tiny (``r`` itself
    rounds; the expansions add ``r_hi`` last so that this rounding is not paid twice)."""

    q: Val
    r_hi: Val
    c: Val
    r: Val


def reduce_ln2(x: Val) -> Reduced:
    """``x = q*ln2 + r`` with ``q = rint(x/ln2)`` (float) and ``|r| <= ln2/2``."""
    q = (x * LOG2E).round()
    return _reduced(q, x - q * LN2_HI, q * LN2_LO)


def _reduced(q: Val, r_hi: Val, c: Val) -> Reduced:
    return Reduced(q, r_hi, c, r_hi - c)


def _exp_reduced(t: Reduced) -> Val:
    """``e^(q*ln2 + r) = 2^q (1 + r + r^2 P(r))``; the exact ``r_hi`` is added after the
    small terms, so the only large rounding errors are that sum's and the final one."""
    u = 1.0 + (t.r_hi + (t.r * t.r * horner(t.r, EXP_P) - t.c))
    return ldexp(u, t.q.cast(i32))


def exp(x: Val) -> Val:
    """``e^x`` (0.89 ulp measured, see docs/math-accuracy.md)."""
    return _exp_reduced(reduce_ln2(x.clamp(-EXP_MAX, EXP_MAX)))


def exp2(x: Val) -> Val:
    """``2^x = e^(s*ln2) * 2^q`` with ``q = rint(x)`` and ``s = x - q`` exact; ``s`` is
    split into 8 leading bits (``s_hi*LN2_HI`` exact) and the rest, so ``s*ln2`` takes
    the same exact-head + small-tail form as ``exp``'s reduced argument."""
    xc = x.clamp(-160.0, 160.0)
    q = xc.round()
    s = xc - q
    s_hi = (s.bits() & -(1 << 16)).as_float(f32)  # 8 significant bits: exact products
    c = -((s - s_hi) * LN2_HI + s * LN2_LO)
    return _exp_reduced(_reduced(q, s_hi * LN2_HI, c))


def expm1(x: Val) -> Val:
    """``e^x - 1`` as ``2^q * p + (2^q - 1)`` with ``p = e^r - 1``.

    For ``q`` in [-24, 60] both terms are exact or singly rounded, so the sum rounds
    once; for larger ``q`` the ``-1`` is negligible and ``ldexp(p + 1, q)`` handles the
    overflow.  Below -40 the result is -1 (to float32 precision) anyway.
    """
    t = reduce_ln2(x.clamp(-40.0, EXP_MAX))
    p = t.r_hi + (t.r * t.r * horner(t.r, EXPM1_P) - t.c)
    qi = t.q.cast(i32)
    scale = pow2(qi.min(127))
    near = (scale - 1.0) + scale * p
    far = ldexp(p + 1.0, qi)
    y = where(t.q.gt(60.0), far, near)
    return x.em.special(x.eq(0.0), x, y)  # -0 -> -0 (the sum above gives +0)


def sigmoid(x: Val) -> Val:
    """``1/(1+e^-x)`` from ``e = e^-|x|`` (never overflows; tiny results stay accurate):
    ``y0 = 1/d`` for ``x >= 0`` and ``e/d`` below, ``d = 1 + e``.  The rounding error
    ``d_lo`` of ``d`` is exact (Fast2Sum, ``1 >= e``) and is divided out to first order:
    ``y = y0 (1 - d_lo/d)``, where ``1/d`` is ``y0`` resp. ``1 - y0``, so no second
    division is needed."""
    e = exp(-x.abs())
    d = 1.0 + e
    d_lo = e - (d - 1.0)
    pos = x.ge(0.0)
    y0 = where(pos, 1.0, e) / d  # one division for both branches
    inv_d = where(pos, y0, 1.0 - y0)
    return y0 - y0 * inv_d * d_lo
