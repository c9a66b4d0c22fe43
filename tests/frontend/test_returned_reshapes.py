"""Results that are reshapes of arrays the function computed: returned without a copy
(``lower-to-loops`` hands the computed buffer over), yet every result is its own array,
as in numpy, on every runner of the differential harness."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand

from pyasc import hybrid


@hybrid
def flat_double(x):
    return (x * 2.0).reshape(-1)


@hybrid
def reshape_and_source(x):
    y = x + 1.0
    return y.reshape(x.shape[1], x.shape[0]), y


@hybrid
def two_reshapes(x):
    y = x * 3.0
    return y.reshape(-1), y.reshape(x.shape[1], x.shape[0])


@hybrid
def product_reshaped(a, b):
    return (a @ b).reshape(-1, 2)


@hybrid
def branch_reshapes(x, flag):
    y = x * 2.0
    if flag:
        return y.reshape(-1)
    return (y + 1.0).reshape(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_returned_reshapes_match_numpy(dtype):
    x = rand((5, 6), dtype)
    check(flat_double, x)
    check(reshape_and_source, x)
    check(two_reshapes, x)
    check(product_reshaped, rand((9, 7), dtype), rand((7, 34), dtype))
    for flag in (True, False):
        check(branch_reshapes, x, flag)


def test_results_sharing_a_buffer_are_distinct_arrays(monkeypatch):
    """Two results made from one buffer: one of them is a copy, so writing to one does
    not change the other (numpy's ``y.reshape(...)`` and ``y`` would share; pyasc's
    results never alias each other)."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = rand((4, 6), np.float32)
    for fn in (reshape_and_source, two_reshapes):
        first, second = fn(x)
        assert not np.shares_memory(first, second)
        before = second.copy()
        first[...] = 0
        np.testing.assert_array_equal(second, before)
    flat = flat_double(x)
    assert flat.flags.c_contiguous and flat.flags.writeable
    assert not np.shares_memory(flat, x)


def test_returned_reshapes_on_the_simulator():
    """The AscendC backend takes the same lowered function (results that are reshapes
    of a kernel's buffers)."""
    x = rand((5, 6), np.float32)
    check(flat_double, x, runners=("ascend-sim",))
    check(reshape_and_source, x, runners=("ascend-sim",))
