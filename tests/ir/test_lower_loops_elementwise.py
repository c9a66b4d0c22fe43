"""``lower-to-loops``: elementwise ops, broadcasting, creation ops and buffer writes,
checked against the interpreter before the pass (exact results)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loops_harness import (
    build,
    check,
    count_ops,
    dense,
    kernel,
    lower,
    memref_of,
    op1,
    run_both,
    to_tensor,
)

from pyasc.ir import Builder
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.types import DYN, SCALAR_TYPES, MemRefType, TensorType, f32, i1, i32, index

RNG = np.random.default_rng(0)
DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]


def rand(shape, dtype=np.float32):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return RNG.random(shape) < 0.5
    info = np.iinfo(dt)
    return RNG.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)


SHAPE_PAIRS = [
    ((5,), (5,)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((1,), (7,)), ((0, 3), (3,)),
    ((2, 0), (1,)), ((), (3, 2)), ((2, 1, 3), (4, 1)), ((1, 1), (1, 1)), ((9, 13), (9, 1)),
]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(("sa", "sb"), SHAPE_PAIRS)
def test_binary_broadcasting(sa, sb, dynamic):
    a, b = rand(sa), rand(sb)
    mod = kernel([a, b], lambda bld, x, y: [bld.insert(arith.AddOp.new(x, y)).result],
                 dynamic)
    check(mod, [a, b])


@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_per_dtype(dtype):
    a, b = rand((3, 5), dtype), rand((5,), dtype)
    dt = np.dtype(dtype)

    def body(bld, x, y):
        outs = [bld.insert(arith.CmpOp.new("lt", x, y)).result]
        if dt.kind == "b":
            outs.append(bld.insert(arith.XorOp.new(x, y)).result)
            outs.append(bld.insert(arith.NotOp.new(x)).result)
        else:
            outs.append(bld.insert(arith.MaxOp.new(x, y)).result)
            outs.append(bld.insert(arith.MulOp.new(x, y)).result)
            outs.append(bld.insert(m.AbsOp.new(x)).result)
        if dt.kind == "f":
            outs.append(bld.insert(m.ExpOp.new(x)).result)
            outs.append(bld.insert(arith.DivOp.new(x, y)).result)
        outs.append(bld.insert(arith.SelectOp.new(outs[0], x, y)).result)
        return outs
    check(kernel([a, b], body), [a, b])


@pytest.mark.parametrize("src", ["f16", "f32", "i8", "ui8", "i64", "i1"])
@pytest.mark.parametrize("dst", ["f64", "i32", "i1", "f16"])
def test_cast(src, dst):
    a = rand((4, 3), SCALAR_TYPES[src].to_numpy()) * np.ones((), SCALAR_TYPES[src].to_numpy())
    mod = kernel([a], lambda b, x: [b.insert(arith.CastOp.new(x, SCALAR_TYPES[dst])).result])
    check(mod, [a])


@pytest.mark.parametrize("view", ["reverse", "step2", "transpose", "neg2d"])
def test_strided_parameter_views(view):
    base = rand((6, 8))
    x = {"reverse": base[::-1], "step2": base[:, ::2], "transpose": base.T,
         "neg2d": base[::-2, ::-3]}[view]
    y = rand(x.shape[-1:])
    for dynamic in (False, True):
        mod = kernel([x, y], lambda b, p, q: [b.insert(arith.SubOp.new(p, q)).result],
                     dynamic)
        check(mod, [x, y])


def test_scalar_operands_and_scalar_result():
    a = rand((4,))
    mod = kernel([a, 2.5, np.float32(3)], lambda b, x, s, t: [
        b.insert(arith.MulOp.new(x, t)).result, b.insert(arith.AddOp.new(s, s)).result])
    check(mod, [a, 2.5, np.float32(3)])


def test_dynamic_broadcast_mismatch_raises_value_error():
    a, b = rand((3,)), rand((2,))
    mod = kernel([a, b], lambda bld, x, y: [bld.insert(arith.AddOp.new(x, y)).result],
                 dynamic=True)
    with pytest.raises(ValueError, match="broadcast"):
        run_both(mod, [a, b])
    low = lower(mod)
    assert any(op.name == "func.assert" and op.attributes["kind"] == "shape"
               for op in low.walk())


@given(shapes=st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=3),
                       min_size=2, max_size=3),
       dynamic=st.booleans())
@settings(max_examples=30, deadline=None)
def test_random_broadcast_chains(shapes, dynamic):
    # Build compatible shapes: align right, then replace each dim by 1 or the common one.
    rank = max(len(s) for s in shapes)
    common = [max([s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0] or [1])
              for k in range(rank)]
    fixed = [tuple(d if d == common[rank - len(s) + k] else 1 for k, d in enumerate(s))
             for s in shapes]
    arrays = [rand(s) for s in fixed]

    def body(b, *xs):
        acc = xs[0]
        for i, x in enumerate(xs[1:]):
            cls = (arith.AddOp, arith.MulOp, arith.MaxOp)[i % 3]
            acc = b.insert(cls.new(acc, x)).result
        return [b.insert(m.TanhOp.new(acc)).result]
    check(kernel(arrays, body, dynamic), arrays)


def test_map_region_inlined_per_element():
    a, b = rand((3, 4)), rand((4,))

    def body(bld, x, y):
        op = tensor.MapOp.empty([x, y], [x.type.element, i1])
        blk = op.body.blocks[0]
        bld.insert(op)
        ib = Builder.at_end(blk)
        s = ib.insert(arith.AddOp.new(*blk.args)).result
        c = ib.insert(arith.CmpOp.new("gt", s, blk.args[0])).result
        ib.insert(tensor.YieldOp([s, c]))
        return op.result_values
    for dynamic in (False, True):
        check(kernel([a, b], body, dynamic), [a, b])


def test_fill_arange_broadcast_constant():
    def body(b, n, v):
        t = TensorType((DYN, 3), v.type)
        fill = op1(b, tensor.FillOp, [v, n], t)
        ar = op1(b, tensor.ArangeOp, [v, v, n], TensorType((DYN,), v.type))
        bc = op1(b, tensor.BroadcastOp, [ar, n], TensorType((2, DYN), v.type))
        c = dense(b, np.array([[1.5, -2.0, 3.0]], np.float32))
        summed = b.insert(arith.AddOp.new(fill, c)).result
        return [summed, ar, bc]
    mod = build([index, f32], lambda b, n, v: body(b, n, v))
    check(mod, [5, np.float32(0.5)])
    check(mod, [0, np.float32(0.5)])
    low = check(mod, [1, np.float32(-1.0)])
    assert count_ops(low, "mem.constant") == 1


def test_broadcast_op_of_dynamic_source_with_mismatch():
    a = rand((3,))
    mod = kernel([a, 4], lambda b, x, n: [op1(b, tensor.BroadcastOp, [x, n],
                                                TensorType((2, DYN), x.type.element))],
                 dynamic=True)
    with pytest.raises(ValueError):
        run_both(mod, [a, 4])
    check(mod, [a, 3])


def test_mem_write_copy_fill_contiguous():
    out = np.zeros((3, 4), np.int32)
    src = rand((4,), np.int32)
    view = rand((4, 6), np.int32)[:, ::-2]

    def body(b, o, s, v, k):
        b.insert(mem.WriteOp([to_tensor(b, s), o]))
        sub = op1(b, mem.SubviewOp, [o, *idx(b, [1, 0]), *idx(b, [1, 4]), *idx(b, [1, 1])],
                  MemRefType((4,), o.type.element, (1,)), drop=(0,))
        b.insert(mem.FillOp([k, sub]))
        c = op1(b, mem.ContiguousOp, [v], MemRefType(v.type.shape, v.type.element))
        b.insert(mem.CopyOp([c, v]))
        return [c]
    mod = build([memref_of(out), memref_of(src), memref_of(view), i32], body)
    check(mod, [out, src, view, np.int32(7)])


def test_mem_write_broadcast_dynamic():
    out = np.zeros((3, 4), np.float64)
    val = rand((1, 4), np.float64)
    mod = build([memref_of(out, True), memref_of(val, True)],
                lambda b, o, v: [b.insert(mem.WriteOp([to_tensor(b, v), o])) and o][:0])
    check(mod, [out, val])
    check(mod, [np.zeros((2, 1)), rand((1, 1), np.float64)])
    with pytest.raises(ValueError):
        run_both(mod, [out, rand((2, 4), np.float64)])


def idx(b, values):
    return [b.insert(arith.ConstantOp.new(v, index)).result for v in values]
