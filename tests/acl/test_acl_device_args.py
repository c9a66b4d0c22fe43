"""``pyasc.device_array`` arguments of ``@hybrid`` calls on ``target="ascend"``: handed
to the kernels without copies (the stand-in counts the bytes each copy kind moved),
written in place on the device, staged through the host (with a warning) only when the
host program must read them; other targets refuse them with E50040 naming ``.numpy()``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc import hybrid
from pyasc.backend.ascendc.codegen import PyascPerformanceWarning
from pyasc.errors import ArgumentError
from pyasc.runtime import acl


def _relu(x):
    return np.maximum(x, 0)


def _into(x, out):
    out[...] = np.maximum(x, 0) * 2


def _bump(x):
    x += 1


def _host_sum(x):
    return x.sum() + x[0, 0]


def _bump_then_double(x):
    x += 1
    return x * 2


def _copy_then_bump(x):
    y = x * 1
    x += 1
    return y


def _delta(standin, before):
    after = standin.copied()
    return {k: after[k] - before[k] for k in after}


def _call(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        return hybrid(target="ascend")(fn)(*args)


X = np.linspace(-3, 3, 8 * 64, dtype=np.float32).reshape(8, 64)


def test_an_input_on_the_device_is_not_copied(ascend_standin):
    want = np.maximum(X, 0)
    np.testing.assert_array_equal(_call(_relu, X), want)  # compiled, numpy in
    x = pyasc.device_array(X)
    before = ascend_standin.copied()
    got = _call(_relu, x)
    assert isinstance(got, np.ndarray)  # results come back as numpy arrays
    np.testing.assert_array_equal(got, want)
    moved = _delta(ascend_standin, before)
    # only the result buffer travels (pyasc uploads every array a kernel writes, then
    # downloads it); x's bytes cross neither way
    assert moved["h2d"] == X.nbytes and moved["d2h"] == X.nbytes, moved


def test_a_result_written_into_a_device_array_stays_on_the_device(ascend_standin):
    x, out = pyasc.device_array(X), pyasc.device_array(np.zeros_like(X))
    before = ascend_standin.copied()
    assert _call(_into, x, out) is None
    moved = _delta(ascend_standin, before)
    assert moved["h2d"] == 0 and moved["d2h"] == 0 and moved["d2d"] == X.nbytes, moved
    np.testing.assert_array_equal(out.numpy(), np.maximum(X, 0) * 2)
    np.testing.assert_array_equal(x.numpy(), X)


def test_a_result_for_a_host_output_stays_on_the_host(ascend_standin):
    """The same specialization called with the output on the host, then on the device:
    the result buffer is device memory only when its destination is."""
    out = np.zeros_like(X)
    _call(_into, pyasc.device_array(X), out)
    np.testing.assert_array_equal(out, np.maximum(X, 0) * 2)
    dev = pyasc.device_array(np.zeros_like(X))
    _call(_into, X, dev)
    np.testing.assert_array_equal(dev.numpy(), np.maximum(X, 0) * 2)


def test_a_device_array_read_again_after_its_update(ascend_standin):
    """``x += 1`` then a kernel reading the new x: no staging (each snapshot is read
    before the next write)."""
    x = pyasc.device_array(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = hybrid(target="ascend")(_bump_then_double)(x)
    np.testing.assert_array_equal(got, (X + 1) * 2)
    np.testing.assert_array_equal(x.numpy(), X + 1)


def test_in_place_update_of_a_device_array(ascend_standin):
    x = pyasc.device_array(X)
    before = ascend_standin.copied()
    _call(_bump, x)
    _call(_bump, x)
    moved = _delta(ascend_standin, before)
    assert moved["h2d"] == 0 and moved["d2h"] == 0, moved
    np.testing.assert_array_equal(x.numpy(), (X + 1) + 1)  # float32 rounding, twice


def test_a_snapshot_read_after_a_write_is_staged(ascend_standin):
    """``y = x * 1; x += 1`` returns the old x: the device array is staged (warned),
    never read after the write through an alias."""
    x = pyasc.device_array(X)
    with pytest.warns(PyascPerformanceWarning, match="'x' is copied to the host"):
        y = hybrid(target="ascend")(_copy_then_bump)(x)
    np.testing.assert_array_equal(y, X)
    np.testing.assert_array_equal(x.numpy(), X + 1)


def test_host_reads_stage_the_argument_with_a_warning(ascend_standin):
    x = pyasc.device_array(X)
    with pytest.warns(PyascPerformanceWarning, match="'x' is copied to the host"):
        got = hybrid(target="ascend")(_host_sum)(x)
    np.testing.assert_allclose(got, X.sum() + X[0, 0], atol=1e-3)  # the sum is ~0


def test_device_and_host_arguments_mix(ascend_standin):
    @hybrid(target="ascend")
    def add(a, b):
        return a + b

    y = np.arange(X.size, dtype=np.float32).reshape(X.shape)
    np.testing.assert_array_equal(add(pyasc.device_array(X), y), X + y)
    np.testing.assert_array_equal(add(y, pyasc.device_array(X)), X + y)


def test_no_device_memory_is_left(ascend_standin):
    x = pyasc.device_array(X)
    _call(_relu, x)
    _call(_into, x, pyasc.device_array(np.zeros_like(X)))
    live = ascend_standin.stats().device_blocks
    x.free()
    assert ascend_standin.stats().device_blocks == live - 1
    acl.shutdown()
    assert ascend_standin.stats().device_blocks == 0


@pytest.mark.parametrize("target", ["cpu", "ascend-sim", "interpret"])
def test_other_targets_refuse_a_device_array_naming_numpy(ascend_standin, target):
    x = pyasc.device_array(X)
    fn = hybrid(target=target)(_relu)
    with pytest.raises(ArgumentError) as info:
        fn(x)
    assert info.value.code == "E50040"
    assert "'x'" in str(info.value) and ".numpy()" in str(info.value)
    with pytest.raises(ArgumentError, match=r"'pair'\[1\]"):
        hybrid(target=target)(_pair)((X, x))


def _pair(pair):
    return pair[0] + pair[1]
