"""``lower-to-loops``: the loop-level contract, IR text shape, deallocation invariants,
idempotence, and lowering of what the real frontend produces."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from filecheck_util import filecheck
from loops_harness import (
    assert_loop_level,
    check,
    count_ops,
    dense,
    kernel,
    lower,
    op1,
    run_both,
    tracked_allocations,
)

from pyasc.ir import parse_module
from pyasc.ir.core import BlockArgument, OpResult
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes import PASS_REGISTRY, PassManager
from pyasc.ir.types import DYN, TensorType, i1, index

RNG = np.random.default_rng(4)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def assert_checks(output: str, checks: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checks.ir"
        path.write_text(checks)
        code, diagnostics = filecheck(output, path)
    assert code == 0, f"{diagnostics}\n--- output:\n{output}"


def every_op_kernel(dynamic: bool):
    """One kernel touching every tensor op kind."""
    x, y = RNG.standard_normal((4, 6)).astype(np.float32), RNG.standard_normal(6).astype(
        np.float32)
    ids = np.array([3, -1, 0], np.int64)

    def body(b, t, u, k):
        f32 = t.type.element
        c = lambda v, ty=index: b.insert(arith.ConstantOp.new(v, ty)).result  # noqa: E731
        s = b.insert(arith.AddOp.new(t, u)).result
        e = b.insert(m.ExpOp.new(s)).result
        mx = b.insert(tensor.ReduceMaxOp.new(e, (1,), True)).result
        sm = b.insert(tensor.SumOp.new(e, (0,), False)).result
        am = op1(b, tensor.ArgMaxOp, [e], TensorType(e.type.shape[:1], index), axis=1)
        tr = op1(b, tensor.TransposeOp, [e], TensorType(e.type.shape[::-1], f32), perm=(1, 0))
        mm = b.insert(tensor.MatmulOp.new(tr, mx)).result
        sl = op1(b, tensor.SliceOp, [t, c(0), c(1), c(2), c(3), c(1), c(2)],
                 TensorType((2, 3), f32))
        rs = op1(b, tensor.ReshapeOp, [sl], TensorType((6,), f32))
        cat = op1(b, tensor.ConcatOp, [rs, u], TensorType((DYN if dynamic else 12,), f32),
                  axis=0)
        g = op1(b, tensor.GatherOp, [cat, k], TensorType(k.type.shape, f32), axis=0)
        cmp = b.insert(arith.CmpOp.new("gt", g, c(0.0, f32))).result
        cp = op1(b, tensor.CompressOp, [g, cmp], TensorType((DYN,), f32))
        anyv = b.insert(tensor.AnyOp.new(cmp, (0,), False)).result
        ar = op1(b, tensor.ArangeOp, [c(0.5, f32), c(0.25, f32)], TensorType((3,), f32))
        fl = op1(b, tensor.FillOp, [c(True, i1)], TensorType((2,), i1))
        ex = op1(b, tensor.ExtractOp, [e, c(1), c(2)], f32)
        dm = op1(b, tensor.DimOp, [cat], index, axis=0)
        cst = dense(b, np.arange(3, dtype=np.float32))
        bc = op1(b, tensor.BroadcastOp, [cst], TensorType((2, 3), f32))
        return [mx, sm, am, mm, cp, anyv, ar, fl, ex, dm, bc, cst]
    return kernel([x, y, ids], body, dynamic), [x, y, ids]


@pytest.mark.parametrize("dynamic", [False, True])
def test_every_tensor_op_lowers_to_the_loop_level_contract(dynamic):
    mod, args = every_op_kernel(dynamic)
    low = check(mod, args, rtol=1e-6)
    assert_loop_level(low)
    names = {op.name for op in low.walk()}
    assert {"mem.constant", "mem.transpose", "mem.subview", "mem.reshape",
            "mem.dealloc"} <= names


def test_deallocation_invariants():
    mod, _ = every_op_kernel(True)
    low = lower(mod)
    fn = low.get("f")
    returned = set(fn.entry.terminator.operand_values)
    freed = [op.operand_values[0] for op in fn.walk() if isinstance(op, mem.DeallocOp)]
    assert len(freed) == len(set(freed)), "a buffer is freed twice"
    for v in freed:  # only whole allocations, in the block that defines them
        assert isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp | loop.ForOp |
                                                      loop.IfOp | loop.WhileOp) \
            or isinstance(v, BlockArgument)
        dealloc = next(u for u, _ in v.uses if isinstance(u, mem.DeallocOp))
        home = v.block if isinstance(v, BlockArgument) else v.op.parent
        assert dealloc.parent is home
    for op in fn.walk():
        if isinstance(op, mem.AllocOp):
            assert op.result in freed or op.result in returned


def test_relu_text():
    x = np.zeros((4, 8), np.float32)
    mod = kernel([x], lambda b, t: [b.insert(arith.MaxOp.new(
        t, b.insert(arith.ConstantOp.new(0.0, t.type.element)).result)).result])
    out = str(lower(mod))
    assert_checks(out, """
// CHECK:      ^bb0(%0: memref<4x8xf32>):
// CHECK:      %[[OUT:[0-9]+]] = "mem.alloc"() : () -> memref<4x8xf32>
// CHECK-NEXT: "loop.for"(%{{.*}}) ({
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT:   "loop.for"(%{{.*}}) ({
// CHECK-NEXT:   ^bb0(%i1: index):
// CHECK-NEXT:     %[[X:[0-9]+]] = "mem.load"(%0, %i0, %i1)
// CHECK-NEXT:     %[[Y:[0-9]+]] = "arith.max"(%[[X]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:     "mem.store"(%[[Y]], %[[OUT]], %i0, %i1)
// CHECK:      }) {parallel = true}
// CHECK-NEXT: "func.return"(%[[OUT]]) : (memref<4x8xf32>) -> ()
// CHECK:      function_type = (memref<4x8xf32>) -> memref<4x8xf32>
""")


def test_buffers_are_named_after_values_and_ivs_readable():
    text = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<3xf32>):
    %t = "mem.to_tensor"(%x) : (memref<3xf32>) -> tensor<3xf32>
    %scaled = "arith.add"(%t, %t) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %total = "tensor.sum"(%scaled) {axes = [0], keepdims = false} : (tensor<3xf32>) -> f32
    "func.return"(%total) : (f32) -> ()
  }) {function_type = (memref<3xf32>) -> f32, sym_name = "f"} : () -> ()
}) : () -> ()'''
    out = str(lower(parse_module(text)))
    assert_checks(out, """
// CHECK: %scaled = "mem.alloc"() : () -> memref<3xf32>
// CHECK: ^bb0(%i0: index):
// CHECK: %acc0 = "loop.for"
// CHECK: "mem.dealloc"(%scaled)
// CHECK: "func.return"(%acc0)
""")


def test_idempotent_on_loop_level_ir():
    mod, args = every_op_kernel(False)
    once = lower(mod)
    twice = lower(once)
    assert count_ops(twice, "mem.dealloc") == count_ops(once, "mem.dealloc")
    _, a, *_ = run_both(once, args)
    _, b, *_ = run_both(twice, args)
    for p, q in zip(a, b, strict=True):
        np.testing.assert_array_equal(p, q)


def test_tensor_parameters_become_memrefs():
    text = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%t: tensor<?xi32>):
    %u = "arith.mul"(%t, %t) : (tensor<?xi32>, tensor<?xi32>) -> tensor<?xi32>
    "func.return"(%u, %t) : (tensor<?xi32>, tensor<?xi32>) -> ()
  }) {function_type = (tensor<?xi32>) -> (tensor<?xi32>, tensor<?xi32>), sym_name = "f"} : () -> ()
}) : () -> ()'''
    low = lower(parse_module(text))
    assert str(low.get("f").function_type) == \
        "(memref<?xi32>) -> (memref<?xi32>, memref<?xi32>)"


def test_registered_and_runs_in_a_pipeline_with_other_passes():
    assert "lower-to-loops" in PASS_REGISTRY
    mod, args = every_op_kernel(True)
    before = run_both(mod, args)[0]
    PassManager(["canonicalize", "cse", "lower-to-loops", "canonicalize", "cse", "dce"]).run(mod)
    assert_loop_level(mod)
    with tracked_allocations() as live:
        after = Interpreter(mod).call("f", *args)
        assert set(live) == {id(r) for r in after if isinstance(r, np.ndarray)}
    for p, q in zip(before, after, strict=True):
        np.testing.assert_allclose(np.asarray(p, np.float64), np.asarray(q, np.float64),
                                   rtol=1e-6)


@pytest.mark.parametrize(("example", "args"), [
    ("relu", lambda: [RNG.standard_normal((5, 7)).astype(np.float32)]),
    ("bilateral_filter", lambda: [RNG.random((12, 13)).astype(np.float32), 10, 0.1]),
])
def test_frontend_examples(example, args):
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = __import__(example)
    finally:
        sys.path.remove(str(EXAMPLES))
    values = args()
    program = getattr(module, example).specialize(*values[:1])
    before, after, *_ = run_both(program.module.clone(), values, name=program.entry)
    for p, q in zip(before, after, strict=True):
        np.testing.assert_allclose(p, q, rtol=1e-6)
