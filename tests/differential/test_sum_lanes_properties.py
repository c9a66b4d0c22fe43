"""Seeded property tests of the CPU ``sum-lanes`` pass (forms in ``sum_lanes_forms``):
each seed draws a loop sum (dtype, update, term, initial value, bounds, per-row or
whole, layout, special values) and 1-3 calls of sizes around the pass's thresholds on
1-3 threads.  A loop the pass rewrote must have the bits of the compiled ``np.sum`` of
the same terms when it starts at ``+0.0``, be within ``np.sum``'s bound of the exact
sum otherwise (zeros signed as in Python), and a loop it left alone the Python loop's
bits.  The default run draws a few seeds; the long sweep is ``slow`` (README,
"Differential fuzzing at scale")::

    PYTHONPATH=. python -m pytest -m slow -n 0 tests/differential/test_sum_lanes_properties.py
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
import sum_lanes_forms as slf
from progen import load

from pyasc import hybrid


def np_sum(t):
    return np.sum(t)


@cache
def _whole():
    return hybrid(np_sum, target="cpu", dynamic_shape=True)


def _same(got: np.generic, want: np.generic) -> bool:
    """Equal bits, any NaN equal to any NaN."""
    return bool(np.isnan(got) and np.isnan(want)) or \
        np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _within_bound(got: np.generic, want: np.generic, terms: np.ndarray, s0: float) -> bool:
    """``got`` within ``np.sum``'s bound of the exact ``s0 + sum(terms)`` (at most 12
    roundings per term in its block, 2 ulp for the block sums), zero signs as Python's
    (a sum is ``-0.0`` only when every addend is: any order gives the same sign)."""
    if not np.isfinite(want) or not np.isfinite(got):
        return _same(got, want) or (bool(np.isnan(got)) and bool(np.isnan(want)))
    if want == 0 and got == 0:
        return bool(np.signbit(got) == np.signbit(want))
    wide = terms.astype(np.float64)
    exact = math.fsum([float(s0), *wide.tolist()])
    eps = float(np.finfo(got.dtype).eps)
    scale = abs(float(s0)) + float(np.abs(wide).sum())
    return abs(float(got) - exact) <= 16 * eps * scale + 2 * eps * abs(exact)


def _expected_ok(case: slf.LoopSum, laned: bool, got, want, x, y, s0) -> bool:
    """The claim for one result (one row of a per-row sum).  ``laned``: the kernel holds
    a lane loop, which may be only one version of the loop (``hoist-checks`` versions
    ``range(n)`` of a scalar; ``output-accumulators`` may run the other in order): the
    loop's own bits are then right too."""
    if not laned or _same(got, want):
        return _same(got, want)
    terms = case.terms(x, y)
    if case.init == "zero":
        return _same(got, _whole()(np.ascontiguousarray(terms)))
    start = s0 if case.init == "arg" else -0.0
    return _within_bound(got, want, terms, start)


def check_case(case: slf.LoopSum, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    prog = load(case.source)
    compiled = hybrid(prog, target="cpu", dynamic_shape=case.dynamic)
    threads = np.random.default_rng(seed + 7).integers(1, 4, len(case.calls))
    for args, nthreads in zip(case.calls, threads, strict=True):
        monkeypatch.setenv("PYASC_NUM_THREADS", str(nthreads))
        want, got = prog(*args), compiled(*args)
        laned = "lanes = 16" in compiled.kernel(*args).loop_ir
        x, y, _, s0 = args
        pairs = zip(got, want, x, y, strict=True) if case.rows else [(got, want, x, y)]
        for k, (g, w, xr, yr) in enumerate(pairs):
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            assert _expected_ok(case, laned, g, w, xr, yr, s0), (
                f"seed {seed} row {k} laned={laned} threads={nthreads} "
                f"shape={x.shape} strides={x.strides} s0={s0!r}: got {g!r}, python {w!r}"
                f"\n{case.source}")


@pytest.mark.parametrize("seed", range(8))
def test_loop_sums_keep_the_bits_of_np_sum_or_of_the_loop(seed, monkeypatch):
    check_case(slf.draw(seed), seed, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 160))
def test_loop_sums_sweep(seed, monkeypatch):
    check_case(slf.draw(seed), seed, monkeypatch)
