"""Structured control flow and run-time checks, written as loop-level IR text."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from llvmkit import both, compile_ir, descriptor_twin

from pyasc.errors import IndexOutOfBoundsError, OutOfMemoryError
from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter

SUM = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<?xf64>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %z = "arith.constant"() {value = 0.0} : () -> f64
    %n = "mem.dim"(%x) {axis = 0} : (memref<?xf64>) -> index
    %s = "loop.for"(%c0, %n, %c1, %z) ({
    ^bb0(%i: index, %acc: f64):
      %v = "mem.load"(%x, %i) : (memref<?xf64>, index) -> f64
      %a = "arith.add"(%acc, %v) : (f64, f64) -> f64
      "loop.yield"(%a) : (f64) -> ()
    }) : (index, index, index, f64) -> f64
    "func.return"(%s) : (f64) -> ()
  }) {function_type = (memref<?xf64>) -> f64, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_loop_carried_sum():
    kernel = compile_ir(SUM)
    for n in (0, 1, 7, 1000):
        x = np.arange(n, dtype=np.float64) * 0.5
        (s,) = both(kernel, [x])
        assert isinstance(s, np.float64)
        assert s == sum(x.tolist())


COLLATZ = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%n: index):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c2 = "arith.constant"() {value = 2} : () -> index
    %c3 = "arith.constant"() {value = 3} : () -> index
    %r, %steps = "loop.while"(%n, %c0) ({
    ^bb0(%v: index, %k: index):
      %more = "arith.cmp"(%v, %c1) {predicate = "gt"} : (index, index) -> i1
      "loop.condition"(%more, %v, %k) : (i1, index, index) -> ()
    }, {
    ^bb0(%v2: index, %k2: index):
      %m = "arith.rem"(%v2, %c2) : (index, index) -> index
      %even = "arith.cmp"(%m, %c0) {predicate = "eq"} : (index, index) -> i1
      %next = "loop.if"(%even) ({
        %h = "arith.floordiv"(%v2, %c2) : (index, index) -> index
        "loop.yield"(%h) : (index) -> ()
      }, {
        %t = "arith.mul"(%v2, %c3) : (index, index) -> index
        %t1 = "arith.add"(%t, %c1) : (index, index) -> index
        "loop.yield"(%t1) : (index) -> ()
      }) : (i1) -> index
      %k3 = "arith.add"(%k2, %c1) : (index, index) -> index
      "loop.yield"(%next, %k3) : (index, index) -> ()
    }) : (index, index) -> (index, index)
    "func.return"(%steps) : (index) -> ()
  }) {function_type = (index) -> index, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def _collatz(n: int) -> int:
    k = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        k += 1
    return k


def test_while_with_if_inside():
    kernel = compile_ir(COLLATZ)
    for n in (1, 2, 7, 27, 97):
        (k,) = both(kernel, [n])
        assert type(k) is int and k == _collatz(n)


STEPS = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%lo: index, %hi: index, %step: index, %out: memref<?xindex>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %k = "loop.for"(%lo, %hi, %step, %c0) ({
    ^bb0(%i: index, %pos: index):
      "mem.store"(%i, %out, %pos) : (index, memref<?xindex>, index) -> ()
      %p1 = "arith.add"(%pos, %c1) : (index, index) -> index
      "loop.yield"(%p1) : (index) -> ()
    }) {parallel = false} : (index, index, index, index) -> index
    "func.return"(%k) : (index) -> ()
  }) {function_type = (index, index, index, memref<?xindex>) -> index, sym_name = "f"} :
  () -> ()
}) : () -> ()
"""


@pytest.mark.parametrize("lo,hi,step", [(0, 10, 1), (0, 10, 3), (10, 0, -1), (10, -3, -4),
                                        (5, 5, 1), (5, 2, 1), (2, 5, -1), (-7, 7, 5)])
def test_for_with_dynamic_steps(lo, hi, step):
    kernel = compile_ir(STEPS)
    out = np.full(20, -99, np.int64)
    (k,) = kernel([lo, hi, step, out])
    want = list(range(lo, hi, step))
    assert k == len(want)
    assert out[:k].tolist() == want


def test_zero_step_is_a_value_error():
    kernel = compile_ir(STEPS)
    with pytest.raises(ValueError, match="loop step must not be zero"):
        kernel([0, 10, 0, np.zeros(20, np.int64)])


def _assert_kernel(kind: str) -> str:
    return f"""
"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%x: memref<?xf32>, %lim: f32):
    %c0 = "arith.constant"() {{value = 0}} : () -> index
    %c1 = "arith.constant"() {{value = 1}} : () -> index
    %n = "mem.dim"(%x) {{axis = 0}} : (memref<?xf32>) -> index
    %tmp = "mem.alloc"(%n) : (index) -> memref<?xf32>
    "loop.for"(%c0, %n, %c1) ({{
    ^bb0(%i: index):
      %v = "mem.load"(%x, %i) : (memref<?xf32>, index) -> f32
      %ok = "arith.cmp"(%v, %lim) {{predicate = "lt"}} : (f32, f32) -> i1
      "func.assert"(%ok) {{kind = "{kind}", message = "k.py:3:5: value too big"}} : (i1) -> ()
      "mem.store"(%v, %tmp, %i) : (f32, memref<?xf32>, index) -> ()
      "loop.yield"() : () -> ()
    }}) : (index, index, index) -> ()
    "mem.dealloc"(%tmp) : (memref<?xf32>) -> ()
    "func.return"() : () -> ()
  }}) {{function_type = (memref<?xf32>, f32) -> (), sym_name = "f"}} : () -> ()
}}) : () -> ()
"""


@pytest.mark.parametrize("kind,exc", [("assert", AssertionError), ("bounds", IndexError),
                                      ("shape", ValueError)])
def test_assert_kinds_raise_with_the_source_location(kind, exc):
    kernel = compile_ir(_assert_kernel(kind))
    x = np.arange(10, dtype=np.float32)
    assert kernel([x, 100.0]) == []
    with pytest.raises(exc, match="k.py:3:5: value too big"):
        kernel([x, 5.0])
    with pytest.raises(exc):
        Interpreter(parse_module(_assert_kernel(kind))).call("f", x, 5.0)


def test_failed_assert_frees_temporaries():
    kernel = compile_ir(_assert_kernel("assert"))
    x = np.arange(1 << 18, dtype=np.float32)  # 1 MiB temporary per call
    for _ in range(50):
        with pytest.raises(AssertionError):
            kernel([x, 1000.0])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(1000):  # would leak 1 GiB
        with pytest.raises(AssertionError):
            kernel([x, 1000.0])
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 100_000


NESTED = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%a: memref<5x7xi32>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c5 = "arith.constant"() {value = 5} : () -> index
    %c7 = "arith.constant"() {value = 7} : () -> index
    %zero = "arith.constant"() {value = 0} : () -> i32
    %out = "mem.alloc"() : () -> memref<7xi32>
    "loop.for"(%c0, %c7, %c1) ({
    ^bb0(%j: index):
      %s = "loop.for"(%c0, %c5, %c1, %zero) ({
      ^bb0(%i: index, %acc: i32):
        %v = "mem.load"(%a, %i, %j) : (memref<5x7xi32>, index, index) -> i32
        %pos = "arith.cmp"(%v, %zero) {predicate = "gt"} : (i32, i32) -> i1
        %acc2 = "loop.if"(%pos) ({
          %t = "arith.add"(%acc, %v) : (i32, i32) -> i32
          "loop.yield"(%t) : (i32) -> ()
        }, {
          "loop.yield"(%acc) : (i32) -> ()
        }) : (i1) -> i32
        "loop.yield"(%acc2) : (i32) -> ()
      }) : (index, index, index, i32) -> i32
      "mem.store"(%s, %out, %j) : (i32, memref<7xi32>, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "func.return"(%out) : (memref<7xi32>) -> ()
  }) {function_type = (memref<5x7xi32>) -> memref<7xi32>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_nested_loops_with_if_and_static_shapes():
    kernel = compile_ir(NESTED)
    a = np.arange(35, dtype=np.int32).reshape(5, 7) - 17
    (out,) = both(kernel, [a])
    np.testing.assert_array_equal(out, np.where(a > 0, a, 0).sum(axis=0))
    assert kernel.abi.buffers[0].prealloc and out.flags.owndata


def test_allocation_failure_is_out_of_memory():
    text = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%n: index):
    %buf = "mem.alloc"(%n, %n) : (index, index) -> memref<?x?xf64>
    %k = "arith.constant"() {value = 3} : () -> index
    %m = "arith.mul"(%n, %k) : (index, index) -> index
    %buf2 = "mem.alloc"(%m) : (index) -> memref<?xf64>
    "mem.dealloc"(%buf2) : (memref<?xf64>) -> ()
    "func.return"(%buf) : (memref<?x?xf64>) -> ()
  }) {function_type = (index) -> memref<?x?xf64>, sym_name = "f"} : () -> ()
}) : () -> ()
"""
    kernel = compile_ir(text)
    assert kernel([3])[0].shape == (3, 3)
    with pytest.raises(OutOfMemoryError, match="E50003"):
        kernel([2 ** 40])  # 3 * 2**40 f64 = 24 TiB
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        kernel([-1])  # numpy's error for a negative size, not "out of memory"


CALLS = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%n: index):
    %c1 = "arith.constant"() {value = 1} : () -> index
    %small = "arith.cmp"(%n, %c1) {predicate = "le"} : (index, index) -> i1
    %r = "loop.if"(%small) ({
      "loop.yield"(%c1) : (index) -> ()
    }, {
      %m = "arith.sub"(%n, %c1) : (index, index) -> index
      %f = "func.call"(%m) {callee = "fact"} : (index) -> index
      %p = "arith.mul"(%n, %f) : (index, index) -> index
      "loop.yield"(%p) : (index) -> ()
    }) : (i1) -> index
    "func.return"(%r) : (index) -> ()
  }) {function_type = (index) -> index, sym_name = "fact"} : () -> ()
  "func.func"() ({
  ^bb0(%x: memref<?xf64>, %i: index):
    %n = "mem.dim"(%x) {axis = 0} : (memref<?xf64>) -> index
    %ok = "arith.cmp"(%i, %n) {predicate = "lt"} : (index, index) -> i1
    "func.assert"(%ok) {kind = "bounds", message = "k.py:9:3: index out of range"} :
      (i1) -> ()
    %v = "mem.load"(%x, %i) : (memref<?xf64>, index) -> f64
    %buf = "mem.alloc"(%n) : (index) -> memref<?xf64>
    "mem.store"(%v, %buf, %i) : (f64, memref<?xf64>, index) -> ()
    "func.return"(%v, %buf) : (f64, memref<?xf64>) -> ()
  }) {function_type = (memref<?xf64>, index) -> (f64, memref<?xf64>), sym_name = "pick"} :
  () -> ()
  "func.func"() ({
  ^bb0(%x: memref<?xf64>, %i: index, %k: index):
    %tmp = "mem.alloc"(%k) : (index) -> memref<?xf64>
    %v, %b = "func.call"(%x, %i) {callee = "pick"} : (memref<?xf64>, index) ->
      (f64, memref<?xf64>)
    %w = "mem.load"(%b, %i) : (memref<?xf64>, index) -> f64
    "mem.dealloc"(%b) : (memref<?xf64>) -> ()
    "mem.dealloc"(%tmp) : (memref<?xf64>) -> ()
    %f = "func.call"(%k) {callee = "fact"} : (index) -> index
    %s = "arith.add"(%v, %w) : (f64, f64) -> f64
    "func.return"(%s, %f) : (f64, index) -> ()
  }) {function_type = (memref<?xf64>, index, index) -> (f64, index), sym_name = "f"} :
  () -> ()
}) : () -> ()
"""


def test_calls_recursion_and_errors_raised_in_callees():
    kernel = compile_ir(CALLS)
    x = np.array([1.5, 2.5, 4.0])
    s, f = both(kernel, [x, 2, 5])
    assert s == 8.0 and f == 120
    with pytest.raises(IndexError, match="k.py:9:3: index out of range"):
        kernel([x, 3, 5])
    want = Interpreter(parse_module(CALLS)).call("f", x, 1, 6)
    assert [float(v) for v in kernel([x, 1, 6])] == [float(v) for v in want]


REPORTING = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%i: index, %n: index):
    %ok = "arith.cmp"(%i, %n) {predicate = "lt"} : (index, index) -> i1
    "func.assert"(%ok, %i, %n) {kind = "bounds", message = "index {0} is out of bounds for axis 0 with size {1}"} : (i1, index, index) -> () loc("k.py":9:3)
    "func.return"() : () -> ()
  }) {function_type = (index, index) -> (), sym_name = "check"} : () -> ()
  "func.func"() ({
  ^bb0(%x: memref<?xf64>, %i: index, %j: i32, %u: ui8):
    %n = "mem.dim"(%x) {axis = 0} : (memref<?xf64>) -> index
    "func.call"(%i, %n) {callee = "check"} : (index, index) -> ()
    %c5 = "arith.constant"() {value = 5} : () -> i32
    %ok = "arith.cmp"(%j, %c5) {predicate = "gt"} : (i32, i32) -> i1
    "func.assert"(%ok, %j, %u) {kind = "assert", message = "j = {0}, u = {1}, {{braces}}"} : (i1, i32, ui8) -> () loc("k.py":4:1)
    %v = "mem.load"(%x, %i) : (memref<?xf64>, index) -> f64
    "func.return"(%v) : (f64) -> ()
  }) {function_type = (memref<?xf64>, index, i32, ui8) -> f64, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_failed_checks_report_their_values_on_both_entries_and_in_callees():
    kernel = compile_ir(REPORTING)
    x = np.arange(4.0)
    assert both(kernel, [x, 3, 9, np.uint8(1)]) == [3.0]
    for call in (kernel, descriptor_twin(kernel)):
        with pytest.raises(IndexOutOfBoundsError) as info:
            call([x, 7, 9, np.uint8(1)])
        assert "index 7 is out of bounds for axis 0 with size 4" in str(info.value)
        assert "--> k.py:9:3" in str(info.value) and isinstance(info.value, IndexError)
        with pytest.raises(AssertionError, match=r"k.py:4:1: j = -7, u = 200, \{braces\}"):
            call([x, 0, -7, np.uint8(200)])
    with pytest.raises(IndexOutOfBoundsError, match="index 7 is out of bounds"):
        Interpreter(parse_module(REPORTING)).call("f", x, 7, 9, 1)
    with pytest.raises(AssertionError, match=r"j = -7, u = 200, \{braces\}"):
        Interpreter(parse_module(REPORTING)).call("f", x, 0, -7, 200)


def test_fastmath_lets_float_reductions_vectorize():
    plain = compile_ir(SUM, sum_lanes=False)  # the loop's order (sum-lanes would lane it)
    fast = compile_ir(SUM, fastmath=True, sum_lanes=False)
    assert "fadd <" not in plain.llvm_ir  # strict order: a scalar chain
    assert "fadd reassoc" in fast.llvm_ir and "x double>" in fast.llvm_ir
    x = np.random.default_rng(1).standard_normal(1001)
    assert abs(fast([x])[0] - plain([x])[0]) < 1e-9


@pytest.mark.parametrize("lo,hi,step", [(10, -3, -3), (0, 10, 4), (5, 5, -1), (-2, 9, 1),
                                        (3, 9, -2)])
def test_for_with_constant_steps(lo, hi, step):
    text = STEPS.replace('^bb0(%lo: index, %hi: index, %step: index, %out: memref<?xindex>):',
                         f'''^bb0(%out: memref<?xindex>):
    %lo = "arith.constant"() {{value = {lo}}} : () -> index
    %hi = "arith.constant"() {{value = {hi}}} : () -> index
    %step = "arith.constant"() {{value = {step}}} : () -> index''').replace(
        "(index, index, index, memref<?xindex>) -> index", "(memref<?xindex>) -> index")
    out = np.full(20, -99, np.int64)
    (k,) = compile_ir(text)([out])
    assert out[:k].tolist() == list(range(lo, hi, step))
