"""Differential tests: ``np.unique`` (``axis=None``) with first indices, inverse and
counts; NaN with and without ``equal_nan``; signed zeros (the first occurrence is kept),
empty and 0-d inputs, views; and the forms pyasc refuses."""

from __future__ import annotations

import numpy as np
import pytest
from diff import EXACT, UNORDERED_ZEROS, check, in_layout

from pyasc import errors, hybrid


@hybrid
def distinct(x):
    return np.unique(x)


@hybrid
def with_everything(x):
    return np.unique(x, return_index=True, return_inverse=True, return_counts=True)


@hybrid
def nans_apart(x):
    return np.unique(x, equal_nan=False), np.unique(x, return_counts=True)[1]


@hybrid
def of_a_scalar(x):
    return np.unique(x[0], return_inverse=True)


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(dtype)
    if x.dtype.kind == "f" and x.size > 3:
        x.flat[1] = x.flat[-2] = np.nan
        x.flat[0], x.flat[2] = -0.0, 0.0
    return x


CASES = [((3, 7), "int32", "C"), ((2, 3, 5), "float32", "step2"), ((0,), "int32", "C"),
         ((17,), "float16", "C"), ((4, 6), "bool", "step2"), ((11,), "float64", "C"),
         ((5, 4), "uint8", "C")]


@pytest.mark.parametrize(("shape", "dtype", "layout"), CASES)
def test_unique(shape, dtype, layout):
    x = in_layout(_values(shape, dtype, sum(shape)), layout)
    # which of -0.0 and 0.0 stands for both: numpy's plain unique sorts in place with an
    # unstable sort (either may come first); pyasc's sort is stable (the first in x), as
    # numpy's own is when it also returns indices
    check(distinct, x, rtol=UNORDERED_ZEROS)
    check(with_everything, x, rtol=EXACT)
    if x.dtype.kind == "f":
        check(nans_apart, x, rtol=UNORDERED_ZEROS)


def test_unique_of_a_scalar_keeps_its_0d_inverse():
    check(of_a_scalar, np.array([2.5, 1.0], np.float32), rtol=EXACT)


def test_refused_forms_are_coded_errors():
    @hybrid
    def along_axis(x):
        return np.unique(x, axis=0)

    with pytest.raises(errors.UnsupportedNumpyError, match="along an axis"):
        along_axis(np.ones((2, 2), np.float32))
    with pytest.raises(errors.UnsupportedSyntaxError, match="size depends on data"):
        hybrid(distinct.__wrapped__, target="ascend-sim")(np.ones(3, np.float32))
