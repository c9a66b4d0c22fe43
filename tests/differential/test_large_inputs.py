"""Constructs checked on inputs larger than the Ctrl-C poll budget (2^18 iterations).

The differential suites use small arrays, so code that only runs after many iterations
went unchecked: the poll stub that a loop calls every ``emit_poll.BUDGET`` iterations
cleared the upper halves of the vector registers, and every 2-D kernel over more than
2^18 elements returned wrong values from that point on, while every small test passed.
Each construct here runs over ~2.1M elements (eight polls and more), on the CPU with and
without the optional passes, against the Python function.
"""

from __future__ import annotations

import numpy as np
import pytest
from diff import MATH, check

from pyasc import hybrid
from pyasc.backend.llvm import emit_poll

ROWS, COLS = 8 * emit_poll.BUDGET // 2001 + 5, 2001  # odd row length: vector tails too
RUNNERS = ("cpu", "cpu-nopasses")


@hybrid
def elementwise(x, y):
    return np.maximum(x * 0.5 + 1.0, y) - np.sqrt(np.abs(y))


@hybrid
def row_reductions(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True), x.mean(axis=0)


@hybrid
def loop_over_rows(x, w):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] * w + acc
        acc += x[i, 0]
    return out, acc


@hybrid
def scalar_nest(x):
    total = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > 0.0:
                total += x[i, j] * 0.25
    return total


@hybrid
def gather_rows(x, idx):
    return x[idx] * 2.0 + 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_elementwise_and_reductions(dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((ROWS, COLS)).astype(dtype)
    y = rng.standard_normal((ROWS, COLS)).astype(dtype)
    check(elementwise, x, y, runners=RUNNERS)
    check(row_reductions, x, runners=RUNNERS, rtol=MATH)
    check(elementwise, x[:, :-1:2], y[:, 1::2], runners=RUNNERS)  # strided views


def test_large_loops_and_gathers():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((ROWS, COLS))
    check(loop_over_rows, x, rng.standard_normal(COLS), runners=RUNNERS)
    check(scalar_nest, x, runners=RUNNERS)
    check(gather_rows, x, rng.integers(0, ROWS, ROWS), runners=RUNNERS)
