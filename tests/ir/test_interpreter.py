"""The IR interpreter and the reference semantics table agree with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc.ir import Builder, parse_module
from pyasc.ir.interpreter import interpret
from pyasc.ir.ops import arith, func, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.semantics import EVALUATORS
from pyasc.ir.types import DYN, MemRefType, TensorType, f32, i1, i32, index, scalar_from_numpy


def build(params, body):
    """A one-function module; ``body(b, *args)`` returns the values to return."""
    mod = ModuleOp.empty()
    fn = FuncOp.empty("f", params, [])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    results = body(b, *fn.entry.args)
    b.insert(func.ReturnOp(list(results)))
    fn.set_result_types([v.type for v in results])
    return parse_module(str(mod))  # also checks the module round-trips and verifies


def tensor_arg(b, buf):
    return b.insert(mem.ToTensorOp([buf], [buf.type.tensor_type()])).result


BINARY = [
    (arith.AddOp, np.add), (arith.SubOp, np.subtract), (arith.MulOp, np.multiply),
    (arith.FloorDivOp, np.floor_divide), (arith.RemOp, np.remainder),
    (arith.MaxOp, np.maximum), (arith.MinOp, np.minimum),
]


@pytest.mark.parametrize("op_cls,ref", BINARY)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.float32, np.float64])
def test_binary_broadcast_matches_numpy(op_cls, ref, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 5)) * 20).astype(dtype)
    b = (rng.standard_normal((5,)) * 20).astype(dtype)
    b[1] = 0  # division by zero: numpy gives 0 for ints, inf/nan for floats
    elem = scalar_from_numpy(dtype)
    mod = build([MemRefType((3, 5), elem), MemRefType((5,), elem)],
                lambda bl, x, y: [bl.insert(op_cls.new(tensor_arg(bl, x),
                                                       tensor_arg(bl, y))).result])
    (got,) = interpret(mod, "f", a, b)
    with np.errstate(all="ignore"):
        want = ref(a, b)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_shift_semantics_follow_numpy():
    a = np.array([1, -8, 5, -1], dtype=np.int32)
    s = np.array([40, 40, -1, 31], dtype=np.int32)
    mod = build([MemRefType((4,), i32)] * 2, lambda bl, x, y: [
        bl.insert(arith.ShlOp.new(tensor_arg(bl, x), tensor_arg(bl, y))).result,
        bl.insert(arith.ShrOp.new(tensor_arg(bl, x), tensor_arg(bl, y))).result])
    shl, shr = interpret(mod, "f", a, s)
    np.testing.assert_array_equal(shl, [0, 0, 0, np.int32(-2**31)])
    np.testing.assert_array_equal(shr, [0, -1, 0, -1])


def test_integer_pow_with_negative_exponent():
    base = np.array([2, 1, -1, -1, 0, 3], dtype=np.int32)
    exp = np.array([-1, -5, -3, -2, 2, 3], dtype=np.int32)
    mod = build([MemRefType((6,), i32)] * 2, lambda bl, x, y: [
        bl.insert(m.PowOp.new(tensor_arg(bl, x), tensor_arg(bl, y))).result])
    (got,) = interpret(mod, "f", base, exp)
    np.testing.assert_array_equal(got, [0, 1, -1, 1, 0, 27])


@pytest.mark.parametrize("op_cls,ref", [
    (m.ExpOp, np.exp), (m.LogOp, np.log), (m.SqrtOp, np.sqrt), (m.TanhOp, np.tanh),
    (m.FloorOp, np.floor), (m.RoundOp, np.round), (m.AbsOp, np.abs), (m.SinOp, np.sin),
])
def test_unary_math_float16_and_float32(op_cls, ref):
    for dtype in (np.float16, np.float32):
        x = np.array([-2.5, -0.5, 0.0, 0.5, 1.5, 2.5, np.inf, np.nan], dtype=dtype)
        elem = scalar_from_numpy(dtype)
        mod = build([MemRefType((8,), elem)],
                    lambda bl, a: [bl.insert(op_cls.new(tensor_arg(bl, a))).result])
        (got,) = interpret(mod, "f", x)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, ref(x))
        assert got.dtype == dtype


def test_cmp_select_cast_on_scalars_and_tensors():
    x = np.array([1.5, np.nan, -2.0], dtype=np.float32)

    def body(bl, a):
        t = tensor_arg(bl, a)
        zero = bl.insert(arith.ConstantOp.new(0.0, f32)).result
        gt = bl.insert(arith.CmpOp.new("gt", t, zero)).result
        ne = bl.insert(arith.CmpOp.new("ne", t, t)).result
        sel = bl.insert(arith.SelectOp.new(gt, t, zero)).result
        cast = bl.insert(arith.CastOp.new(t, i32)).result
        return [gt, ne, sel, cast]

    gt, ne, sel, cast = interpret(build([MemRefType((3,), f32)], body), "f", x)
    np.testing.assert_array_equal(gt, [True, False, False])
    np.testing.assert_array_equal(ne, [False, True, False])
    np.testing.assert_array_equal(sel, [1.5, 0.0, 0.0])
    assert cast[0] == 1 and cast[2] == -2 and cast.dtype == np.int32


def test_reductions_and_argreductions():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x[1, 2, 3] = np.nan

    def body(bl, a):
        t = tensor_arg(bl, a)
        s = bl.insert(tensor.SumOp.new(t, [0, 2], keepdims=True)).result
        mx = bl.insert(tensor.ReduceMaxOp.new(t, [0, 1, 2])).result
        am = bl.insert(tensor.ArgMaxOp([t], [TensorType((2, 4), index)], {"axis": 1})).result
        return [s, mx, am]

    s, mx, am = interpret(build([MemRefType((2, 3, 4), f32)], body), "f", x)
    np.testing.assert_array_equal(s, np.sum(x, axis=(0, 2), keepdims=True))
    assert np.isnan(mx) and isinstance(mx, np.float32)
    np.testing.assert_array_equal(am, np.argmax(x, axis=1))


def test_subview_aliases_and_to_tensor_snapshots():
    """A write through a view is visible in the parameter; a snapshot does not change."""
    src = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<6xf32, strided<[?]>>):
    %c1 = "arith.constant"() {value = 1} : () -> index loc(unknown)
    %c2 = "arith.constant"() {value = 2} : () -> index loc(unknown)
    %c3 = "arith.constant"() {value = 3} : () -> index loc(unknown)
    %m1 = "arith.constant"() {value = -1} : () -> index loc(unknown)
    %v = "arith.constant"() {value = 9.0} : () -> f32 loc(unknown)
    %snap = "mem.to_tensor"(%x) : (memref<6xf32, strided<[?]>>) -> tensor<6xf32> loc(unknown)
    %view = "mem.subview"(%x, %c3, %c2, %m1) : (memref<6xf32, strided<[?]>>, index, index, index) -> memref<2xf32, strided<[?]>> loc(unknown)
    "mem.fill"(%v, %view) : (f32, memref<2xf32, strided<[?]>>) -> () loc(unknown)
    "func.return"(%snap) : (tensor<6xf32>) -> () loc(unknown)
  }) {function_type = (memref<6xf32, strided<[?]>>) -> tensor<6xf32>, sym_name = "f"} : () -> () loc(unknown)
}) : () -> () loc(unknown)
"""
    base = np.arange(12, dtype=np.float32)
    x = base[::2]
    (snap,) = interpret(parse_module(src), "f", x)
    np.testing.assert_array_equal(snap, np.arange(0, 12, 2))
    np.testing.assert_array_equal(x, [0, 2, 9, 9, 8, 10])
    assert base[4] == 9 and base[6] == 9


def test_loops_if_while_and_assert():
    src = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%n: index):
    %c0 = "arith.constant"() {value = 0} : () -> index loc(unknown)
    %c1 = "arith.constant"() {value = 1} : () -> index loc(unknown)
    %c2 = "arith.constant"() {value = 2} : () -> index loc(unknown)
    %m2 = "arith.constant"() {value = -2} : () -> index loc(unknown)
    %s = "loop.for"(%n, %c0, %m2, %c0) ({
    ^bb0(%i: index, %acc: index):
      %odd = "arith.rem"(%i, %c2) : (index, index) -> index loc(unknown)
      %isz = "arith.cmp"(%odd, %c0) {predicate = "eq"} : (index, index) -> i1 loc(unknown)
      %r = "loop.if"(%isz) ({
        %a = "arith.add"(%acc, %i) : (index, index) -> index loc(unknown)
        "loop.yield"(%a) : (index) -> () loc(unknown)
      }, {
        "loop.yield"(%acc) : (index) -> () loc(unknown)
      }) : (i1) -> index loc(unknown)
      "loop.yield"(%r) : (index) -> () loc(unknown)
    }) : (index, index, index, index) -> index loc(unknown)
    %w = "loop.while"(%c1) ({
    ^bb0(%k: index):
      %lt = "arith.cmp"(%k, %s) {predicate = "lt"} : (index, index) -> i1 loc(unknown)
      "loop.condition"(%lt, %k) : (i1, index) -> () loc(unknown)
    }, {
    ^bb1(%k2: index):
      %d = "arith.mul"(%k2, %c2) : (index, index) -> index loc(unknown)
      "loop.yield"(%d) : (index) -> () loc(unknown)
    }) : (index) -> index loc(unknown)
    %ok = "arith.cmp"(%w, %c1) {predicate = "gt"} : (index, index) -> i1 loc(unknown)
    "func.assert"(%ok) {kind = "bounds", message = "k.py:3: w must exceed 1"} : (i1) -> () loc(unknown)
    "func.return"(%s, %w) : (index, index) -> () loc(unknown)
  }) {function_type = (index) -> (index, index), sym_name = "f"} : () -> () loc(unknown)
}) : () -> () loc(unknown)
"""
    mod = parse_module(src)
    s, w = interpret(mod, "f", 10)
    assert s == sum(range(10, 0, -2)) and w == 32
    assert isinstance(s, np.int64)
    with pytest.raises(IndexError, match="w must exceed 1"):
        interpret(mod, "f", -1)  # s = 0, so the while loop never runs and w = 1


def test_map_region_and_dynamic_fill():
    def body(bl, a, n):
        t = tensor_arg(bl, a)
        one = bl.insert(arith.ConstantOp.new(1.0, f32)).result
        mp = bl.insert(tensor.MapOp.empty([t, one], [f32, i1]))
        blk = mp.body.blocks[0]
        with bl.at(blk):
            s = bl.insert(arith.AddOp.new(blk.args[0], blk.args[1])).result
            c = bl.insert(arith.CmpOp.new("gt", s, blk.args[1])).result
            bl.insert(tensor.YieldOp([s, c]))
        fill = bl.insert(tensor.FillOp.new(one, TensorType((DYN, 2), f32), [n])).result
        return [*mp.outputs, fill]

    mod = build([MemRefType((2, 3), f32), index], body)
    x = np.array([[0, 1, -2], [3, -4, 5]], dtype=np.float32)
    s, c, fill = interpret(mod, "f", x, 3)
    np.testing.assert_array_equal(s, x + 1)
    np.testing.assert_array_equal(c, x + 1 > 1)
    assert fill.shape == (3, 2) and (fill == 1).all()


def test_every_region_free_op_has_semantics():
    from pyasc.ir.core import OP_REGISTRY
    from pyasc.ir.interpreter import _REGION_OPS

    structural = {"builtin.module", "func.func"}
    missing = [name for name, cls in OP_REGISTRY.items()
               if cls not in EVALUATORS and cls not in _REGION_OPS and name not in structural]
    assert not missing, f"ops without reference semantics: {missing}"


def test_fusion_group_is_isolated_and_runs_its_body():
    src = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<2x3xf32>):
    %t = "mem.to_tensor"(%x) : (memref<2x3xf32>) -> tensor<2x3xf32> loc(unknown)
    %y, %s = "fusion.group"(%t) ({
    ^bb0(%a: tensor<2x3xf32>):
      %m = "tensor.max"(%a) {axes = [1], keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32> loc(unknown)
      %d = "arith.sub"(%a, %m) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32> loc(unknown)
      %e = "math.exp"(%d) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(unknown)
      %z = "tensor.sum"(%e) {axes = [1], keepdims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32> loc(unknown)
      %q = "arith.div"(%e, %z) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32> loc(unknown)
      "fusion.yield"(%q, %z) : (tensor<2x3xf32>, tensor<2x1xf32>) -> () loc(unknown)
    }) {kind = "rowwise"} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>) loc(unknown)
    "func.return"(%y) : (tensor<2x3xf32>) -> () loc(unknown)
  }) {function_type = (memref<2x3xf32>) -> tensor<2x3xf32>, sym_name = "f"} : () -> () loc(unknown)
}) : () -> () loc(unknown)
"""
    x = np.array([[1, 2, 3], [0, -1, 5]], dtype=np.float32)
    (y,) = interpret(parse_module(src), "f", x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    bad = src.replace('%d = "arith.sub"(%a, %m)', '%d = "arith.sub"(%t, %m)')
    with pytest.raises(Exception, match="does not dominate"):
        parse_module(bad)
