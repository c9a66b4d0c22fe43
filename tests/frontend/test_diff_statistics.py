"""Differential tests: ``median quantile percentile searchsorted interp``, NaN and
float16 included, on the interpreter, the CPU backend and ascend-sim (float32 and
float16 work; ``interp`` and array ``q`` compute in float64 as numpy does, which the
device does not have)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


@hybrid
def order_statistics(x):
    return (np.median(x), np.median(x, axis=0), np.median(x, axis=1, keepdims=True),
            np.quantile(x, 0.3), np.percentile(x, 30), np.quantile(x, 1),
            np.quantile(x, 0.7, axis=-1), np.median(x, keepdims=True),
            np.quantile(x, 0.9, keepdims=True), np.percentile(x, 50.0, axis=0),
            np.quantile(x, 0, axis=1))


@hybrid
def array_quantiles(x):
    return (np.quantile(x, [0.0, 0.25, 0.5, 1.0], axis=1),
            np.percentile(x, (10, 90), axis=0, keepdims=True),
            np.quantile(x, ((0.1, 0.2), (0.6, 0.95))))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16"])
@pytest.mark.parametrize("shape", [(4, 5), (3, 6), (1, 1)])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_median_and_quantiles(dtype, shape, layout):
    x = in_layout(rand(shape, dtype), layout)
    device = RUNNERS if dtype in ("float32", "float16") and layout == "C" else DEFAULT_RUNNERS
    check(order_statistics, x, runners=device)
    check(array_quantiles, x)
    if x.dtype.kind == "f":
        x[0, 0] = np.nan  # its row, column and the whole array give NaN
        check(order_statistics, x, runners=device)
        check(array_quantiles, x)


def test_quantile_refusals():
    @hybrid
    def nearest(x):
        return np.quantile(x, 0.5, method="nearest")

    @hybrid
    def outside(x):
        return np.quantile(x, 1.5)

    with pytest.raises(errors.UnsupportedNumpyError, match="linear"):
        nearest(np.ones(3))
    with pytest.raises(errors.TypeMismatchError, match=r"range \[0, 1\]"):
        outside(np.ones(3))


@hybrid
def search(a, v, s):
    return (np.searchsorted(a, v), np.searchsorted(a, v, side="right"),
            np.searchsorted(a, s), np.searchsorted(a, 0.5), a.searchsorted(v[1:]),
            np.searchsorted(a, v, sorter=np.argsort(a)))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16"])
def test_searchsorted(dtype):
    a = np.sort(rand((7,), dtype))
    a[3] = a[4]  # ties: left and right differ
    v = np.concatenate([a[:3], rand((4,), dtype, 1)])
    if a.dtype.kind == "f":
        a[-1] = v[-1] = np.nan  # NaN sorts last
    check(search, a, v, a.dtype.type(v[2]), runners=RUNNERS)
    check(search, a[::2], v[::2], a.dtype.type(0), runners=DEFAULT_RUNNERS)


@hybrid
def lerp(x, xp, fp):
    return (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-1.0, right=7),
            np.interp(x[1], xp, fp), np.interp(x, xp[:1], fp[:1]), np.interp(2.0, xp, fp))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_interp_follows_numpys_loop(dtype):
    xp = np.array([0.0, 1.0, 1.0, 2.5, 4.0]).astype(dtype)
    fp = np.array([1.0, -2.0, 3.0, np.inf, 0.5])  # an infinite knot: the NaN fallbacks
    x = np.array([-1, 0, 0.5, 1.0, 1.7, 2.5, 3.0, 4.0, 5.0, np.nan])
    check(lerp, x, xp, fp)
    check(lerp, x[::-2].copy(), xp, rand((5,), "float32"))


DYNAMIC = [hybrid(dynamic_shape=True)(fn.__wrapped__) for fn in (order_statistics,
                                                                  array_quantiles)]
"""Made once: one kernel per dtype serves every shape (made per test, each shape compiled
both functions again)."""


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16"])
@pytest.mark.parametrize("shape", [(4, 5), (3, 6), (1, 1), (2, 7)])
def test_median_and_quantiles_of_runtime_lengths(dtype, shape):
    # the float64 index (n - 1) * q, its bounds and weight computed by the kernel
    x = rand(shape, dtype, seed=5)
    for dynamic in DYNAMIC:
        check(dynamic, x, runners=("ir", "cpu"))
        if x.dtype.kind == "f":
            x[-1, 0] = np.nan
            check(dynamic, x, runners=("ir", "cpu"))
