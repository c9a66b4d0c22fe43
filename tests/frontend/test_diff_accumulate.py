"""Differential tests: unbuffered ``ufunc.at`` scatter (repeated indices apply again)
and ``np.bincount``, on the interpreter, the CPU backend and ascend-sim."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


@hybrid
def scatter(a, idx, v, m):
    np.add.at(a, idx, v)
    np.maximum.at(m, (idx, idx[::-1]), 0.5)
    np.subtract.at(a, idx[:2], 1)
    np.multiply.at(m, idx, 2)
    np.minimum.at(m[1], idx, v)
    return a, m


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_ufunc_at_accumulates_repeated_indices(dtype, layout):
    a, v = in_layout(rand((6,), dtype), layout), rand((6,), dtype, 1)
    m = in_layout(rand((6, 6), dtype, 2), layout)
    idx = np.array([0, 1, 1, 5, -1, 1], np.int32)  # 1 three times, 5 and -1 alike
    check(scatter, a, idx, v, m, runners=RUNNERS if dtype != "int32" else DEFAULT_RUNNERS)


def test_ufunc_at_rows_and_errors():
    @hybrid
    def rows(a, idx, b):
        np.add.at(a, idx, b)  # whole rows, b broadcast to a[idx].shape
        return a

    a, idx = rand((4, 3), "float64"), np.array([3, 3, 0])
    check(rows, a, idx, rand((3, 3), "float64"))
    check(rows, a, idx, rand((3,), "float64"))
    assert isinstance(check(rows, a, np.array([4]), 1.0), IndexError)

    @hybrid
    def value(a, idx):
        y = a + 1
        np.add.at(y, idx, 1)
        return y
    check(value, a, idx)

    @hybrid
    def sliced(a, idx):
        np.add.at(a, (idx, None), 1.0)
        return a
    with pytest.raises(errors.UnsupportedNumpyError, match="slices"):
        sliced(a, np.array([0]))


@hybrid
def counts(x, w):
    return (np.bincount(x), np.bincount(x, minlength=9), np.bincount(x, weights=w),
            np.bincount(x[:0], minlength=3), np.bincount(x, minlength=2))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_bincount(dtype):
    x = np.array([0, 3, 3, 1, 7, 3]).astype(dtype)
    check(counts, x, rand((6,), "float64"))
    check(counts, x[::2], rand((3,), "float32"))


def test_bincount_on_the_device_and_negative_input():
    @hybrid
    def plain(x):
        return np.bincount(x, minlength=4)
    check(plain, np.array([2, 0, 2, 9], np.int32), runners=RUNNERS)
    assert isinstance(check(counts, np.array([1, -1]), np.ones(2)), ValueError)
