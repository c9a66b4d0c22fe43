"""Multi-dimensional iteration: ``np.ndindex`` and ``itertools.product`` as loop nests
(``frontend/iteration.py``), on the IR, the CPU and the AscendC simulator."""

from __future__ import annotations

import itertools
from itertools import product

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, compare, rand

from pyasc import hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def check(fn, *args, runners=RUNNERS):
    """``diff.check`` on every runner, the simulator included (none may be skipped)."""
    expected, skipped = compare(fn, *args, runners=runners)
    assert not skipped, skipped
    return expected


@hybrid
def grid_sum(x):
    out = np.zeros_like(x)
    acc = x[0, 0] * 0
    for i, j in np.ndindex(x.shape[0], x.shape[1]):
        acc += x[i, j]
        out[i, j] = acc
    return out


@hybrid
def grid_tuple_shape(x):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):  # one tuple target, a shape tuple argument
        out[idx] = x[idx] * 2
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_ndindex_nests_in_order(dtype):
    check(grid_sum, rand((3, 4), dtype))
    check(grid_tuple_shape, rand((2, 3, 2), dtype))


def test_ndindex_non_contiguous():
    check(grid_sum, rand((6, 5), "float32")[::2, ::-1])


@hybrid
def products(x, n):
    out = np.zeros((n, x.shape[0]), x.dtype)
    for i, j in itertools.product(range(n), range(x.shape[0])):
        out[i, j] = x[j] * i
    total = 0
    for a, b in product(range(2), repeat=2):
        total += 10 * a + b
    return out, total


def test_itertools_product():
    check(products, rand((4,), "float32"), 3)


@hybrid
def find_first(x, threshold):
    where = (-1, -1)
    for i, j in np.ndindex(x.shape[0], x.shape[1]):
        if x[i, j] > threshold:
            where = (i, j)
            break  # leaves the whole nest, as Python's break leaves the loop
    else:
        where = (-2, -2)
    return where


@hybrid
def skip_diagonal(x):
    total = x[0, 0] * 0
    for i, j in np.ndindex(*x.shape):
        if i == j:
            continue
        total += x[i, j]
    return total


@pytest.mark.parametrize("threshold", [0.5, 100.0])
def test_break_continue_and_else(threshold):
    check(find_first, rand((3, 4), "float32"), threshold)
    check(skip_diagonal, rand((4, 4), "float32"))


@hybrid
def nested_breaks(x):
    count = 0
    for i, j in np.ndindex(x.shape[0], 3):
        for k in range(5):
            if k == j:
                break  # the inner loop's own break
            count += 1
        if x[i] < 0:
            break
    return count


def test_breaks_of_inner_loops_stay_theirs():
    check(nested_breaks, np.array([1.0, 2.0, -1.0, 3.0], np.float32))


def test_the_nest_is_counted_loops():
    # one loop per axis over its own counter (affine indices, no div/mod per element)
    text = grid_sum.ir(rand((3, 4), "float32"), optimized=False)
    assert text.count('"loop.for"') == 2
    assert "arith.floordiv" not in text and "arith.rem" not in text
