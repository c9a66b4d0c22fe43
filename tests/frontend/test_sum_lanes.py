"""``sum-lanes``: a float accumulator of a user loop (``s += e``) is summed in ``np.sum``'s
order (16 lanes, blocks of 128, a compensated sum of the blocks; chunks over threads at
the top level), so the loop has the bits of ``np.sum`` of the same terms; with
``sum_lanes=False`` it has the bits of the Python loop.  What the rule leaves alone keeps
the loop's order (checked exactly against Python)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import SUM, check

from pyasc import hybrid

SIZES = [16, 17, 127, 128, 129, 1000, 65537, 200_003]


def squared_error(a, b):
    s = np.float32(0.0)
    for i in range(a.shape[0]):
        d = a[i] - b[i]
        s += d * d
    return s


def squared_error_whole(a, b):
    d = a - b
    return np.sum(d * d)


laned = hybrid(squared_error, target="cpu")
ordered = hybrid(squared_error, target="cpu", sum_lanes=False)
whole = hybrid(squared_error_whole, target="cpu")


@pytest.mark.parametrize("n", SIZES)
def test_a_loop_sum_has_the_bits_of_np_sum_and_ordered_those_of_the_loop(n):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    got = laned(a, b)
    assert got.dtype == np.float32 and got.tobytes() == whole(a, b).tobytes()
    assert ordered(a, b).tobytes() == squared_error(a, b).tobytes()


def test_the_sum_does_not_depend_on_the_thread_count(monkeypatch):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(300_001).astype(np.float32) for _ in range(2))
    results = set()
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("PYASC_NUM_THREADS", threads)
        results.add(laned(a, b).tobytes())
    assert len(results) == 1


def test_lanes_are_far_more_accurate_than_the_sequential_float32_sum():
    rng = np.random.default_rng(5)
    a = rng.random(1 << 20).astype(np.float32) + 1
    b = np.zeros_like(a)
    exact = float(np.sum((a.astype(np.float64)) ** 2))
    lane_error = abs(float(laned(a, b)) - exact) / exact
    ordered_error = abs(float(ordered(a, b)) - exact) / exact
    assert lane_error < 1e-6 < ordered_error


@hybrid
def subtracted(x, s0):
    s = s0
    for i in range(x.shape[0]):
        s -= x[i] * 0.5
    return s


@hybrid
def two_sums_with_stores_and_a_guard(x, out):
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        v = x[i] * 2.0
        out[i] = v
        if v > 0:
            s += v
        t = t + x[i]
    return s, t


@pytest.mark.parametrize("n", [16, 33, 1000])
def test_other_forms_within_the_sum_budget(n):
    x = np.random.default_rng(n).standard_normal(n)
    check(subtracted, x, 1.5, rtol=SUM(n, 1.0))
    check(two_sums_with_stores_and_a_guard, x, np.zeros(n), rtol=SUM(n, 2.0))


@hybrid(target="cpu")
def plain_sum(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_inf_and_nan_terms_give_the_loops_result():
    x = np.ones(1000, np.float32)
    x[400] = np.inf
    assert plain_sum(x) == np.inf
    x[700] = -np.inf
    assert np.isnan(plain_sum(x))
    x[400:800] = 1
    x[5] = np.nan
    assert np.isnan(plain_sum(x))
    big = np.full(1000, 3e38, np.float32)  # overflows in any order
    assert plain_sum(big) == np.inf


@hybrid
def kahan(x):
    s = 0.0
    c = 0.0
    for i in range(x.shape[0]):
        y = x[i] - c
        t = s + y
        c = (t - s) - y
        s = t
    return s


@hybrid
def prefix(x, out):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return s


@hybrid
def half_sum(x):
    s = np.float16(0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@hybrid
def short_window(x):
    s = 0.0
    for i in range(9):
        s += x[i]
    return s


@hybrid
def max_and_sum(x):
    s = 0.0
    m = x[0]
    for i in range(x.shape[0]):
        s += x[i]
        m = max(m, x[i])
    return s, m


@pytest.mark.parametrize("fn,args", [
    (kahan, (np.random.default_rng(1).standard_normal(1000),)),
    (prefix, (np.random.default_rng(2).standard_normal(300).astype(np.float32),
              np.zeros(300, np.float32))),
    (half_sum, (np.random.default_rng(3).standard_normal(300).astype(np.float16),)),
    (short_window, (np.random.default_rng(4).standard_normal(9),)),
    (max_and_sum, (np.random.default_rng(5).standard_normal(500),)),
])
def test_what_the_rule_leaves_alone_keeps_the_loops_bits(fn, args):
    """Sums read in the body (Kahan, a prefix sum), float16 (every step rounds to
    float16), static trip counts below 16 and loops carrying anything else: exact."""
    check(fn, *args)


def test_the_rewrite_happens_and_the_option_turns_it_off():
    a = np.ones(64, np.float32)

    assert "lanes = 16" in laned.kernel(a, a).loop_ir
    assert "lanes = " not in ordered.kernel(a, a).loop_ir


def from_negative_zero(x):
    s = np.float32(-0.0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@pytest.mark.parametrize("threads", ["1", "3"])
def test_a_sum_from_negative_zero_over_negative_zeros_stays_negative(threads, monkeypatch):
    """-0.0 plus negative zeros only (or no terms) is -0.0 in Python; the lanes started
    at +0.0 and Neumaier's compensation is +0.0, so the loop gave +0.0 for every size
    (found by test_sum_lanes_properties)."""
    monkeypatch.setenv("PYASC_NUM_THREADS", threads)
    compiled = hybrid(from_negative_zero, target="cpu", dynamic_shape=True)
    for n in (0, 5, 17, 200, 70_000, 140_001):
        x = np.full(n, -0.0, np.float32)
        assert np.signbit(compiled(x)), n
        x[n // 2:] = 0.0  # one +0.0 term: +0.0, in any order
        assert n == 0 or not np.signbit(compiled(x)), n
    assert "lanes = 16" in compiled.kernel(x).loop_ir
