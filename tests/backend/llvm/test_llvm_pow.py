"""``x ** y`` with an exponent that is not a small integer constant (a run-time scalar
such as a focal loss's ``gamma``, an array of exponents, ``x ** 2.5``): expanded by
``expand-math`` into float64 arithmetic (``mathlib/powf.py``), so the CPU loop
vectorizes with no ``llvm.pow``/``powf`` call per element, and every result is the
float64 power rounded once (special values as C99/numpy ``powf``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pyasc import hybrid

VALUES = [-0.0, 0.0, -np.inf, np.inf, np.nan, -2.5, -1.0, 1.0, 1e-30, 3e-39, 1.5, 2.0,
          3.0, 7.0, 1e10, 3e38, -3.0, 0.5, 9.0]
EXPONENTS = VALUES + [2.0, -1.0, -2.0, 2.5, -0.5, 1e-3, 200.0, -200.0, 1e30, -1e30, 0.75]


@hybrid(target="cpu")
def scalar_power(x, g):
    return x ** g


@hybrid(target="cpu")
def array_power(x, y):
    return np.power(x, y)


@hybrid(target="cpu")
def focal_terms(p, labels, gamma):
    return np.sum(labels * (1 - p) ** gamma * np.log(p) + (1 - labels) * p ** gamma)


def _reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("fn, args", [
    (scalar_power, (np.ones(4096, np.float32), 2.5)),
    (array_power, (np.ones(4096, np.float32), np.ones(4096, np.float32))),
    (focal_terms, (np.ones(4096, np.float32), np.ones(4096, np.float32), 2.0)),
])
def test_power_loop_vectorizes_without_pow_calls(fn, args):
    llvm_ir = fn.kernel(*args).llvm_ir
    calls = set(re.findall(r"call [^@]*@([\w.]+)", llvm_ir))
    assert not any("pow" in c for c in calls if not c.startswith("pyasc.")), calls
    assert re.search(r"<(4|8|16) x double>", llvm_ir)


def test_special_values_and_pairs_equal_the_rounded_float64_power():
    x, y = np.meshgrid(np.array(VALUES, np.float32), np.array(EXPONENTS, np.float32))
    x, y = x.ravel(), y.ravel()
    _assert_same(array_power(x, y), _reference(x, y))


@pytest.mark.parametrize("g", [2.0, 0.75, -1.5, 3.0, 1e-3, 40.0])
def test_scalar_exponent_random_bases_correctly_rounded(g):
    rng = np.random.default_rng(3)
    x = np.abs(rng.standard_normal(20_000)).astype(np.float32)
    x *= rng.choice(np.array([1e-4, 1, 10, 1e3], np.float32), x.size)
    x[::7] *= -1  # negative bases: NaN, or signed for integral exponents
    _assert_same(scalar_power(x, g), _reference(x, np.full_like(x, g)))


def test_random_pairs_within_one_step_of_the_float64_power():
    rng = np.random.default_rng(4)
    x = (np.abs(rng.standard_normal(50_000)) * 4).astype(np.float32)
    y = (rng.standard_normal(50_000) * 6).astype(np.float32)
    got, want = array_power(x, y), _reference(x, y)
    steps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert steps.max() <= 1
    assert np.mean(steps != 0) < 1e-3


def test_float16_power_rounds_the_float32_result():
    x = np.array([0.5, 1.5, 3.0, -2.0, 100.0, 0.0], np.float16)
    y = np.array([2.5, -1.5, 0.5, 3.0, 2.0, -1.0], np.float16)
    _assert_same(array_power(x, y), _reference(x.astype(np.float32),
                                               y.astype(np.float32)).astype(np.float16))
