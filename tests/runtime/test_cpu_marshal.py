"""Calling CPU kernels: scalars and arrays in, results out, bad calls -> ArgumentError,
no leaks, and the fast and descriptor entries agreeing."""

from __future__ import annotations

import gc
import resource
import threading
import tracemalloc

import numpy as np
import pytest
from cpukit import REPEAT2, SCALE_INPLACE, program, relu_text

from pyasc.backend.llvm import LLVMBackend
from pyasc.errors import ArgumentError
from pyasc.runtime.cpu import CPUKernel, fast_abi_supported


def _kernel(text: str, entry: str, key: str):
    return LLVMBackend().compile(program(text, entry, key, cache=False))


def _both_paths(kernel):
    code = kernel._keepalive
    return [kernel, CPUKernel(kernel.abi, code.addresses, keepalive=code, fast=False)]


def test_fast_entry_is_available_here():
    assert fast_abi_supported()


def test_scalars_in_and_out_and_in_place_writes():
    kernel = _kernel(SCALE_INPLACE, "scale", "scale")
    for call in _both_paths(kernel):
        base = np.arange(24, dtype=np.float64).reshape(4, 6)
        x = base[:, :3]  # row stride 6 elements, unit inner stride
        w, nf, same = call([x, 3, 0.5, True])
        assert w == 1.5 and type(w) is np.float64
        assert nf == np.False_ and type(nf) is np.bool_
        assert same is x
        np.testing.assert_array_equal(base[0, :4], [0.0, 1.5, 3.0, 3.0])
        w2, _, _ = call([x, np.int64(2), np.float32(0.25), np.bool_(False)])
        assert w2 == 0.5


@pytest.mark.parametrize("args,match", [
    ([], "expected 1 arguments"),
    ([np.zeros(4, np.float32), 1], "expected 1 arguments"),
    ([np.zeros(4, np.float64)], "expected dtype float32, got float64"),
    ([np.zeros((2, 2), np.float32)], "expected 1 dimension"),
    ([np.zeros(5, np.float32)], r"expected shape \(4,\), got \(5,\)"),
    ([np.zeros(8, np.float32)[::2]], "C-contiguous"),
    ([[0.0, 1.0, 2.0, 3.0]], "expected a numpy array of float32, got list"),
    ([np.zeros(4, np.float32).view(np.int32)], "expected dtype float32"),
    ([np.frombuffer(b"\0" * 17, np.uint8)[1:].view(np.float32)], "not aligned"),
])
def test_bad_arrays_raise_argument_error(args, match):
    kernel = _kernel(relu_text("4"), "relu", "relu4")
    for call in _both_paths(kernel):
        with pytest.raises(ArgumentError, match=match) as info:
            call(args)
        assert info.value.code == "E50040"


@pytest.mark.parametrize("args,match", [
    (["3", 1.0, True], "expected a number of type int, got str"),
    ([3.5, 1.0, True], "expected an integer, got float"),
    ([2 ** 63, 1.0, True], "does not fit in int"),
    ([True, 1.0, True], "expected a number of type int, got bool"),
    ([3, "x", True], "expected a number of type float64"),
    ([3, 1.0, 1], "expected a bool, got int"),
])
def test_bad_scalars_raise_argument_error(args, match):
    kernel = _kernel(SCALE_INPLACE, "scale", "scale")
    x = np.zeros((4, 3))
    for call in _both_paths(kernel):
        with pytest.raises(ArgumentError, match=match):
            call([x, *args])


def test_layout_class_and_writeability_are_checked():
    kernel = _kernel(SCALE_INPLACE, "scale", "scale")
    ro = np.zeros((4, 3))
    ro.flags.writeable = False
    cases = [(np.zeros((3, 4)).T, "stride of 1 element"), (ro, "read-only"),
             (np.zeros((4, 3), np.float32), "dtype float64")]
    for call in _both_paths(kernel):
        for x, match in cases:
            with pytest.raises(ArgumentError, match=match):
                call([x, 1, 1.0, True])


def test_dynamic_shape_results_of_many_sizes_and_subclasses():
    kernel = _kernel(relu_text("?"), "relu", "relu")
    for n in (0, 1, 3, 1000):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        for call in _both_paths(kernel):
            (out,) = call([x])
            np.testing.assert_array_equal(out, np.maximum(x, 0))
            assert out.flags.owndata and out.shape == (n,)

    class Sub(np.ndarray):
        pass

    sub = np.array([-1.0, 2.0, 3.0], np.float32).view(Sub)
    for call in _both_paths(kernel):
        np.testing.assert_array_equal(call([sub])[0], [0.0, 2.0, 3.0])


@pytest.mark.parametrize("text,entry", [(relu_text("?"), "relu"), (REPEAT2, "repeat2")])
def test_many_calls_do_not_leak(text, entry):
    """Results preallocated by numpy (relu) and allocated by the kernel (repeat2)."""
    kernel = _kernel(text, entry, entry)
    assert kernel.abi.buffers[0].prealloc == (entry == "relu")
    x = np.ones(1 << 15, np.float32)  # 128 or 256 KiB result per call
    for _ in range(200):
        kernel([x])
    gc.collect()
    tracemalloc.start()
    before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    snap = tracemalloc.take_snapshot()
    for _ in range(4000):  # 0.5-1 GiB if results leaked
        (out,) = kernel([x])
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap, "filename"))
    tracemalloc.stop()
    assert grown < 200_000
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_rss < 100_000
    assert out.sum() == out.size


def test_threads_share_a_kernel_safely():
    kernel = _kernel(SCALE_INPLACE, "scale", "scale")
    errors = []

    def work(seed: int) -> None:
        try:
            for i in range(300):
                x = np.ones((4, 3))
                w, _, _ = kernel([x, seed, float(i), True])
                assert w == seed * i and x[0, 0] == w
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
