"""The native entry: scalar kinds in and out, allocation failures, and when it exists."""

from __future__ import annotations

import numpy as np
import pytest
from cpukit import program, relu_text

from pyasc import errors, hybrid
from pyasc.backend.llvm import LLVMBackend
from pyasc.runtime import MISS
from pyasc.runtime.pycall import native_supported


def test_native_entries_are_supported_here():
    assert native_supported()
    assert repr(MISS) == "<pyasc.MISS>"


def test_only_requested_kernels_get_one():
    k = LLVMBackend().compile(program(relu_text("?"), "relu", "native-none", cache=False))
    assert k.abi.native is None and k.native_entry() is None


@pytest.mark.parametrize("value", [np.float16(1.5), np.float32(-2.25), np.float64(3.5),
                                   np.int8(-7), np.uint16(65535), np.int64(-2 ** 40),
                                   np.bool_(True), 7, -2.5, False])
def test_scalar_kinds_round_trip(value):
    @hybrid(target="cpu")
    def echo(v, x):
        return v, x[0] + v

    x = np.ones(2, np.float32)
    want = echo.__wrapped__(value, x)
    for _ in range(2):
        got = echo(value, x)
        assert type(got[0]) is type(want[0]) and got[0] == want[0]
        assert type(got[1]) is type(want[1]) and got[1] == want[1]
    assert echo._fast is not None and echo._fast(value, x) is not MISS


def test_allocation_failures_fall_back_to_python():
    @hybrid(target="cpu")
    def make(n):
        return np.zeros(n) + 1

    np.testing.assert_array_equal(make(3), np.ones(3))
    assert make._fast(-1) is MISS  # PyArray_Empty refused: nothing was called
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        make(-1)  # the Python path says what numpy says
    assert make._fast(2 ** 62) is MISS
    with pytest.raises(errors.OutOfMemoryError, match="result buffer of shape"):
        make(2 ** 62)
    np.testing.assert_array_equal(make(4), np.ones(4))


def test_many_parameters():
    @hybrid(target="cpu")
    def weighted(a, b, c, d, e, f, wa, wb, wc, wd, we, wf):
        return a * wa + b * wb + c * wc + d * wd + e * we + f * wf

    arrays = [np.full(5, i, np.float64) for i in range(6)]
    weights = [0.5, 2, 1.5, True, np.float64(3), -1.0]
    want = weighted.__wrapped__(*arrays, *weights)
    for _ in range(2):
        np.testing.assert_array_equal(weighted(*arrays, *weights), want)
    assert weighted._fast is not None


def test_without_native_entries_the_ctypes_caller_serves(monkeypatch):
    import pyasc.runtime.pycall as pycall

    monkeypatch.setattr(pycall, "native_supported", lambda: False)

    @hybrid(target="cpu")
    def scale(x, s):
        return x * s

    x = np.arange(4, dtype=np.float32)
    for s in (2.0, 3, np.float32(0.5)):
        np.testing.assert_array_equal(scale(x, s), scale.__wrapped__(x, s))
    assert scale._fast is None and len(scale._calls.by_key) == 3
