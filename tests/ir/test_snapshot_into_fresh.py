"""A slice of an argument (or of another new array) assigned into a new array is copied
once, straight into it, not through a temporary (``snapshots._writes_elsewhere``); a
copy that may overlap what it reads still goes through one."""

from __future__ import annotations

import numpy as np

from pyasc import hybrid

RNG = np.random.default_rng(5)


@hybrid
def windows(x):
    out = np.empty((3, x.shape[0], x.shape[1] - 2), dtype=x.dtype)
    for i in range(3):
        out[i] = x[:, i:i + x.shape[1] - 2]
    return out


@hybrid
def from_new_array(x):
    t = np.zeros(x.shape[0], dtype=x.dtype)
    t[:] = x * 2.0
    out = np.empty((2, x.shape[0] - 1), dtype=x.dtype)
    out[0] = t[1:]
    out[1] = t[:-1]
    return out


@hybrid
def shift_in_place(x):
    t = x + 1.0
    t[1:] = t[:-1]
    return t


def allocs(fn, *args) -> int:
    return str(fn.kernel(*args).loop_ir).count('"mem.alloc"')


def test_window_copies_go_straight_into_the_new_array():
    x = RNG.standard_normal((5, 9)).astype(np.float32)
    want = np.stack([x[:, i:i + 7] for i in range(3)])
    np.testing.assert_array_equal(windows(x), want)
    assert allocs(windows, x) == 1  # the result only: no temporary per window


def test_slices_of_another_new_array():
    x = RNG.standard_normal(8)
    np.testing.assert_array_equal(from_new_array(x), np.stack([2 * x[1:], 2 * x[:-1]]))
    assert allocs(from_new_array, x) == 2  # t and the result


def test_overlapping_copy_keeps_its_temporary():
    x = RNG.standard_normal(8)
    want = x + 1.0
    want[1:] = want[:-1].copy()
    np.testing.assert_array_equal(shift_in_place(x), want)
    assert allocs(shift_in_place, x) == 2  # t and the snapshot of t[:-1]
