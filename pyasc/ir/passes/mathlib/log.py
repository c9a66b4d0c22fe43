"""``log``, ``log2``, ``log10``, ``log1p`` for float32, branch-free.

Method (fdlibm/musl): integer bit arithmetic splits ``x = 2^k * (1 + f)`` with ``1 + f``
in ``[sqrt(2)/2, sqrt(2))``; with ``s = f/(2+f)``, ``log(1+f) = 2s + s*R(s^2)`` where
``R`` is a minimax polynomial, and the sum is arranged as ``f - hfsq + s*(hfsq + R)``
(``hfsq = f*f/2``) so that the big terms are exact and only small ones round.  ``k*ln2``
is split into an exact ``k*LN2_HI`` plus ``k*LN2_LO``.  ``log2``/``log10`` split
``f - hfsq`` into a 12-bit ``hi`` (exact products with the 12-bit ``1/ln2`` or
``1/ln10`` heads) and a ``lo`` rest; ``log1p`` adds the rounding error of ``1 + x`` back
as a first-order correction ``c/u``.

Denormal inputs are scaled by ``2^23`` first; negative and NaN inputs give NaN, zero
gives ``-inf``, ``+inf`` gives ``+inf`` (selects; left out under fastmath).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pyasc.ir.passes.mathlib.emit import Val, horner, split, where
from pyasc.ir.passes.mathlib.exp import LN2_HI, LN2_LO
from pyasc.ir.types import f32

_H = float.fromhex
# log1p(f) = 2s + s R(z), z = s^2 <= 0.0295; R(z) = z * LOG_R(z), absolute error 2^-33.8
LOG_R = (_H("0x1.555556p-1"), _H("0x1.9998f4p-2"), _H("0x1.248ea8p-2"), _H("0x1.d78e6ep-3"))

IVLN2_HI, IVLN2_LO = split(1 / math.log(2.0), 12)
IVLN10_HI, IVLN10_LO = split(1 / math.log(10.0), 12)
LOG10_2_HI, LOG10_2_LO = split(math.log10(2.0), 16)

SQRT_HALF_BITS = 0x3F3504F3  # float32 bits of sqrt(2)/2
ONE_BITS = 0x3F800000
MANT_MASK = 0x007FFFFF
NAN, INF = math.nan, math.inf


class Parts(NamedTuple):
    """``x = 2^k (1 + f)`` (``k`` as float), ``s = f/(2+f)``, ``hfsq = f^2/2`` and
    ``r = R(s^2)``, where ``log(1+f) = 2s + s*R``."""

    k: Val
    f: Val
    s: Val
    hfsq: Val
    r: Val


def _split_exponent(ix: Val) -> tuple[Val, Val]:
    """``(k, f)`` from the bits of a positive normal float."""
    ix = ix + (ONE_BITS - SQRT_HALF_BITS)
    k = (ix >> 23) - 0x7F
    f = ((ix & MANT_MASK) + SQRT_HALF_BITS).as_float(f32) - 1.0
    return k, f


def _parts(k: Val, f: Val) -> Parts:
    s = f / (2.0 + f)
    z = s * s
    return Parts(k.cast(f32), f, s, 0.5 * f * f, z * horner(z, LOG_R))


def _reduce(x: Val) -> Parts:
    """Parts of a positive ``x``; denormals are scaled into the normal range first."""
    ix = x.bits()
    if x.em.fastmath:
        return _parts(*_split_exponent(ix))
    tiny = ix.lt(0x00800000)  # also true for negative x, which end up NaN
    k, f = _split_exponent(where(tiny, (x * 2.0 ** 23).bits(), ix))
    return _parts(where(tiny, k - 23, k), f)


def _specials(x: Val, y: Val, zero_at: float = 0.0) -> Val:
    """NaN below ``zero_at`` (and for NaN), ``-inf`` at it, ``+inf`` at ``+inf``."""
    if x.em.fastmath:
        return y
    y = where(x.eq(INF), INF, y)
    y = where(x.eq(zero_at), -INF, y)
    return where(x.ge(zero_at), y, NAN)  # ordered: NaN inputs fail the test too


def _hi_lo(p: Parts) -> tuple[Val, Val]:
    """``f - hfsq + s*(hfsq + R)`` as ``hi + lo`` with a 12-bit ``hi``."""
    hi = ((p.f - p.hfsq).bits() & -4096).as_float(f32)  # clear the low 12 mantissa bits
    lo = p.f - hi - p.hfsq + p.s * (p.hfsq + p.r)
    return hi, lo


def log(x: Val) -> Val:
    """Natural logarithm."""
    p = _reduce(x)
    y = p.s * (p.hfsq + p.r) + p.k * LN2_LO - p.hfsq + p.f + p.k * LN2_HI
    return _specials(x, y)


def log2(x: Val) -> Val:
    """Base-2 logarithm: ``k + (hi + lo)/ln2`` with an exact ``hi*IVLN2_HI``."""
    p = _reduce(x)
    hi, lo = _hi_lo(p)
    y = (lo + hi) * IVLN2_LO + lo * IVLN2_HI + hi * IVLN2_HI + p.k
    return _specials(x, y)


def log10(x: Val) -> Val:
    """Base-10 logarithm: ``k*log10(2) + (hi + lo)/ln10``, big terms exact, added last."""
    p = _reduce(x)
    hi, lo = _hi_lo(p)
    y = (p.k * LOG10_2_LO + (lo + hi) * IVLN10_LO + lo * IVLN10_HI + hi * IVLN10_HI
         + p.k * LOG10_2_HI)
    return _specials(x, y)


def log1p(x: Val) -> Val:
    """``log(1 + x)``: reduce ``u = 1 + x`` and correct by ``c/u``, ``c = (1+x) - u``.

    When ``u`` is already in ``[sqrt(2)/2, sqrt(2))`` (``k = 0``) ``f = x`` exactly; for
    ``k >= 25`` the rounding error of ``u`` is below the result's precision.
    """
    u = 1.0 + x
    k, f = _split_exponent(u.bits())
    c = where(k.ge(2), 1.0 - (u - x), x - (u - 1.0)) / u
    k0 = k.eq(0)
    p = _parts(k, where(k0, x, f))
    c = where(k0 | k.ge(25), 0.0, c)
    y = p.s * (p.hfsq + p.r) + (p.k * LN2_LO + c) - p.hfsq + p.f + p.k * LN2_HI
    y = x.em.special(x.abs().lt(2.0 ** -24), x, y)  # where log1p(x) rounds to x: keeps -0
    return _specials(x, y, zero_at=-1.0)
