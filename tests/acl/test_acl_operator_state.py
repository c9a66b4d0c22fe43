"""An ``AscendOperator``'s state arrays on ``target="ascend"`` (against the stand-in
AscendCL library): uploaded on the first call, then read and written in place on the
device across calls (the stand-in counts the bytes each copy kind moved);
``op.sync_state()`` brings them to the host, ``op.sync_state("device")`` sends host
edits back, and reassigning the attribute uploads the new array."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import AscendOperator
from pyasc.backend.ascendc.codegen import PyascPerformanceWarning
from pyasc.errors import DeviceStateLostWarning, InvalidOptionError
from pyasc.runtime import acl

N = 256


class Counter(AscendOperator):
    hybrid_options = dict(target="ascend")

    def __init__(self):
        self.total = np.zeros(N, np.float32)   # state the kernel accumulates into
        self.table = np.ones((64, N), np.float32)  # large read-only state

    def compute(self, x):
        self.total += x
        return x * 2.0 + self.table.mean(axis=0)


class OnCpu(Counter):
    hybrid_options = dict(target="cpu")


def _run(op, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        return op(x)


def _moved(standin, before):
    after = standin.copied()
    return {k: after[k] - before[k] for k in after}


X = np.arange(N, dtype=np.float32)


def test_state_stays_on_the_device_between_calls(ascend_standin):
    op = Counter()
    np.testing.assert_array_equal(_run(op, X), 2 * X + 1)      # uploads the state once
    before = ascend_standin.copied()
    for _ in range(3):
        np.testing.assert_array_equal(_run(op, X), 2 * X + 1)
    moved = _moved(ascend_standin, before)
    # the table (64 KB) and the running total stay on the device: what crosses in
    # three calls is x, the result and the kernels' intermediate buffers, a few KB
    # (with the state passed as numpy arrays, each call moved the table both ways)
    assert moved["h2d"] + moved["d2h"] < op.table.nbytes, moved
    np.testing.assert_array_equal(op.total, 0)                 # the host is behind...
    op.sync_state()
    np.testing.assert_array_equal(op.total, 4 * X)             # ...until synced


def test_host_edits_reach_the_device_with_sync_to_device(ascend_standin):
    op = Counter()
    _run(op, X)
    op.sync_state()
    op.total[:] = 100.0                                        # edited in place on the host
    op.sync_state("device")
    _run(op, X)
    op.sync_state()
    np.testing.assert_array_equal(op.total, 100.0 + X)


def test_a_reassigned_attribute_is_uploaded(ascend_standin):
    op = Counter()
    _run(op, X)
    op.total = np.full(N, 7.0, np.float32)
    _run(op, X)
    op.sync_state()
    np.testing.assert_array_equal(op.total, 7.0 + X)


def test_instances_keep_their_own_device_state(ascend_standin):
    a, b = Counter(), Counter()
    _run(a, X)
    _run(b, X)
    _run(b, X)
    a.sync_state()
    b.sync_state()
    np.testing.assert_array_equal(a.total, X)
    np.testing.assert_array_equal(b.total, 2 * X)


def test_state_lost_with_the_context_warns_and_restarts(ascend_standin):
    op = Counter()
    _run(op, X)
    acl.shutdown()                                             # not synced: lost
    with pytest.warns(DeviceStateLostWarning, match="self.total"):
        _run(op, X)
    op.sync_state()
    np.testing.assert_array_equal(op.total, X)                 # from the host's zeros


def test_other_targets_update_the_instance_arrays_directly():
    op = OnCpu()
    np.testing.assert_array_equal(op(X), 2 * X + 1)
    np.testing.assert_array_equal(op.total, X)
    op.sync_state()                                            # nothing to do
    np.testing.assert_array_equal(op.total, X)
    with pytest.raises(InvalidOptionError):
        op.sync_state("gpu")
