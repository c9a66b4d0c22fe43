"""Special values of the vector unit's composed math functions (``vec_math.py``) on
ascend-sim: the compositions must give what the function gives at infinities, zeros and
NaN, not what the composition's intermediate steps make of them."""

from __future__ import annotations

import math

import numpy as np
from ascendc_kit import run_sim

import pyasc.ops as ops
from pyasc import hybrid


@hybrid
def erf_of(x):
    return ops.erf(x)


def test_erf_at_the_infinities_zeros_and_nan():
    # the sign was restored as x / (|x| + 1e-30): inf / inf gave erf(+-inf) = NaN
    special = [np.inf, -np.inf, 0.0, -0.0, np.nan, 3e38, -3e38, 1.0, -1.0, 0.5, -2.0, 9.0]
    x = np.array(special + [0.25] * 4, np.float32)
    got, kernel = run_sim(erf_of, x)
    kinds = {k.name: type(k).__name__ for k in kernel.ascend.kernels}
    assert [kinds[n] for n, _ in kernel.last_kernels] == ["VectorKernel"]
    want = np.array([math.erf(float(v)) for v in x], np.float32)
    # A&S 7.1.26 is within 1.5e-7; float32 arithmetic adds about as much again
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-7)
    assert np.array_equal(np.signbit(got[:4]), np.signbit(want[:4]))  # erf(-0) = -0


@hybrid
def pick(x, s):
    return np.where(s > 0, x * 2, x - 1)


@hybrid
def pick_rows(x, s):
    return np.where(s > 0, x.sum(axis=1), x.max(axis=1))


@hybrid
def focal(p, gamma):
    return -((1 - p) ** gamma) * np.log(p)


def _kinds(kernel) -> list[str]:
    kinds = {k.name: type(k).__name__ for k in kernel.ascend.kernels}
    return [kinds[n] for n, _ in kernel.last_kernels]


def test_select_on_a_run_time_scalar_condition_is_a_vector_kernel():
    # 'arith.select' with a scalar condition made the group a scalar kernel: now a Select
    # on a uniform mask (Duplicate cond ? 0 : NaN, Compare EQ) copies either operand whole
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1.5] + list(range(300)), np.float32)
    rows = np.random.default_rng(1).standard_normal((37, 45)).astype(np.float32)
    for fn, arg in ((pick, x), (pick_rows, rows)):
        for s in (1.0, -1.0, np.nan):
            got, kernel = run_sim(fn, arg, s)
            assert _kinds(kernel) == ["VectorKernel"]
            want = fn.__wrapped__(arg, s)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
            assert np.array_equal(np.signbit(got), np.signbit(want))
            assert kernel.last_counters["Select_calls"] >= 1


def test_focal_loss_with_a_run_time_gamma_is_one_vector_kernel():
    p = np.random.default_rng(2).uniform(0.01, 0.99, 4096).astype(np.float32)
    for gamma in (2.0, 0.5, 1.5, 0.0):
        got, kernel = run_sim(focal, p, gamma)
        assert _kinds(kernel) == ["VectorKernel"]
        np.testing.assert_allclose(got, focal.__wrapped__(p, gamma), rtol=2e-6, atol=0)
