"""Generate the polynomial coefficients of ``pyasc/ir/passes/mathlib`` (Remez exchange).

Each approximation is a weighted minimax fit ``max |w(v) * (g(v) - sum c_k v^k)|`` on an
interval, found by the Remez exchange algorithm on a dense Chebyshev-spaced grid, with
the reference function evaluated in ``np.longdouble`` (64-bit mantissa on x86).  The
coefficients are then rounded to float32 one at a time, lowest power first, re-fitting
the higher ones after each rounding so that they absorb the rounding error of the
lower ones (the low-order terms dominate the result).

    python benchmarks/math_remez.py          # prints every table
    python benchmarks/math_remez.py exp      # one table

The printed hex floats are what the mathlib modules contain; ``FITS`` says which
function, interval and weight each table approximates.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

L = np.longdouble
Fn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Fit:
    """``g ~ sum_k c_k v^k`` for ``k < n`` on ``[lo, hi]`` minimizing ``|w*(g-p)|``.

    The interval must not contain 0 unless ``k = 0`` is fitted: the Remez exchange needs
    a Haar system, which ``v^k, k >= 1`` is not on an interval containing 0.
    """

    g: Fn
    w: Fn
    lo: float
    hi: float
    n: int


def _erf(v: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(t)) for t in v], dtype=L)


def _erfc(v: np.ndarray) -> np.ndarray:
    return np.array([math.erfc(float(t)) for t in v], dtype=L)


ERF_C0 = L(2) / np.sqrt(np.pi, dtype=L)  # -log(erfc(t)) = ERF_C0 t + O(t^2)


def _neg_log_erfc_rest(t: np.ndarray) -> np.ndarray:
    """``(-log(erfc(t)) - c0 t) / t^2`` (float64 ``erfc``: fit above ``t = 1e-3`` only)."""
    return (-np.log(_erfc(t)) - ERF_C0 * t) / (t * t)


def _atanh_series(z: np.ndarray) -> np.ndarray:
    """``2 atanh(s)/s - 2`` as a function of ``z = s^2``: sum of ``2 z^k / (2k + 1)``."""
    return sum(L(2) * z ** k / L(2 * k + 1) for k in range(1, 40))


def _exp_series(r: np.ndarray) -> np.ndarray:
    """``(e^r - 1 - r) / r^2`` without cancellation: sum of ``r^k / (k + 2)!``."""
    return sum(r ** k / L(math.factorial(k + 2)) for k in range(0, 30))


def _one_minus_exp2_series(u: np.ndarray) -> np.ndarray:
    """``(1 - e^{-2u} - 2u) / u^2`` without cancellation: ``-sum (-2)^k u^(k-2) / k!``."""
    return -sum(L(-2) ** k * u ** (k - 2) / L(math.factorial(k)) for k in range(2, 30))


LN2_HALF = 0.34657359027997264 * (1 + 2 ** -20)  # reduced-argument bound, with margin
ERF_ONE = 3.9375  # erf(x) rounds to 1.0f beyond about 3.9192
LN2_QUARTER = 0.34657359027997264 / 2 * (1 + 2 ** -16)  # tanh's reduced-argument bound
PIO4 = math.pi / 4 * (1 + 2 ** -16)
ATAN_T = 0.5 * (1 + 2 ** -16)  # atan's reduced-argument bound

FITS: dict[str, Fit] = {
    # exp(r) = 1 + r + r^2 P(r): relative error of the result
    "exp": Fit(_exp_series, lambda r: r * r / np.exp(r), -LN2_HALF, LN2_HALF, 5),
    # expm1(r) = r + r^2 P(r): relative error of the result
    "expm1": Fit(_exp_series, lambda r: np.abs(r * r / np.expm1(r)), -LN2_HALF, LN2_HALF, 6),
    # log1p(f) = 2s + s R(z), z = s^2, R(0) = 0: R's absolute error (fit R(z)/z)
    "log": Fit(lambda z: _atanh_series(z) / z, lambda z: z,
               1e-30, (3 - 2 * math.sqrt(2)) ** 2 * (1 + 2 ** -10), 4),
    # tanh: 1 - e^{-2u} = 2u + u^2 G(u), |u| <= ln2/4: relative error of 1 - e^{-2u}
    "tanh": Fit(_one_minus_exp2_series, lambda u: np.abs(u * u / -np.expm1(-2 * u)),
                -LN2_QUARTER, LN2_QUARTER, 5),
    # erf(t) = 1 - e^{-L(t)}, L(t) = -log(erfc(t)) = c0 t + t^2 R(t): error of erf, relative
    "erf_r": Fit(_neg_log_erfc_rest, lambda t: t * t * _erfc(t) / _erf(t), 1e-3, ERF_ONE, 10),
    # sin(r) = r + r^3 S(r^2): relative error
    "sin": Fit(lambda z: (np.sin(np.sqrt(z)) - np.sqrt(z)) / (z * np.sqrt(z)),
               lambda z: z * np.sqrt(z) / np.sin(np.sqrt(z)), 1e-6, PIO4 ** 2, 4),
    # cos(r) = 1 - r^2/2 + r^4 C(r^2): relative error
    "cos": Fit(lambda z: (np.cos(np.sqrt(z)) - 1 + z / 2) / (z * z),
               lambda z: z * z / np.cos(np.sqrt(z)), 1e-4, PIO4 ** 2, 4),
    # atan(t) = t + t^3 A(t^2), |t| <= 1/2: relative error
    "atan": Fit(lambda z: (np.arctan(np.sqrt(z)) - np.sqrt(z)) / (z * np.sqrt(z)),
                lambda z: z * np.sqrt(z) / np.arctan(np.sqrt(z)), 1e-6, ATAN_T ** 2, 6),
}


# ---------------------------------------------------------------------------- Remez


def _grid(lo: float, hi: float, n: int = 6000) -> np.ndarray:
    k = np.arange(n, dtype=L)
    return L(lo) + (L(hi) - L(lo)) * (1 - np.cos(np.pi * k / (n - 1))) / 2


def _alternating_extrema(err: np.ndarray, m: int) -> np.ndarray:
    """Indices of ``m`` alternating-sign local extrema of ``err`` (largest kept)."""
    sign = np.sign(err)
    runs = np.flatnonzero(np.diff(sign) != 0) + 1
    bounds = np.concatenate([[0], runs, [len(err)]])
    idx = [s + int(np.argmax(np.abs(err[s:e]))) for s, e in zip(bounds[:-1], bounds[1:],
                                                                  strict=True)]
    while len(idx) > m:
        mags = [abs(err[i]) for i in idx]
        j = int(np.argmin(mags))
        if j in (0, len(idx) - 1):
            idx.pop(j)
            continue
        # dropping an interior point leaves two same-sign neighbours: keep the larger
        idx.pop(j)
        k = j if abs(err[idx[j]]) < abs(err[idx[j - 1]]) else j - 1
        idx.pop(k)
    return np.array(idx)


def remez(g: Fn, w: Fn, lo: float, hi: float, powers: list[int],
          iters: int = 40) -> tuple[np.ndarray, float]:
    """Minimax coefficients for ``v^k``, ``k`` in ``powers``; returns (c, max error)."""
    xs = _grid(lo, hi)
    gx, wx = g(xs), w(xs)
    scale = max(abs(lo), abs(hi))
    u = xs / L(scale)  # scaled variable keeps the linear system well conditioned
    basis = np.stack([u ** p for p in powers], axis=1)
    m = len(powers) + 1
    ref = np.round(np.linspace(0, len(xs) - 1, m)).astype(int)
    coef = np.zeros(len(powers), dtype=L)
    for _ in range(iters):
        alt = np.array([(-1) ** j for j in range(m)], dtype=np.float64)
        a = np.column_stack([basis[ref].astype(np.float64), alt / wx[ref].astype(np.float64)])
        sol = np.linalg.solve(a, gx[ref].astype(np.float64))
        coef = sol[:-1].astype(L)
        err = wx * (gx - basis @ coef)
        new = _alternating_extrema(err, m)
        if len(new) < m or np.array_equal(new, ref):
            break
        ref = new
    err = wx * (gx - basis @ coef)
    return coef / L(scale) ** np.array(powers, dtype=L), float(np.max(np.abs(err)))


def fit_f32(fit: Fit) -> tuple[list[float], float]:
    """Coefficients rounded to float32 lowest power first, re-fitting the rest each time."""
    fixed: list[float] = []
    err = 0.0
    for k in range(fit.n):
        done = list(fixed)

        def rest(v: np.ndarray, done: list[float] = done) -> np.ndarray:
            return fit.g(v) - sum(L(c) * v ** j for j, c in enumerate(done))

        coef, err = remez(rest, fit.w, fit.lo, fit.hi, list(range(k, fit.n)))
        fixed.append(float(np.float32(coef[0])))
    xs = _grid(fit.lo, fit.hi)
    poly = sum(L(c) * xs ** j for j, c in enumerate(fixed))
    return fixed, float(np.max(np.abs(fit.w(xs) * (fit.g(xs) - poly))))


def _hex32(c: float) -> str:
    """``0x1.55548cp-3``: the float32 value as a hex float without trailing zeros."""
    mant, _, exp = float(c).hex().partition("p")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}p{exp}"


def main(names: list[str]) -> None:
    for name in names or list(FITS):
        coefs, err = fit_f32(FITS[name])
        print(f"# {name}: max weighted error {err:.3e} (2^{math.log2(err):.1f})")
        print(f"{name.upper()} = (" + ", ".join(f'_H("{_hex32(c)}")' for c in coefs) + ")")


if __name__ == "__main__":
    main(sys.argv[1:])
