"""Differential tests: the indices of nonzero elements, ``np.nonzero`` / ``x.nonzero()``,
``np.flatnonzero``, ``np.argwhere`` and the one-argument ``np.where``: int64 coordinates
of a run-time length (as ``x[mask]``), numpy's truth (NaN is nonzero), C order, views,
empty arrays and 0-d inputs; and the errors numpy raises."""

from __future__ import annotations

import numpy as np
import pytest
from diff import EXACT, check, in_layout

from pyasc import errors, hybrid


@hybrid
def indices_of(x):
    return np.nonzero(x), x.nonzero(), np.flatnonzero(x), np.argwhere(x), np.where(x)


@hybrid
def used_as_index(x, y):
    rows, cols = np.nonzero(x > 0.5)
    return y[rows, cols] * 2, x[np.where(x > 0.5)].sum(), np.argwhere(x[0])


@hybrid
def of_a_scalar(x):
    return np.argwhere(x[0] > 0), np.flatnonzero(x[0])


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(shape) < 0.4, rng.standard_normal(shape), 0)
    x = x.astype(dtype)
    if x.dtype.kind == "f" and x.size:
        x.flat[0] = np.nan  # nonzero, as bool(nan) is True
        x.flat[-1] = -0.0   # zero
    return x


CASES = [((9,), "float32", "C"), ((4, 7), "float16", "step2"), ((2, 3, 5), "int8", "C"),
         ((4, 7), "bool", "C"), ((2, 3, 5), "float32", "step2"), ((0, 3), "float32", "C"),
         ((3, 0), "bool", "C"), ((9,), "int8", "step2")]


@pytest.mark.parametrize(("shape", "dtype", "layout"), CASES)
def test_nonzero_family(shape, dtype, layout):
    x = in_layout(_values(shape, dtype, sum(shape)), layout)
    check(indices_of, x, rtol=EXACT)


def test_coordinates_index_arrays():
    x = _values((5, 6), "float32", 3)
    x[0, 0] = 0.7
    y = np.arange(30, dtype=np.float32).reshape(5, 6)
    check(used_as_index, x, y, rtol=EXACT)
    check(of_a_scalar, np.array([2.0, 0.0], np.float32), rtol=EXACT)
    check(of_a_scalar, np.array([-2.0, 0.0], np.float32), rtol=EXACT)


def test_numpys_errors():
    @hybrid
    def zero_d(x):
        return np.nonzero(x[0])

    @hybrid
    def half_where(x):
        return np.where(x > 0, x)

    x = np.ones(3, np.float32)
    with pytest.raises(errors.TypeMismatchError, match="nonzero of a 0-d array") as info:
        zero_d(x)
    assert "np.atleast_1d" in info.value.hint
    with pytest.raises(errors.TypeMismatchError, match="both or neither of x and y"):
        half_where(x)


def test_a_data_dependent_length_is_refused_on_the_device():
    # the device's host must know every array's size before a launch (as for x[mask])
    with pytest.raises(errors.UnsupportedSyntaxError, match="size depends on data"):
        hybrid(indices_of.__wrapped__, target="ascend-sim")(np.ones((2, 3), np.float32))
