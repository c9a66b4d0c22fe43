"""A hand-built module that uses every op family's classes (for round-trip tests).

``all_ops_module()`` builds one valid module with the Builder; ``tests/ir/
test_roundtrip.py`` checks it prints, parses back and prints identically, and that it
covers every class in ``OP_REGISTRY``.
"""

from __future__ import annotations

import numpy as np

from pyasc.ir import Builder, DenseArray, Location
from pyasc.ir.core import Block, Operation, Region, Value
from pyasc.ir.ops import arith, autodiff, func, fusion, loop, mem, scatter, sort, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import (
    DYN,
    MemRefType,
    TensorType,
    f16,
    f32,
    i1,
    i32,
    index,
    u8,
)

T4 = TensorType((4, DYN), f32)
STRIDED = MemRefType((4, DYN), f32, (DYN, 1))
LOCS = [Location("k.py", 3, 5), Location('dir/we"ird\\ name.py', 12, 1),
        Location("ünïcödé ✓.py", 7, 80)]


class _Sample:
    """Builds the sample function op by op, cycling through odd locations."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.n = 0

    def op(self, op: Operation) -> Operation:
        self.n += 1
        with self.b.location(LOCS[self.n % len(LOCS)]):
            return self.b.insert(op)

    def val(self, op: Operation) -> Value:
        return self.op(op).result

    def const(self, value: object, t) -> Value:
        if isinstance(t, TensorType):
            arr = np.asarray(value, dtype=t.element.to_numpy()).reshape(t.shape)
            return self.val(arith.ConstantOp([], [t], {"value": DenseArray(arr, t)}))
        return self.val(arith.ConstantOp.new(value, t))


def _arith(s: _Sample, x: Value, t: Value, i: Value, bo: Value) -> list[Value]:
    out = [s.val(cls.new(x, t)) for cls in (arith.AddOp, arith.SubOp, arith.MulOp,
                                             arith.DivOp, arith.FloorDivOp, arith.RemOp,
                                             arith.MaxOp, arith.MinOp)]
    out += [s.val(cls.new(i, i)) for cls in (arith.AndOp, arith.OrOp, arith.XorOp,
                                             arith.ShlOp, arith.ShrOp)]
    out += [s.val(arith.NegOp.new(t)), s.val(arith.NotOp.new(bo))]
    cmp = s.val(arith.CmpOp.new("le", t, x))
    out += [cmp, s.val(arith.SelectOp.new(cmp, t, x)), s.val(arith.CastOp.new(t, f16)),
            s.val(arith.BitcastOp.new(i, f32))]
    return out


def _math(s: _Sample, x: Value, t: Value) -> list[Value]:
    out = [s.val(cls.new(t)) for cls in m.UNARY_FLOAT_OPS]
    out += [s.val(m.AbsOp.new(x)), s.val(m.SignOp.new(x)), s.val(m.PowOp.new(t, x))]
    out += [s.val(cls.new(t)) for cls in (m.IsNanOp, m.IsInfOp, m.IsFiniteOp)]
    out += [s.val(m.FmaOp.new(x, t, t))]
    return out


def _tensor(s: _Sample, x: Value, t: Value, n: Value) -> list[Value]:
    c0, c1, c2 = (s.const(v, index) for v in (0, 1, 2))
    dense = s.const([[1.5, -0.0, np.nan, np.inf], [-np.inf, 2.0, 3.0, 1e-30]],
                    TensorType((2, 4), f32))
    fill = s.val(tensor.FillOp.new(x, T4, [n]))
    ar = s.val(tensor.ArangeOp([x, x, n], [TensorType((DYN,), f32)]))
    bc = s.val(tensor.BroadcastOp([ar, n], [TensorType((3, DYN), f32)]))
    rs = s.val(tensor.ReshapeOp([dense], [TensorType((8,), f32)]))
    tr = s.val(tensor.TransposeOp([dense], [TensorType((4, 2), f32)], {"perm": (1, 0)}))
    sl = s.val(tensor.SliceOp([dense, c0, c1, c2, c1, c1, c1], [TensorType((2,), f32)],
                              {"drop": (1,)}))
    ex = s.val(tensor.ExtractOp([dense, c1, c2], [f32]))
    dim = s.val(tensor.DimOp([t], [index], {"axis": 1}))
    cat = s.val(tensor.ConcatOp([dense, dense], [TensorType((4, 4), f32)], {"axis": 0}))
    reds = [s.val(cls.new(dense, (1,), keep)) for cls, keep in (
        (tensor.SumOp, False), (tensor.ProdOp, True), (tensor.ReduceMaxOp, False),
        (tensor.ReduceMinOp, False))]
    mask = s.val(arith.CmpOp.new("gt", dense, x))
    reds += [s.val(tensor.AnyOp.new(mask, (0, 1))), s.val(tensor.AllOp.new(mask, (0,)))]
    args = [s.val(tensor.ArgMaxOp([dense], [index])),
            s.val(tensor.ArgMinOp([dense], [TensorType((2, 1), index)],
                                  {"axis": 1, "keepdims": True}))]
    mm = s.val(tensor.MatmulOp.new(dense, tr))
    idx = s.const([3, -1], TensorType((2,), i32))
    ga = s.val(tensor.GatherOp([dense, idx], [TensorType((2, 2), f32)], {"axis": 1}))
    co = s.val(tensor.CompressOp([dense, mask], [TensorType((DYN,), f32)]))
    return [fill, bc, rs, sl, ex, dim, cat, *reds, *args, mm, ga, co, _map(s, dense, x),
            *_ordered(s, dense, idx)]


def _ordered(s: _Sample, dense: Value, idx: Value) -> list[Value]:
    """Sorting, scans and several-array indexing (``ops/sort.py``, ``ops/scatter.py``)."""
    out = [s.val(sort.SortOp.new(dense, 1)), s.val(sort.ArgSortOp.new(dense, 0, True)),
           s.val(sort.CumSumOp.new(dense, 1)), s.val(sort.CumProdOp.new(dense, 0))]
    col = s.val(tensor.ReshapeOp([idx], [TensorType((2, 1), i32)]))
    out.append(s.val(scatter.GatherNdOp([dense, col, idx], [TensorType((2, 2), f32)])))
    buf = s.val(mem.AllocOp([], [MemRefType((2, 4), f32)]))
    s.op(scatter.ScatterOp([out[0], buf, idx]))
    return [*out, buf]


def _map(s: _Sample, dense: Value, x: Value) -> Value:
    mp = s.op(tensor.MapOp.empty([dense, x], [f32, i1]))
    with s.b.at(mp.body.block):
        a, b = mp.body.block.args
        y = s.val(arith.MulOp.new(a, b))
        s.op(tensor.YieldOp([y, s.val(m.IsNanOp.new(y))]))
    return mp.outputs[0]


def _mem(s: _Sample, buf: Value, x: Value, n: Value) -> list[Value]:
    c0, c1 = s.const(0, index), s.const(1, index)
    new = s.val(mem.AllocOp([n], [MemRefType((4, DYN), f32)]))
    d = s.val(mem.DimOp([buf], [index], {"axis": 1}))
    ld = s.val(mem.LoadOp([buf, c0, c1], [f32]))
    s.op(mem.StoreOp([ld, new, c1, c0]))
    sv = s.val(mem.SubviewOp([buf, c0, c0, c1, d, c1, c1], [MemRefType((DYN,), f32, (1,))],
                             {"drop": (0,)}))
    tr = s.val(mem.TransposeOp([new], [MemRefType((DYN, 4), f32, (1, DYN))],
                               {"perm": (1, 0)}))
    rs = s.val(mem.ReshapeOp([new, d], [MemRefType((DYN, 4), f32)]))
    tt = s.val(mem.ToTensorOp([sv], [TensorType((DYN,), f32)]))
    s.op(mem.WriteOp([tt, tr]))
    s.op(mem.CopyOp([buf, new]))
    cont = s.val(mem.ContiguousOp([tr], [MemRefType((DYN, 4), f32)]))
    s.op(mem.FillOp([x, rs]))
    cbuf = s.val(mem.ConstantOp([], [MemRefType((2,), u8)], {"value": DenseArray(
        np.array([0, 255], np.uint8), TensorType((2,), u8))}))
    scratch = s.val(mem.AllocOp([], [MemRefType((2,), u8)]))
    s.op(mem.CopyOp([cbuf, scratch]))
    s.op(mem.DeallocOp([scratch]))
    s.val(mem.DisjointOp([sv, tr], [i1]))
    s.val(mem.SameViewOp([buf, new], [i1]))
    return [d, tt, cont, new]


def _loops(s: _Sample, x: Value, n: Value, bo: Value) -> list[Value]:
    c0, c1 = s.const(0, index), s.const(1, index)
    fo = s.op(loop.ForOp.empty(c0, n, c1, [x], iv_name="i"))
    fo.attributes["parallel"] = False
    with s.b.at(fo.body.block):
        acc = fo.iter_args[0]
        iff = s.op(loop.IfOp.empty(bo, [f32]))
        with s.b.at(iff.then_region.block):
            s.op(loop.YieldOp([s.val(arith.AddOp.new(acc, x))]))
        with s.b.at(iff.else_region.block):
            s.op(loop.YieldOp([acc]))
        s.op(loop.YieldOp([iff.result]))
    wh = s.op(loop.WhileOp.empty([c0, fo.result], [index, f32]))
    with s.b.at(wh.before.block):
        k, v = wh.before.block.args
        s.op(loop.ConditionOp([s.val(arith.CmpOp.new("lt", k, n)), k, v]))
    with s.b.at(wh.after.block):
        k, v = wh.after.block.args
        s.op(loop.YieldOp([s.val(arith.AddOp.new(k, c1)), v]))
    return wh.result_values


def _func_ops(s: _Sample, x: Value, bo: Value) -> list[Value]:
    s.op(func.AssertOp([bo], attributes={
        "message": 'quote " backslash \\ newline \n tab \t ünï ✓ \u0001', "kind": "bounds"}))
    call = s.val(func.CallOp([x], [f32], {"callee": "hélper \"2\""}))
    scope = s.op(fusion.FusionScopeOp([], [f32], regions=[Region([Block()])]))
    with s.b.at(scope.body.block):
        s.op(fusion.FusionYieldOp([s.val(m.ExpOp.new(call))]))
    group = s.op(fusion.FusionGroupOp([scope.result, x], [f32], {"kind": "elementwise"},
                                      [Region([Block([f32, f32], ["a", "b"])])]))
    with s.b.at(group.body.block):
        a, b = group.body.block.args
        s.op(fusion.FusionYieldOp([s.val(arith.MulOp.new(a, b))]))
    custom = s.op(autodiff.CustomVjpOp([x], [f32], {"callee": "f", "wrt": (0,)},
                                       [Region([Block()]), Region([Block([f32])])]))
    with s.b.at(custom.forward.block):
        s.op(loop.YieldOp([s.val(m.TanhOp.new(x))]))
    with s.b.at(custom.backward.block):
        s.op(loop.YieldOp([s.val(arith.MulOp.new(custom.backward.block.args[0], x))]))
    stopped = s.op(autodiff.StopGradientOp([x], [f32]))
    return [scope.result, group.result, custom.result, stopped.result]


def all_ops_module() -> ModuleOp:
    """A verified module using every op class registered by ``pyasc.ir.ops``."""
    mod = ModuleOp.empty()
    params = [f32, T4, i32, index, i1, STRIDED]
    fn = FuncOp.empty("all_ops", params, [], ["x", "t", "i", "n", "b", "m"],
                      loc=Location("k.py", 1, 1))
    mod.append(fn)
    s = _Sample(Builder.at_end(fn.entry))
    x, t, i, n, bo, buf = fn.entry.args
    results = (_arith(s, x, t, i, bo) + _math(s, x, t) + _tensor(s, x, t, n)
               + _mem(s, buf, x, n) + _loops(s, x, n, bo) + _func_ops(s, x, bo))
    s.op(func.ReturnOp(results))
    fn.set_result_types([v.type for v in results])
    helper = FuncOp.empty("hélper \"2\"", [f32], [f32], ["y"])
    mod.append(helper)
    Builder.at_end(helper.entry).insert(func.ReturnOp([helper.entry.args[0]]))
    return mod
