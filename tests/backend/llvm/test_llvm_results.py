"""Results whose memory the kernel chooses at run time: a parameter, a view of one, or a
buffer (preallocated, or allocated by the kernel only on some paths), told apart by the
runtime from the result descriptor's data pointer, through both entries, without
leaking the allocations that are not returned."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from llvmkit import compile_ir, descriptor_twin

from pyasc.errors import ArgumentError

PARAM_OR_NEW = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<SIZExf64>, %c: i1):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %seven = "arith.constant"() {value = 7.0} : () -> f64
    %y = "loop.if"(%c) ({
      "loop.yield"(%x) : (memref<SIZExf64>) -> ()
    }, {
      %a = "mem.alloc"() : () -> memref<SIZExf64>
      %zero = "arith.constant"() {value = 0.0} : () -> f64
      "mem.fill"(%zero, %a) : (f64, memref<SIZExf64>) -> ()
      "loop.yield"(%a) : (memref<SIZExf64>) -> ()
    }) : (i1) -> memref<SIZExf64>
    "mem.store"(%seven, %y, %c0) : (f64, memref<SIZExf64>, index) -> ()
    "func.return"(%y) : (memref<SIZExf64>) -> ()
  }) {function_type = (memref<SIZExf64>, i1) -> memref<SIZExf64>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def _param_or_new(size: int):
    return compile_ir(PARAM_OR_NEW.replace("SIZE", str(size)))


def _calls(kernel):
    return (kernel, descriptor_twin(kernel))


def test_a_parameter_or_a_buffer_the_kernel_allocates_on_one_path():
    kernel = _param_or_new(4)
    (res,), (buf,) = kernel.abi.results, kernel.abi.buffers
    assert (res.kind, res.choices, res.buffer, buf.prealloc) == ("array", (0,), 0, False)
    assert kernel.abi.params[0].writes  # the store goes through the if result
    for call in _calls(kernel):
        x = np.arange(4.0)
        assert call([x, True])[0] is x and x[0] == 7.0
        x = np.arange(4.0)
        (out,) = call([x, False])
        assert not np.shares_memory(out, x) and x[0] == 0.0
        np.testing.assert_array_equal(out, [7.0, 0.0, 0.0, 0.0])


def test_a_read_only_array_is_refused_when_the_chosen_memory_is_written():
    x = np.arange(4.0)
    x.flags.writeable = False
    for call in _calls(_param_or_new(4)):
        with pytest.raises(ArgumentError, match="read-only"):
            call([x, True])


def test_allocations_not_returned_are_freed_and_returned_ones_owned():
    kernel = _param_or_new(1 << 16)  # 512 KiB per allocation
    x = np.ones(1 << 16)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(2000):  # 1 GiB if either kind of call leaked
        (out,) = kernel([x, i % 2 == 0])
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000
    assert out[0] == 7.0 and out[1:].sum() == 0.0


VIEW_OR_BUFFER = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<6xf64>, %c: i1):
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c5 = "arith.constant"() {value = 5} : () -> index
    %a = "mem.alloc"() : () -> memref<5xf64>
    %zero = "arith.constant"() {value = 0.0} : () -> f64
    "mem.fill"(%zero, %a) : (f64, memref<5xf64>) -> ()
    %v = "mem.subview"(%x, %c1, %c5, %c1) : (memref<6xf64>, index, index, index) ->
        memref<5xf64>
    %w = "loop.if"(%c) ({
      "loop.yield"(%v) : (memref<5xf64>) -> ()
    }, {
      "loop.yield"(%a) : (memref<5xf64>) -> ()
    }) : (i1) -> memref<5xf64>
    "func.return"(%w) : (memref<5xf64>) -> ()
  }) {function_type = (memref<6xf64>, i1) -> memref<5xf64>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_a_view_of_a_parameter_or_a_preallocated_buffer():
    kernel = compile_ir(VIEW_OR_BUFFER)
    assert kernel.abi.buffers[0].prealloc  # the one allocation, in the entry block
    for call in _calls(kernel):
        x = np.arange(6.0)
        (view,) = call([x, True])
        assert view is not x and np.shares_memory(view, x)
        view[0] = -1.0  # an alias, as numpy's x[1:]
        assert x[1] == -1.0
        (out,) = call([x, False])
        assert out.flags.owndata and not np.shares_memory(out, x)
        np.testing.assert_array_equal(out, np.zeros(5))


VIEW_OF_CHOICE = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<6xf64>, %c: i1):
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c5 = "arith.constant"() {value = 5} : () -> index
    %y = "loop.if"(%c) ({
      "loop.yield"(%x) : (memref<6xf64>) -> ()
    }, {
      %a = "mem.alloc"() : () -> memref<6xf64>
      %two = "arith.constant"() {value = 2.0} : () -> f64
      "mem.fill"(%two, %a) : (f64, memref<6xf64>) -> ()
      "loop.yield"(%a) : (memref<6xf64>) -> ()
    }) : (i1) -> memref<6xf64>
    %v = "mem.subview"(%y, %c1, %c5, %c1) : (memref<6xf64>, index, index, index) ->
        memref<5xf64>
    "func.return"(%v) : (memref<5xf64>) -> ()
  }) {function_type = (memref<6xf64>, i1) -> memref<5xf64>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_a_view_of_a_value_chosen_at_run_time():
    kernel = compile_ir(VIEW_OF_CHOICE)
    assert not kernel.abi.params[0].writes
    for call in _calls(kernel):
        x = np.arange(6.0)
        (view,) = call([x, True])
        assert np.shares_memory(view, x)
        np.testing.assert_array_equal(view, x[1:])
        (out,) = call([x, False])
        assert not np.shares_memory(out, x)
        np.testing.assert_array_equal(out, np.full(5, 2.0))
