"""Arrays carried by loops and branches of scalar kernels, of any static size.

Carriers used to be local arrays only, at most 4 KB per kernel, so an early-returned
``(32, 33)`` float32 array was refused (E50010) while ``(32, 32)`` ran.  A carried array
that is a region result now lives in its GM result array, and the other carriers and
large temporaries inside loops or branches live in per-block GM scratch.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(19)


@hybrid
def early_return(x, flag):
    if flag > 0:
        return x * 2.0
    return x + 1.0


@hybrid
def running_sum(x):
    acc = np.zeros(x.shape[1], x.dtype)
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


@hybrid
def halving(x):
    y = x.copy()
    while y.max() > 1.0:
        y = y * 0.5
    return y


@hybrid
def swapped(x, n):
    a = x.copy()
    b = x * 2.0
    for _ in range(n):
        a, b = b, a + 1.0
    return a - b


@hybrid
def row_scores(x):
    out = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        t = np.cumsum(x[i])         # a static temporary larger than the 1 MiB workspace
        out[i] = t[-1] - t[t.shape[0] // 2]
    return out


@pytest.mark.parametrize("shape", [(32, 32), (32, 33), (300, 400)])
@pytest.mark.parametrize("flag", [1, 0])
def test_an_early_returned_array_of_any_size_runs(shape, flag):
    check(early_return, RNG.random(shape).astype(np.float32), flag)


@pytest.mark.parametrize("cols", [8, 1500])
def test_a_loop_carried_array_beyond_the_stack_budget(cols):
    check(running_sum, RNG.random((7, cols)).astype(np.float32), rtol=1e-6)


def test_a_while_carried_array_beyond_the_stack_budget():
    check(halving, (RNG.random(2000) * 40).astype(np.float32))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_swapped_carriers_beyond_the_stack_budget(n):
    check(swapped, RNG.random((30, 40)).astype(np.float32), n)


def test_large_temporaries_of_a_split_loop_are_per_block():
    # each row's temporary (1.08 MB) overflowed the GM workspace (E50003) when static
    # temporaries inside loops took workspace slices
    x = RNG.random((4, 270_000)).astype(np.float32)
    k = check(row_scores, x, rtol=1e-5)
    assert k.last_counters["blocks"] == 4  # the loop is split: each block has its slice
