"""``forward-writes``: snapshots of a local buffer written whole become the value written.

An in-place update of an array value (``w /= w.sum()``) allocated a buffer, wrote it and
read it back; forwarded, no buffer is left in the optimized IR (``dce`` drops the writes)
and the work stays values.  Every form here must equal the interpreter on the CPU, static
and ``dynamic_shape=True`` (within a sum's rounding: the CPU backend's whole-array sums
do not take numpy's pairwise order, with or without the pass); a buffer read or written
any other way (an element, a view, a broadcast write) keeps its snapshots.
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid


def normalize_in_place(x):
    w = np.exp(x - x.max())
    w /= w.sum()
    w *= 2
    return w + 1


def normalize_rows_in_a_loop(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        w = x[i] * x[i]
        w /= w.sum()
        out[i] = w
    return out


def full_slice_writes(x):
    w = x * 2
    w[:] = w / w.sum()
    w[...] = w + 1
    return w * 3


def element_write_in_between(x):
    w = x * 2
    w /= w.sum()
    w[0] = 5  # an element write: the next snapshot is not a value written whole
    return w * 3


def broadcast_write(x):
    w = x * 2
    w[...] = x[:1] * 4  # a write that broadcasts: not the buffer's shape
    return w + 1


def broadcast_of_a_run_time_row(x):
    w = x * 2
    y = x[:1] * 4  # (?, ?) with run-time shapes, as w: one row at run time
    w[...] = y
    w /= w.sum()
    return w + 1


CASES = [normalize_in_place, normalize_rows_in_a_loop, full_slice_writes,
         element_write_in_between, broadcast_write, broadcast_of_a_run_time_row]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_forwarded_writes_keep_the_interpreters_bits(fn, dynamic):
    x = np.random.default_rng(7).random((5, 7)).astype(np.float32)
    want = hybrid(fn, target="interpret", dynamic_shape=dynamic)(x.copy())
    got = hybrid(fn, target="cpu", dynamic_shape=dynamic)(x.copy())
    # the CPU's whole-array sums are not numpy's pairwise order (with or without the pass)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", [normalize_in_place, normalize_rows_in_a_loop, full_slice_writes],
                         ids=lambda f: f.__name__)
def test_in_place_updates_leave_no_buffer(fn, dynamic):
    x = np.zeros((5, 7), np.float32)
    text = hybrid(fn, dynamic_shape=dynamic).ir(x)
    # only the output of the loop form is a buffer (its zeros); the updates are values
    assert text.count('"mem.alloc"') == (fn is normalize_rows_in_a_loop), text


def test_a_buffer_read_another_way_keeps_its_snapshots():
    text = hybrid(element_write_in_between).ir(np.zeros((5, 7), np.float32))
    assert '"mem.alloc"' in text and '"mem.to_tensor"' in text
