"""``tanh`` and ``erf`` for float32, branch-free: an odd polynomial near 0 and an
``exp``-based formula beyond, both computed for every element and joined by a select.

* ``tanh``: ``x + x^3 P(x^2)`` for ``|x| < TANH_SPLIT``; above, ``1 - 2/(e^{2|x|} + 1)``
  with the sign of ``x``.  ``e^{2|x|}`` overflowing to ``inf`` gives exactly ``+-1``.
* ``erf``: ``x + x P(x^2)`` for ``|x| < ERF_SPLIT``; above, ``1 - e^{Q(|x|)}`` where
  ``Q`` approximates ``log(erfc(t))`` (the form used by njuffa's erff), with ``|x|``
  clamped to ``ERF_ONE`` beyond which ``erf`` rounds to 1.

NaN propagates through both branches.  The polynomial branch ``x + x*(...)`` is exact
for denormals; it keeps ``-0`` for ``erf`` but not for ``tanh`` (whose cubic term is
negative: ``-0 + +0 = +0``), which selects ``x`` at zero (not under fastmath).
Coefficients: ``benchmarks/math_remez.py``.
"""

from __future__ import annotations

from pyasc.ir.passes.mathlib.emit import Val, horner, where
from pyasc.ir.passes.mathlib.exp import exp

_H = float.fromhex

TANH_SPLIT = 0.5625
# tanh(x) = x + x^3 P(x^2), |x| <= TANH_SPLIT; relative error 2^-31.2
TANH_P = (_H("-0x1.555554p-2"), _H("0x1.111084p-3"), _H("-0x1.b9f496p-5"),
          _H("0x1.63cd8ep-6"), _H("-0x1.0d44e0p-7"), _H("0x1.1e08e0p-9"))

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


def tanh(x: Val) -> Val:
    """``tanh(x)`` (1.36 ulp measured)."""
    a = x.abs()
    z = x * x
    near = x + x * (z * horner(z, TANH_P))
    far = 1.0 - 2.0 / (exp(a + a) + 1.0)
    y = where(a.lt(TANH_SPLIT), near, _with_sign_of(far, x))
    return x.em.special(x.eq(0.0), x, y)  # -0: the negative x^3 term makes it +0


def erf(x: Val) -> Val:
    """``erf(x)`` (1.25 ulp measured)."""
    a = x.abs()
    near = x + x * horner(x * x, ERF_P)
    far = 1.0 - exp(horner(a.min(ERF_ONE), ERF_Q))
    return where(a.lt(ERF_SPLIT), near, _with_sign_of(far, x))
