"""``lower-to-loops``: snapshot reuse, loop-carried tensors, returned buffers, calls,
fusion scopes and deallocation.  Every run is checked against the interpreter with
allocation tracking: no leak, no double free, no use after free (freed buffers are
poisoned by the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loops_harness import build, check, count_ops, lower, run_both

from pyasc.ir import parse_module
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.types import MemRefType, i1, i64, index

RNG = np.random.default_rng(3)


def module(params: str, results: str, body: str, extra: str = "") -> str:
    """IR text of ``func @f(params) -> results`` (and optionally more functions)."""
    names = ", ".join(p.split(":")[1].strip() for p in params.split(";") if p.strip())
    args = ", ".join(p.strip() for p in params.split(";") if p.strip())
    return f'''"builtin.module"() ({{
  "func.func"() ({{
  ^bb0({args}):
{body}
  }}) {{function_type = ({names}) -> {results}, sym_name = "f"}} : () -> ()
{extra}
}}) : () -> ()'''


def parse(params, results, body, extra=""):
    return parse_module(module(params, results, body, extra))


SNAPSHOT_THEN_ADD = '''
    %t = "mem.to_tensor"(%x) : (memref<?xf32>) -> tensor<?xf32>
    %one = "arith.constant"() {value = 1.0} : () -> f32
    %i0 = "arith.constant"() {value = 0} : () -> index
    %c5 = "arith.constant"() {value = 5.0} : () -> f32
    %before = "arith.add"(%t, %one) : (tensor<?xf32>, f32) -> tensor<?xf32>
    WRITE
    %y = "arith.add"(%t, %one) : (tensor<?xf32>, f32) -> tensor<?xf32>
    "func.return"(%y) : (tensor<?xf32>) -> ()'''


def test_snapshot_reused_when_no_write_before_last_use():
    body = SNAPSHOT_THEN_ADD.replace("WRITE", "")
    low = check(parse("%x: memref<?xf32>", "tensor<?xf32>", body), [RNG.random(5, np.float32)])
    assert count_ops(low, "mem.alloc") == 2  # the two results, no copy of %x


def test_snapshot_copied_when_written_before_use():
    write = '"mem.store"(%c5, %x, %i0) : (f32, memref<?xf32>, index) -> ()'
    low = check(parse("%x: memref<?xf32>", "tensor<?xf32>",
                      SNAPSHOT_THEN_ADD.replace("WRITE", write)),
                [RNG.random(5, np.float32)])
    assert count_ops(low, "mem.alloc") == 3  # the snapshot is a copy


def test_snapshot_reused_when_write_comes_after_last_use():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<4xi32>) -> tensor<4xi32>
    %s = "tensor.sum"(%t) {axes = [0], keepdims = false} : (tensor<4xi32>) -> i32
    %i0 = "arith.constant"() {value = 0} : () -> index
    "mem.store"(%s, %x, %i0) : (i32, memref<4xi32>, index) -> ()
    "func.return"(%s) : (i32) -> ()'''
    x = np.arange(4, dtype=np.int32)
    low = check(parse("%x: memref<4xi32>", "i32", body), [x])
    assert count_ops(low, "mem.alloc") == 0


LOOP_WRITE = '''
    %t = "mem.to_tensor"(%x) : (memref<?xi64>) -> tensor<?xi64>
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %n = "mem.dim"(%x) {axis = 0} : (memref<?xi64>) -> index
    %m = "arith.sub"(%n, %c1) : (index, index) -> index
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%i: index):
      %v = "tensor.extract"(%t, %i) : (tensor<?xi64>, index) -> i64
      %j = "arith.sub"(%m, %i) : (index, index) -> index
      "mem.store"(%v, %x, %j) : (i64, memref<?xi64>, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "func.return"() : () -> ()'''


def test_write_inside_loop_between_snapshot_and_use_forces_copy():
    # x[::-1] computed in place from a snapshot: iteration i reads t[i] after earlier
    # iterations wrote x[n-1-i'] — the snapshot must not alias x.
    x = np.arange(7, dtype=np.int64)
    low = check(parse("%x: memref<?xi64>", "()", LOOP_WRITE), [x])
    assert count_ops(low, "mem.alloc") == 1


def test_use_through_slice_of_snapshot_counts():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<6xf64>) -> tensor<6xf64>
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c3 = "arith.constant"() {value = 3} : () -> index
    %s = "tensor.slice"(%t, %c1, %c3, %c1) : (tensor<6xf64>, index, index, index) -> tensor<3xf64>
    %z = "arith.constant"() {value = -7.0} : () -> f64
    "mem.fill"(%z, %x) : (f64, memref<6xf64>) -> ()
    %y = "arith.mul"(%s, %s) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    "func.return"(%y) : (tensor<3xf64>) -> ()'''
    check(parse("%x: memref<6xf64>", "tensor<3xf64>", body), [RNG.random(6)])


def test_overlapping_self_assignment_copies():
    # x[1:] = x[:-1]
    body = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c4 = "arith.constant"() {value = 4} : () -> index
    %src = "mem.subview"(%x, %c0, %c4, %c1) : (memref<5xi8>, index, index, index) -> memref<4xi8, strided<[1]>>
    %dst = "mem.subview"(%x, %c1, %c4, %c1) : (memref<5xi8>, index, index, index) -> memref<4xi8, strided<[1]>>
    %t = "mem.to_tensor"(%src) : (memref<4xi8, strided<[1]>>) -> tensor<4xi8>
    "mem.write"(%t, %dst) : (tensor<4xi8>, memref<4xi8, strided<[1]>>) -> ()
    "func.return"() : () -> ()'''
    x = np.arange(5, dtype=np.int8)
    check(parse("%x: memref<5xi8>", "()", body), [x])


ACCUMULATE = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c4 = "arith.constant"() {value = 4} : () -> index
    %z = "arith.constant"() {value = 0.0} : () -> f32
    %n = "mem.dim"(%x) {axis = 0} : (memref<?x4xf32>) -> index
    %acc0 = "tensor.fill"(%z) : (f32) -> tensor<4xf32>
    %xt = "mem.to_tensor"(%x) : (memref<?x4xf32>) -> tensor<?x4xf32>
    %acc = "loop.for"(%c0, %n, %c1, %acc0) ({
    ^bb0(%i: index, %a: tensor<4xf32>):
      %row = "tensor.slice"(%xt, %i, %c0, %c1, %c4, %c1, %c1) {drop = [0]} : (tensor<?x4xf32>, index, index, index, index, index, index) -> tensor<4xf32>
      %next = "arith.add"(%a, %row) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      "loop.yield"(%next) : (tensor<4xf32>) -> ()
    }) : (index, index, index, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%acc, %acc0) : (tensor<4xf32>, tensor<4xf32>) -> ()'''


def test_accumulating_array_carried_by_loop():
    mod = parse("%x: memref<?x4xf32>", "(tensor<4xf32>, tensor<4xf32>)", ACCUMULATE)
    for n in (0, 1, 5):
        check(mod, [RNG.random((n, 4), np.float32)])
    low = lower(mod)
    text = str(low)
    assert "tensor<" not in text
    # %acc0 is used after the loop, so the loop gets a copy of it.
    assert count_ops(low, "mem.dealloc") >= 1


CONDITIONAL = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c2 = "arith.constant"() {value = 2} : () -> index
    %two = "arith.constant"() {value = 2} : () -> i32
    %x0 = "mem.to_tensor"(%x) : (memref<3xi32>) -> tensor<3xi32>
    %a, %b = "loop.for"(%c0, %n, %c1, %x0, %x0) ({
    ^bb0(%i: index, %p: tensor<3xi32>, %q: tensor<3xi32>):
      %r = "arith.rem"(%i, %c2) : (index, index) -> index
      %even = "arith.cmp"(%r, %c0) {predicate = "eq"} : (index, index) -> i1
      %p2 = "loop.if"(%even) ({
        %d = "arith.mul"(%p, %two) : (tensor<3xi32>, i32) -> tensor<3xi32>
        "loop.yield"(%d) : (tensor<3xi32>) -> ()
      }, {
        "loop.yield"(%p) : (tensor<3xi32>) -> ()
      }) : (i1) -> tensor<3xi32>
      %s = "arith.add"(%p2, %q) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
      "loop.yield"(%s, %p) : (tensor<3xi32>, tensor<3xi32>) -> ()
    }) : (index, index, index, tensor<3xi32>, tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>)
    "func.return"(%a, %b, %b) : (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> ()'''


def test_if_inside_loop_swaps_and_pass_through():
    mod = parse("%x: memref<3xi32>; %n: index",
                "(tensor<3xi32>, tensor<3xi32>, tensor<3xi32>)", CONDITIONAL)
    x = np.array([1, -2, 3], np.int32)
    for n in (0, 1, 6):
        before, after, *_ = run_both(mod, [x, n])
        for p, q in zip(before, after, strict=True):
            np.testing.assert_array_equal(p, q)
        # results are fresh and distinct, never the parameter
        assert not np.shares_memory(after[1], after[2])
        assert all(not np.shares_memory(r, x) for r in after)


WHILE = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %two = "arith.constant"() {value = 2.0} : () -> f64
    %x0 = "mem.to_tensor"(%x) : (memref<?xf64>) -> tensor<?xf64>
    %r, %k = "loop.while"(%x0, %c0) ({
    ^bb0(%a: tensor<?xf64>, %i: index):
      %s = "tensor.sum"(%a) {axes = [0], keepdims = false} : (tensor<?xf64>) -> f64
      %go = "arith.cmp"(%s, %limit) {predicate = "lt"} : (f64, f64) -> i1
      "loop.condition"(%go, %a, %i) : (i1, tensor<?xf64>, index) -> ()
    }, {
    ^bb0(%a2: tensor<?xf64>, %i2: index):
      %d = "arith.mul"(%a2, %two) : (tensor<?xf64>, f64) -> tensor<?xf64>
      %one = "arith.constant"() {value = 1} : () -> index
      %j = "arith.add"(%i2, %one) : (index, index) -> index
      "loop.yield"(%d, %j) : (tensor<?xf64>, index) -> ()
    }) : (tensor<?xf64>, index) -> (tensor<?xf64>, index)
    "func.return"(%r, %k) : (tensor<?xf64>, index) -> ()'''


def test_while_carrying_a_tensor():
    mod = parse("%x: memref<?xf64>; %limit: f64", "(tensor<?xf64>, index)", WHILE)
    check(mod, [RNG.random(4) + 0.1, 100.0])
    check(mod, [RNG.random(4) + 0.1, -1.0])


def test_returning_parameter_snapshot_twice_gives_two_fresh_arrays():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<2x3xui8>) -> tensor<2x3xui8>
    "func.return"(%t, %t, %x) : (tensor<2x3xui8>, tensor<2x3xui8>, memref<2x3xui8>) -> ()'''
    mod = parse("%x: memref<2x3xui8>", "(tensor<2x3xui8>, tensor<2x3xui8>, memref<2x3xui8>)",
                body)
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    _, after, _, args, _ = run_both(mod, [x])
    assert after[2] is args[0]  # the memref result is the parameter itself
    assert not np.shares_memory(after[0], after[1])
    assert not np.shares_memory(after[0], args[0])
    np.testing.assert_array_equal(after[0], x)


CALLS = '''
  "func.func"() ({
  ^bb0(%p: memref<3xf32>):
    %t = "mem.to_tensor"(%p) : (memref<3xf32>) -> tensor<3xf32>
    %e = "math.exp"(%t) : (tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%e) : (tensor<3xf32>) -> ()
  }) {function_type = (memref<3xf32>) -> tensor<3xf32>, sym_name = "g"} : () -> ()'''


def test_call_with_tensor_result_and_fusion_scope():
    body = '''
    %u = "func.call"(%x) {callee = "g"} : (memref<3xf32>) -> tensor<3xf32>
    %w = "fusion.scope"() ({
      %t = "mem.to_tensor"(%x) : (memref<3xf32>) -> tensor<3xf32>
      %s = "arith.sub"(%u, %t) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      "fusion.yield"(%s) : (tensor<3xf32>) -> ()
    }) : () -> tensor<3xf32>
    "func.return"(%w, %u) : (tensor<3xf32>, tensor<3xf32>) -> ()'''
    mod = parse("%x: memref<3xf32>", "(tensor<3xf32>, tensor<3xf32>)", body, CALLS)
    low = check(mod, [RNG.random(3, np.float32)])
    assert count_ops(low, "fusion.scope") == 0
    assert str(low.get("g").function_type) == "(memref<3xf32>) -> memref<3xf32>"


def test_user_buffers_and_temporaries_in_loop_bodies_are_freed():
    body = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %tmp = "mem.alloc"() : () -> memref<4xf32>
    %keep = "mem.alloc"() : () -> memref<4xf32>
    %z = "arith.constant"() {value = 0.0} : () -> f32
    "mem.fill"(%z, %keep) : (f32, memref<4xf32>) -> ()
    "loop.for"(%c0, %n, %c1) ({
    ^bb0(%i: index):
      %t = "mem.to_tensor"(%keep) : (memref<4xf32>) -> tensor<4xf32>
      %e = "math.sin"(%t) : (tensor<4xf32>) -> tensor<4xf32>
      %f = "arith.add"(%e, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      "mem.write"(%f, %tmp) : (tensor<4xf32>, memref<4xf32>) -> ()
      "mem.copy"(%tmp, %keep) : (memref<4xf32>, memref<4xf32>) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "func.return"(%keep) : (memref<4xf32>) -> ()'''
    mod = parse("%n: index", "memref<4xf32>", body)
    low = check(mod, [3])
    loop_body = next(op for op in low.walk() if op.name == "loop.for"
                     and op.body.blocks[0].args[0].name_hint == "i").body.blocks[0]
    assert sum(op.name == "mem.dealloc" for op in loop_body.ops) == 2
    assert count_ops(low, "mem.dealloc") == 3  # %tmp after the loop; %keep is returned


def test_tensor_results_of_if_from_outer_values_are_copied():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<?xi16>) -> tensor<?xi16>
    %u = "arith.neg"(%t) : (tensor<?xi16>) -> tensor<?xi16>
    %r = "loop.if"(%c) ({
      "loop.yield"(%t) : (tensor<?xi16>) -> ()
    }, {
      "loop.yield"(%u) : (tensor<?xi16>) -> ()
    }) : (i1) -> tensor<?xi16>
    %s = "arith.add"(%r, %u) : (tensor<?xi16>, tensor<?xi16>) -> tensor<?xi16>
    "func.return"(%s, %r) : (tensor<?xi16>, tensor<?xi16>) -> ()'''
    mod = parse("%x: memref<?xi16>; %c: i1", "(tensor<?xi16>, tensor<?xi16>)", body)
    x = np.array([3, -4, 5], np.int16)
    check(mod, [x, True])
    check(mod, [x, False])


@pytest.mark.parametrize("n", [0, 2])
def test_map_and_reduction_inside_loop(n):
    body = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %t = "mem.to_tensor"(%x) : (memref<3x5xf32>) -> tensor<3x5xf32>
    %z = "arith.constant"() {value = 0.0} : () -> f32
    %r = "loop.for"(%c0, %n, %c1, %z) ({
    ^bb0(%i: index, %acc: f32):
      %m = "tensor.map"(%t) ({
      ^bb0(%v: f32):
        %w = "arith.mul"(%v, %v) : (f32, f32) -> f32
        "tensor.yield"(%w) : (f32) -> ()
      }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
      %s = "tensor.max"(%m) {axes = [0, 1], keepdims = false} : (tensor<3x5xf32>) -> f32
      %a = "arith.add"(%acc, %s) : (f32, f32) -> f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    "func.return"(%r) : (f32) -> ()'''
    mod = parse("%x: memref<3x5xf32>; %n: index", "f32", body)
    check(mod, [RNG.random((3, 5), np.float32), n])


# ---------------------------------------------------------------------------- random programs
# Programs over three i64 tensor variables with nested loops and ifs that carry all of
# them (as the frontend does), swaps, reversed views, writes into the parameter buffer
# and fresh snapshots of it.  They stress ownership hand-over, copies of views and
# snapshot reuse; the allocation tracker catches leaks and double frees, the
# interpreter's poisoning of freed buffers catches uses after free.

NVARS = 3


def _stmt(depth: int):
    simple = st.one_of(
        st.tuples(st.just("bin"), st.integers(0, NVARS - 1), st.sampled_from(["add", "mul"]),
                  st.integers(0, NVARS - 1), st.integers(0, NVARS - 1)),
        st.tuples(st.just("rev"), st.integers(0, NVARS - 1), st.integers(0, NVARS - 1)),
        st.tuples(st.just("swap"), st.integers(0, NVARS - 1), st.integers(0, NVARS - 1)),
        st.tuples(st.just("write"), st.integers(0, NVARS - 1)),
        st.tuples(st.just("snap"), st.integers(0, NVARS - 1)),
    )
    if depth == 0:
        return simple
    block = st.lists(_stmt(depth - 1), max_size=3)
    return st.one_of(simple, st.tuples(st.just("for"), st.integers(0, 2), block),
                     st.tuples(st.just("if"), block, block))


class _Gen:
    """Builds the IR of a random program with the builder."""

    def __init__(self, b, buf, flag):
        self.b, self.buf, self.flag = b, buf, flag

    def const(self, v, t=None):
        return self.b.insert(arith.ConstantOp.new(v, t or index)).result

    def run(self, stmts, env):
        for s in stmts:
            env = getattr(self, "s_" + s[0])(s, list(env))
        return env

    def s_bin(self, s, env):
        cls = {"add": arith.AddOp, "mul": arith.MulOp}[s[2]]
        env[s[1]] = self.b.insert(cls.new(env[s[3]], env[s[4]])).result
        return env

    def s_rev(self, s, env):
        src = env[s[2]]
        parts = [self.const(3), self.const(4), self.const(-1)]
        env[s[1]] = self.b.insert(tensor.SliceOp([src, *parts], [src.type])).result
        return env

    def s_swap(self, s, env):
        env[s[1]], env[s[2]] = env[s[2]], env[s[1]]
        return env

    def s_write(self, s, env):
        self.b.insert(mem.WriteOp([env[s[1]], self.buf]))
        return env

    def s_snap(self, s, env):
        env[s[1]] = self.b.insert(mem.ToTensorOp([self.buf], [env[s[1]].type])).result
        return env

    def s_for(self, s, env):
        op = self.b.insert(loop.ForOp.empty(self.const(0), self.const(s[1]), self.const(1),
                                            env))
        body = op.body.blocks[0]
        with self.b.at(body):
            out = self.run(s[2], body.args[1:])
            self.b.insert(loop.YieldOp(out))
        return op.result_values

    def s_if(self, s, env):
        op = self.b.insert(loop.IfOp.empty(self.flag, [v.type for v in env]))
        for region, stmts in ((op.then_region, s[1]), (op.else_region, s[2])):
            with self.b.at(region.blocks[0]):
                self.b.insert(loop.YieldOp(self.run(stmts, env)))
        return op.result_values


@given(prog=st.lists(_stmt(2), min_size=1, max_size=6),
       ret=st.lists(st.integers(0, NVARS - 1), min_size=1, max_size=3),
       flag=st.booleans())
@settings(max_examples=60, deadline=None)
def test_random_programs_with_carried_tensors(prog, ret, flag):
    buf_t = MemRefType((4,), i64)

    def body(b, buf, f):
        gen = _Gen(b, buf, f)
        start = b.insert(mem.ToTensorOp([buf], [buf_t.tensor_type()])).result
        env = gen.run(prog, [start] * NVARS)
        return [env[k] for k in ret] + [buf]
    mod = build([buf_t, i1], body)
    check(mod, [np.array([1, -2, 3, 2], np.int64), flag])


def test_fusion_group_is_inlined_and_its_view_results_keep_snapshots_safe():
    # The group returns a view of its input (a snapshot of %x); %x is written before
    # that view is used, so the snapshot must be a copy.
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<4xf32>) -> tensor<4xf32>
    %v, %w = "fusion.group"(%t) ({
    ^bb0(%a: tensor<4xf32>):
      %c0 = "arith.constant"() {value = 3} : () -> index
      %c4 = "arith.constant"() {value = 4} : () -> index
      %m1 = "arith.constant"() {value = -1} : () -> index
      %r = "tensor.slice"(%a, %c0, %c4, %m1) : (tensor<4xf32>, index, index, index) -> tensor<4xf32>
      %e = "math.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
      "fusion.yield"(%r, %e) : (tensor<4xf32>, tensor<4xf32>) -> ()
    }) {kind = "generic"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %z = "arith.constant"() {value = 0.0} : () -> f32
    "mem.fill"(%z, %x) : (f32, memref<4xf32>) -> ()
    %s = "arith.add"(%v, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%s) : (tensor<4xf32>) -> ()'''
    low = check(parse("%x: memref<4xf32>", "tensor<4xf32>", body), [RNG.random(4, np.float32)])
    assert count_ops(low, "fusion.group") == 0


def test_group_yielding_its_input_does_not_let_a_loop_steal_the_buffer():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<3xf32>) -> tensor<3xf32>
    %e = "math.exp"(%t) : (tensor<3xf32>) -> tensor<3xf32>
    %g = "fusion.group"(%e) ({
    ^bb0(%a: tensor<3xf32>):
      "fusion.yield"(%a) : (tensor<3xf32>) -> ()
    }) {kind = "generic"} : (tensor<3xf32>) -> tensor<3xf32>
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c2 = "arith.constant"() {value = 2} : () -> index
    %r = "loop.for"(%c0, %c2, %c1, %g) ({
    ^bb0(%i: index, %acc: tensor<3xf32>):
      %n = "arith.add"(%acc, %acc) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      "loop.yield"(%n) : (tensor<3xf32>) -> ()
    }) : (index, index, index, tensor<3xf32>) -> tensor<3xf32>
    %s = "arith.sub"(%r, %e) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%s) : (tensor<3xf32>) -> ()'''
    check(parse("%x: memref<3xf32>", "tensor<3xf32>", body), [RNG.random(3, np.float32)])


RESHAPED = '''
    %t = "mem.to_tensor"(%x) : (memref<2x6xf32>) -> tensor<2x6xf32>
    %one = "arith.constant"() {value = 1.0} : () -> f32
    %y = "arith.add"(%t, %one) : (tensor<2x6xf32>, f32) -> tensor<2x6xf32>
    %r = "tensor.reshape"(%y) : (tensor<2x6xf32>) -> tensor<3x4xf32>
    RETURN'''


def test_returned_reshape_hands_its_buffer_over_without_a_copy():
    """``return y.reshape(...)`` of a buffer made here moves that buffer (conv2d's
    result: the product's whole output was copied)."""
    ret = '"func.return"(%r) : (tensor<3x4xf32>) -> ()'
    low = check(parse("%x: memref<2x6xf32>", "tensor<3x4xf32>",
                      RESHAPED.replace("RETURN", ret)), [RNG.random((2, 6), np.float32)])
    assert count_ops(low, "mem.alloc") == 1  # the sum's buffer only
    returned = low.get("f").entry.terminator.operand_values[0]
    assert returned.op.name == "mem.reshape"
    assert count_ops(low, "mem.dealloc") == 0  # not freed: it is the result


@pytest.mark.parametrize("ret, types", [
    ('"func.return"(%r, %y)', "(tensor<3x4xf32>, tensor<2x6xf32>)"),
    ('"func.return"(%y, %r)', "(tensor<2x6xf32>, tensor<3x4xf32>)"),
    ('"func.return"(%r, %r)', "(tensor<3x4xf32>, tensor<3x4xf32>)"),
])
def test_reshape_returned_beside_its_source_gets_a_copy(ret, types):
    """One buffer is handed over once: the second result is a fresh copy."""
    body = RESHAPED.replace("RETURN", f'{ret} : {types} -> ()')
    x = RNG.random((2, 6), np.float32)
    mod = parse("%x: memref<2x6xf32>", types, body)
    check(mod, [x])
    _, after, *_ = run_both(mod, [x])
    assert not np.shares_memory(after[0], after[1])
    np.testing.assert_array_equal(after[0].ravel(), (x + 1).ravel())


def test_reshape_of_a_parameter_snapshot_is_still_copied():
    body = '''
    %t = "mem.to_tensor"(%x) : (memref<2x6xf32>) -> tensor<2x6xf32>
    %r = "tensor.reshape"(%t) : (tensor<2x6xf32>) -> tensor<3x4xf32>
    "func.return"(%r) : (tensor<3x4xf32>) -> ()'''
    x = RNG.random((2, 6), np.float32)
    mod = parse("%x: memref<2x6xf32>", "tensor<3x4xf32>", body)
    _, after, _, args, _ = run_both(mod, [x])
    assert not np.shares_memory(after[0], args[0])


def test_loop_carried_reshape_hands_over_each_iteration():
    body = '''
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %two = "arith.constant"() {value = 2.0} : () -> f64
    %x0 = "mem.to_tensor"(%x) : (memref<4x3xf64>) -> tensor<4x3xf64>
    %r = "loop.for"(%c0, %n, %c1, %x0) ({
    ^bb0(%i: index, %a: tensor<4x3xf64>):
      %d = "arith.mul"(%a, %two) : (tensor<4x3xf64>, f64) -> tensor<4x3xf64>
      %f = "tensor.reshape"(%d) : (tensor<4x3xf64>) -> tensor<12xf64>
      %s = "arith.add"(%f, %two) : (tensor<12xf64>, f64) -> tensor<12xf64>
      %b = "tensor.reshape"(%s) : (tensor<12xf64>) -> tensor<4x3xf64>
      "loop.yield"(%b) : (tensor<4x3xf64>) -> ()
    }) : (index, index, index, tensor<4x3xf64>) -> tensor<4x3xf64>
    "func.return"(%r, %x0) : (tensor<4x3xf64>, tensor<4x3xf64>) -> ()'''
    mod = parse("%x: memref<4x3xf64>; %n: index", "(tensor<4x3xf64>, tensor<4x3xf64>)", body)
    for n in (0, 1, 4):
        check(mod, [RNG.random((4, 3)), n])
