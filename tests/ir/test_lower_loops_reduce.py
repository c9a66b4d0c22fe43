"""``lower-to-loops``: reductions, argmax/argmin and matmul against the interpreter
(exact for integers, booleans, max/min; tight tolerance for float sums/products)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loops_harness import build, check, kernel, memref_of, op1, run_both

from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import mem, tensor
from pyasc.ir.types import TensorType, index

RNG = np.random.default_rng(2)
REDUCTIONS = [tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp, tensor.ReduceMinOp,
              tensor.AnyOp, tensor.AllOp]
DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}


def rand(shape, dtype=np.float32, nan=False):
    return np.array(_rand(shape, dtype, nan), dtype=dtype)  # 0-d arrays stay arrays


def _rand(shape, dtype, nan):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(shape) < 0.6
    if dt.kind == "f":
        x = RNG.uniform(0.5, 1.5, shape).astype(dt) * RNG.choice([-1, 1], shape).astype(dt)
        if nan and x.size:
            x.reshape(-1)[RNG.integers(x.size)] = np.nan
        return x
    return RNG.integers(0 if dt.kind == "u" else -4, 5, shape).astype(dt)


def reduce_kernel(cls, x, axes, keep, dynamic=False):
    return kernel([x], lambda b, t: [b.insert(cls.new(t, axes, keep)).result], dynamic)


def tolerance(cls, dtype):
    if cls in (tensor.SumOp, tensor.ProdOp):
        return RTOL.get(np.dtype(dtype).name, 0.0)
    return 0.0


def expect_same_error(mod, args, error):
    with pytest.raises(error):
        Interpreter(mod).call("f", *args)
    with pytest.raises(error):
        run_both(mod, args)


@given(data=st.data(),
       cls=st.sampled_from(REDUCTIONS),
       dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(0, 9), max_size=3),
       keep=st.booleans(),
       dynamic=st.booleans())
@settings(max_examples=80, deadline=None)
def test_reductions_random(data, cls, dtype, shape, keep, dynamic):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)),
                                          max_size=len(shape)))))
    x = rand(tuple(shape), dtype, nan=data.draw(st.booleans()))
    mod = reduce_kernel(cls, x, axes, keep, dynamic)
    empty = any(shape[a] == 0 for a in axes)
    if empty and cls in (tensor.ReduceMaxOp, tensor.ReduceMinOp):
        expect_same_error(mod, [x], ValueError)
    else:
        check(mod, [x], tolerance(cls, dtype))


@pytest.mark.parametrize("cls", REDUCTIONS)
@pytest.mark.parametrize("shape", [(13, 17), (2, 3, 9), (5,)])
def test_reductions_every_axes_subset(cls, shape):
    x = rand(shape, np.float64, nan=cls in (tensor.ReduceMaxOp, tensor.ReduceMinOp))
    for r in range(len(shape) + 1):
        for axes in itertools.combinations(range(len(shape)), r):
            for keep in (False, True):
                check(reduce_kernel(cls, x, axes, keep), [x], tolerance(cls, x.dtype))


def test_reductions_of_bool_sum_is_or_and_prod_is_and():
    x = rand((4, 6), np.bool_)
    for cls in (tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp, tensor.ReduceMinOp):
        low = check(reduce_kernel(cls, x, (1,), False), [x])
        assert not any(op.name in ("arith.add", "arith.max") and
                       op.result_values and op.result_values[0].type.is_bool
                       for op in low.walk())


def test_strided_source_and_zero_sign():
    base = rand((8, 10), np.float32)
    x = base[::-2, 1::3]
    for axes in [(0,), (1,), (0, 1)]:
        check(reduce_kernel(tensor.SumOp, x, axes, False, True), [x], 2e-6)
    neg_zero = -np.zeros((3, 2), np.float32)
    for axes in [(0,), (1,), (0, 1)]:
        before, after, *_ = run_both(reduce_kernel(tensor.SumOp, neg_zero, axes, False),
                                     [neg_zero])
        assert np.array_equal(np.signbit(before[0]), np.signbit(after[0]))


def test_sum_uses_partial_accumulators_and_is_not_worse_than_naive():
    n = 4099  # not a multiple of the 8 lanes
    x = (1.0 + RNG.random(n) * 1e-3).astype(np.float32)
    mod = reduce_kernel(tensor.SumOp, x, (0,), False)
    _, after, _, _, low = run_both(mod, [x])
    loops = [op for op in low.walk() if op.name == "loop.for"]
    assert any(len(op.result_values) == 8 for op in loops)
    exact = np.sum(x.astype(np.float64))
    naive = np.float32(0)
    for v in x:
        naive = np.float32(naive + v)
    assert abs(float(after[0]) - exact) <= abs(float(naive) - exact) + 1e-6 * exact


@pytest.mark.parametrize("cls", [tensor.ArgMaxOp, tensor.ArgMinOp])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int64,
                                   np.bool_])
def test_argreduce(cls, dtype):
    x = rand((4, 7), dtype, nan=True)
    if np.dtype(dtype).kind == "f":
        x[1, 3] = x[1, 5] = np.nan  # first NaN wins
        x[2, :] = x[2, 0]  # ties: first occurrence
    for axis, keep, dynamic in itertools.product([None, 0, 1], [False, True], [False, True]):
        attrs = {"keepdims": keep} | ({"axis": axis} if axis is not None else {})
        mod = kernel([x], lambda b, s, axis=axis, keep=keep, attrs=attrs: [
            op1(b, cls, [s], arg_type(s.type.shape, axis, keep), **attrs)], dynamic)
        check(mod, [x])


def arg_type(shape, axis, keep):
    if axis is None:
        return TensorType((1,) * len(shape), index) if keep else index
    if keep:
        return TensorType(tuple(1 if a == axis else d for a, d in enumerate(shape)), index)
    return TensorType(tuple(d for a, d in enumerate(shape) if a != axis), index)


def test_argreduce_empty_raises_and_empty_output_is_fine():
    x = np.zeros((3, 0), np.float32)
    mod = kernel([x], lambda b, s: [op1(b, tensor.ArgMaxOp, [s], index)])
    expect_same_error(mod, [x], ValueError)
    ok = kernel([x], lambda b, s: [op1(b, tensor.ArgMaxOp, [s], TensorType((0,), index),
                                       axis=0)])
    check(ok, [x])


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 1)),
                 ((2, 0), (0, 3)), ((1, 1), (1, 1)), ((5, 7), (7, 9))]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.bool_,
                                   np.float64])
def test_matmul(sa, sb, dtype):
    a, b = rand(sa, dtype), rand(sb, dtype)
    rtol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}.get(np.dtype(dtype).name, 0.0)
    for dynamic in (False, True):
        mod = kernel([a, b], lambda bld, x, y: [bld.insert(tensor.MatmulOp.new(x, y)).result],
                     dynamic)
        check(mod, [a, b], rtol)


def test_matmul_strided_operands_and_mismatch():
    base = rand((6, 8), np.float64)
    a, b = base[::2, ::-2], base[1:5, 1::2].T
    mod = build([memref_of(a, True), memref_of(b, True)], lambda bld, x, y: [
        bld.insert(tensor.MatmulOp.new(to_t(bld, x), to_t(bld, y))).result])
    check(mod, [a, b], 1e-13)
    with pytest.raises(ValueError, match="mismatch"):
        run_both(mod, [a, rand((3, 2), np.float64)])


def to_t(b, buf):
    return b.insert(mem.ToTensorOp([buf], [buf.type.tensor_type()])).result


def test_matmul_result_type_static_with_dynamic_inputs():
    a, b = rand((2, 3)), rand((3, 4))
    mod = kernel([a, b], lambda bld, x, y: [bld.insert(tensor.MatmulOp.new(x, y)).result],
                 dynamic=True)
    assert str(mod.get("f").function_type.results[0]) == "tensor<?x?xf32>"
    low = check(mod, [a, b], 2e-6)
    assert str(low.get("f").function_type.results[0]) == "memref<?x?xf32>"
