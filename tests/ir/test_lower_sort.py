"""``tensor.sort/argsort/cumsum/cumprod``: verification, reference semantics (stable,
NaN last, descending) and ``lower-to-loops`` checked against the interpreter before the
pass, on every numeric dtype, odd and run-boundary lengths, views and dynamic shapes."""

from __future__ import annotations

import numpy as np
import pytest
from loops_harness import check, count_ops, kernel, op1

from pyasc.ir.core import Operation
from pyasc.ir.ops import sort
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import TensorType, f32, index
from pyasc.ir.verifier import verify_module

RNG = np.random.default_rng(7)
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16",
          "float32", "float64"]


def data(shape, dtype):
    """Values with many duplicates (stability shows), NaNs and signed zeros for floats."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    x = RNG.integers(-4 if dt.kind != "u" else 0, 5, shape).astype(dt)
    if dt.kind == "f":
        flat = x.reshape(-1)
        flat[RNG.random(flat.size) < 0.15] = np.nan
        flat[RNG.random(flat.size) < 0.1] = -0.0
    return x


def sort_kernel(x, cls, axis, descending=False, dynamic=False):
    def body(b, t):
        attrs = {"axis": axis, **({"descending": True} if descending else {})}
        return [op1(b, cls, [t], cls.result_type(t.type), **attrs)]
    return kernel([x], body, dynamic)


def reference(x, axis, descending):
    """Stable order by brute force: sort positions by (key, position)."""
    def key(v):
        nan = isinstance(v, float | np.floating) and np.isnan(v)
        num = 0 if nan else (-float(v) if descending else float(v))
        return (nan, num)
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape, np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        lane = moved[pos]
        out[pos] = sorted(range(lane.shape[0]), key=lambda k: (key(lane[k]), k))
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_semantics_are_a_stable_sort_with_nan_last(dtype, descending):
    x = data((3, 37), dtype)
    for axis in (0, 1):
        m = sort_kernel(x, sort.ArgSortOp, axis, descending)
        op = next(o for o in m.walk() if isinstance(o, sort.ArgSortOp))
        order = eval_op(op, [x])[0]
        np.testing.assert_array_equal(order, reference(x, axis, descending))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64"])
@pytest.mark.parametrize("cls", [sort.SortOp, sort.ArgSortOp])
def test_lowered_sort_matches_semantics(cls, dtype):
    # lengths around the insertion-run and merge boundaries, and a 2-D lane walk
    for n in (0, 1, 2, 16, 17, 50):
        x = data((n,), dtype)
        check(sort_kernel(x, cls, 0), [x])
    x = data((3, 19), dtype)
    check(sort_kernel(x, cls, 0, descending=True), [x])
    check(sort_kernel(x, cls, 1), [x])


@pytest.mark.parametrize("cls", [sort.SortOp, sort.ArgSortOp])
def test_lowered_sort_of_views_and_dynamic_shapes(cls):
    base = data((5, 36), "float32")
    for x in (base[::-2, 3:], base.T, base[:, ::-3]):
        check(sort_kernel(x, cls, 1), [x])
        check(sort_kernel(x, cls, 0, dynamic=True), [x])


def test_sort_allocates_one_scratch_per_op():
    x = data((4, 50), "int32")
    low = check(sort_kernel(x, sort.SortOp, 1), [x])
    assert count_ops(low, "mem.alloc") == 2  # result and scratch
    assert count_ops(low, "mem.dealloc") == 1
    small = check(sort_kernel(x[:, :9], sort.SortOp, 1), [x[:, :9]])
    assert count_ops(small, "mem.alloc") == 1  # one insertion run: no merging


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float64"])
@pytest.mark.parametrize("cls", [sort.CumSumOp, sort.CumProdOp])
def test_lowered_scans(cls, dtype):
    x = data((4, 7, 3), dtype)
    if np.dtype(dtype).kind == "f":
        x = np.where(np.isnan(x), 0.5, x).astype(dtype)
    for axis in range(3):
        m = kernel([x], lambda b, t, a=axis: [op1(b, cls, [t], t.type, axis=a)])
        check(m, [x], rtol=1e-3 if dtype == "float16" else 0.0)
    x1 = x[:1]  # a unit outer dim must not make the scanned axis parallel
    low = check(kernel([x1], lambda b, t: [op1(b, cls, [t], t.type, axis=1)]), [x1])
    assert not any(o.attributes.get("parallel") for o in low.walk())


def _bad(op: Operation) -> str:
    try:
        op.verify_op()
    except ValueError as exc:
        return str(exc)
    return ""


def test_verifier_rejects_bad_sorts():
    m = sort_kernel(np.zeros((2, 3), np.float32), sort.SortOp, 1)
    verify_module(m)
    src = next(o for o in m.walk() if isinstance(o, sort.SortOp)).operand_values[0]
    assert "axis 2 out of range" in _bad(sort.SortOp([src], [src.type], {"axis": 2}))
    wrong = TensorType((2, 3), f32)
    assert "expected result" in _bad(sort.ArgSortOp([src], [wrong], {"axis": 0}))
    assert "expected result" in _bad(sort.CumSumOp([src], [TensorType((2, 3), index)],
                                                   {"axis": 0}))
