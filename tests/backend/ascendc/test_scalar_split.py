"""Which loop of a scalar kernel is split across blocks (``scalar_plan``).

The rule is ``parallel_safe``'s (shared with the CPU backend) plus what blocks add:
every block runs the code around the split loop, so that code must not touch memory
the loop writes, and a loop with a run-time check must not write memory the caller
sees.  Each unsafe case below raced (or left rows written after a failing ``assert``)
when it was split; the results alone cannot show a race every time, so the tests also
state the number of blocks.

Loops over rows whose iterations are independent are vector kernels by default
(``batch-loops``); these tests turn that pass off so the loops stay scalar kernels,
whose split they are about.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, run_sim

from pyasc import hybrid


@pytest.fixture(autouse=True)
def _scalar_loops(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "batch-loops")


@hybrid
def doubled_in_place(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0
    return x


@hybrid
def doubled_then_summed(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    acc = 0.0
    for i in range(x.shape[0]):  # every block would sum rows others are still writing
        acc += out[i]
    return out, acc


@hybrid
def centred_in_place(x):
    acc = 0.0
    for i in range(x.shape[0]):  # every block would read rows others already changed
        acc += x[i]
    for i in range(x.shape[0]):
        x[i] = x[i] - acc
    return x


@hybrid
def checked_in_place(x):
    for i in range(x.shape[0]):
        assert x[i] < 5
        x[i] = x[i] * 2
    return x


X = np.arange(64.0, dtype=np.float32)  # float64 is not device data (E50041)


def test_an_independent_loop_is_split():
    k = check(doubled_in_place, X.copy())
    assert k.last_counters["blocks"] > 1


@pytest.mark.parametrize("fn", [doubled_then_summed, centred_in_place])
def test_code_around_the_loop_that_touches_what_it_writes_keeps_one_block(fn):
    for _ in range(3):  # a split raced: some runs were right
        k = check(fn, X.copy())
    assert k.last_counters["blocks"] == 1


def test_a_failing_check_leaves_the_rows_python_left():
    x = np.array([0, 1, 9] + [1] * 61, np.int64)
    want = x.copy()
    with pytest.raises(AssertionError):
        checked_in_place.__wrapped__(want)
    got = x.copy()
    with pytest.raises(AssertionError):
        run_sim(checked_in_place, got)
    np.testing.assert_array_equal(got, want)  # split, later blocks doubled their rows
    assert check(checked_in_place, np.ones(64, np.int64)).last_counters["blocks"] == 1
