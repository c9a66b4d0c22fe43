"""Results in one of several allocations chosen at run time (``tracking.py``): views
of a local array or of a new one, of an array made in each iteration of a loop, of an
argument; the kernel hands over the allocations a result lies in and frees the others
(and those that escaped a loop but are not returned), on success and on error exits,
through both entries."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from llvmkit import compile_ir, descriptor_twin

from pyasc import hybrid

VIEW_OF_ONE_OF_TWO = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%c: i1):
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c2 = "arith.constant"() {value = 2} : () -> index
    %c4 = "arith.constant"() {value = 4} : () -> index
    %one = "arith.constant"() {value = 1.0} : () -> f64
    %two = "arith.constant"() {value = 2.0} : () -> f64
    %a = "mem.alloc"() : () -> memref<6xf64>
    "mem.fill"(%one, %a) : (f64, memref<6xf64>) -> ()
    %y = "loop.if"(%c) ({
      %v = "mem.subview"(%a, %c2, %c4, %c1) : (memref<6xf64>, index, index, index) ->
          memref<4xf64>
      "loop.yield"(%v) : (memref<4xf64>) -> ()
    }, {
      %b = "mem.alloc"() : () -> memref<4xf64>
      "mem.fill"(%two, %b) : (f64, memref<4xf64>) -> ()
      "loop.yield"(%b) : (memref<4xf64>) -> ()
    }) : (i1) -> memref<4xf64>
    %w = "mem.subview"(%a, %c2, %c2, %c1) : (memref<6xf64>, index, index, index) ->
        memref<2xf64>
    "func.return"(%y, %w) : (memref<4xf64>, memref<2xf64>) -> ()
  }) {function_type = (i1) -> (memref<4xf64>, memref<2xf64>), sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_two_results_in_one_of_two_allocations_through_both_entries():
    kernel = compile_ir(VIEW_OF_ONE_OF_TWO)
    assert [b.prealloc for b in kernel.abi.buffers] == [False, False]
    assert kernel.abi.buffers[1].shares == (0,)  # both results may lie in ``a``
    for call in (kernel, descriptor_twin(kernel)):
        y, w = call([True])
        np.testing.assert_array_equal(y, np.ones(4))
        assert np.shares_memory(y, w)  # one allocation (owned once: ``own``)
        w[0] = 5.0
        assert y[0] == 5.0
        y, w = call([False])
        np.testing.assert_array_equal(y, np.full(4, 2.0))
        assert not np.shares_memory(y, w)
        np.testing.assert_array_equal(w, np.ones(2))


@hybrid
def _reshape_or_zeros(x, a, b):
    t = np.empty(x.shape[0], np.float32)
    t[:] = x * 2.0
    if a == 1:
        r = t.reshape(b, -1)
    else:
        r = np.zeros((b, x.shape[0] // b), np.float32)
    return r


@hybrid
def _argument_local_or_new(x, a, b):
    t = np.empty(x.shape[0], np.float32)
    t[:] = x * 2.0
    if a == 0:
        r = x[b:]
    elif a == 1:
        r = t[b:]
    else:
        r = np.zeros(x.shape[0] - b, np.float32)
    return r


@hybrid
def _first_of_loop(x, k):
    r = np.zeros(x.shape[0] // 2, np.float32)
    for i in range(k):
        t = np.empty(x.shape[0], np.float32)
        t[:] = x + i
        if i == 0:
            r = t[1::2]
    return r


@hybrid
def _early_return(x, k):
    for i in range(k):
        t = np.empty(4096)
        t[:] = x * i
        if i == 2:
            return t.reshape(64, 64)
    return np.zeros((64, 64))


def _grows_by(fn, calls: int) -> int:
    """KiB the peak RSS grows by over ``calls`` calls of ``fn``."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(calls):
        fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before


N = 1 << 17  # 512 KiB of float32 per array: 1000 calls leaking one are 500 MiB


@pytest.mark.parametrize("fn,args", [
    (_reshape_or_zeros, (1, 4)), (_reshape_or_zeros, (0, 4)),
    (_argument_local_or_new, (0, 3)), (_argument_local_or_new, (1, 3)),
    (_argument_local_or_new, (2, 3)),
    (_first_of_loop, (3,)), (_first_of_loop, (0,)),
])
def test_allocations_not_returned_are_freed(fn, args):
    x = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(fn(x, *args), fn.__wrapped__(x, *args))
    assert _grows_by(lambda: fn(x, *args), 1000) < 64_000


def test_an_error_exit_frees_the_tracked_allocations():
    x = np.arange(N, dtype=np.float32)

    def failing():
        with pytest.raises(ValueError, match="cannot reshape"):
            _reshape_or_zeros(x, 1, 3)  # t is made, then its reshape fails
    assert _grows_by(failing, 1000) < 64_000


@pytest.mark.parametrize("k", [1, 5])
def test_arrays_dropped_after_a_loop_are_freed(k):
    # ``t`` escapes the loop (the early return's value is carried out of it, then
    # copied): no dealloc frees it, the call's list does; 2000 calls leaking 3 of
    # them would be 190 MiB
    x = np.arange(4096.0)
    np.testing.assert_array_equal(_early_return(x, k), _early_return.__wrapped__(x, k))
    assert _grows_by(lambda: _early_return(x, k), 2000) < 32_000
