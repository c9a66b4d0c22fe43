"""``tensor.gather_nd`` and ``mem.scatter``: verification, reference semantics (numpy
indexing, last write wins) and ``lower-to-loops`` checked against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from loops_harness import build, check, count_ops, kernel, lower, memref_of, op1, to_tensor

from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import scatter
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import DYN, MemRefType, TensorType, f32, index

RNG = np.random.default_rng(3)


def gather_kernel(x, idx, dynamic=False):
    def body(b, t, *ids):
        shape = np.broadcast_shapes(*(np.shape(i) for i in idx)) + x.shape[len(idx):]
        if dynamic:
            shape = (DYN,) * len(shape)
        rt = TensorType(shape, t.type.element) if shape else t.type.element
        return [op1(b, scatter.GatherNdOp, [t, *ids], rt)]
    return kernel([x, *idx], body, dynamic)


def scatter_kernel(dest, upd, idx, dynamic=False):
    params = [memref_of(upd, dynamic), memref_of(dest, dynamic),
              *(memref_of(i, dynamic) if isinstance(i, np.ndarray) else index for i in idx)]

    def body(b, u, d, *ids):
        ids = [to_tensor(b, i) if isinstance(i.type, MemRefType) else i for i in ids]
        b.insert(scatter.ScatterOp([to_tensor(b, u), d, *ids]))
        return [d]
    return build(params, body)


def test_semantics_are_numpy_indexing_and_last_write_wins():
    x = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    i, j = np.array([[0], [-1]]), np.array([1, 2, -4])
    m = gather_kernel(x, [i, j])
    op = next(o for o in m.walk() if isinstance(o, scatter.GatherNdOp))
    np.testing.assert_array_equal(eval_op(op, [x, i, j])[0], x[i, j])
    with pytest.raises(IndexError):
        eval_op(op, [x, i, np.array([4])])
    dest = np.zeros(6, np.float32)
    s = scatter_kernel(dest, np.arange(5, dtype=np.float32), [np.array([1, 1, 5, -1, 1])])
    out = Interpreter(s).call("f", np.arange(5, dtype=np.float32), dest, np.array(
        [1, 1, 5, -1, 1]))[0]
    np.testing.assert_array_equal(out, [0, 4, 0, 0, 0, 3])


@pytest.mark.parametrize("dynamic", [False, True])
def test_lowered_gather_nd(dynamic):
    x = RNG.standard_normal((5, 4, 3)).astype(np.float64)
    i, j = np.array([[0], [-1], [2]], np.int8), np.array([1, 2, 3, 0], np.uint16)
    check(gather_kernel(x, [i, j], dynamic), [x, i, j])
    check(gather_kernel(x, [i[:, 0]], dynamic), [x, i[:, 0]])
    check(gather_kernel(x[::-1, :, 1:], [j, j[::-1]], dynamic), [x[::-1, :, 1:], j, j[::-1]])
    empty = np.zeros(0, np.int64)
    check(gather_kernel(x, [empty, empty], dynamic), [x, empty, empty])


def test_lowered_gather_nd_with_a_scalar_index_and_scalar_result():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    j = np.array([2, 0, -1])
    low = check(kernel([x, 3, j], lambda b, t, s, ids: [
        op1(b, scatter.GatherNdOp, [t, s, ids], TensorType((3,), f32))]), [x, 3, j])
    assert count_ops(low, "loop.for") == 1
    check(kernel([x, -1, 2], lambda b, t, s, k: [
        op1(b, scatter.GatherNdOp, [t, s, k], f32)]), [x, -1, 2])


def test_lowered_gather_nd_checks_bounds_and_broadcasting():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    m = gather_kernel(x, [np.zeros(2, np.int64), np.zeros(2, np.int64)], dynamic=True)
    low = lower(m)
    with pytest.raises(IndexError, match="out of bounds"):
        Interpreter(low).call("f", x, np.array([0, 4]), np.array([0, 0]))
    with pytest.raises(IndexError, match="broadcast"):
        Interpreter(low).call("f", x, np.array([0, 1]), np.array([0, 0, 1]))


@pytest.mark.parametrize("dynamic", [False, True])
def test_lowered_scatter_matches_semantics(dynamic):
    dest = RNG.standard_normal((6, 3)).astype(np.float32)
    i = np.array([0, 5, 5, -1, 2, 0])
    upd = RNG.standard_normal((6, 3)).astype(np.float32)
    low = check(scatter_kernel(dest, upd, [i], dynamic), [upd, dest, i])
    fn = next(o for o in low.walk() if o.name == "func.func")
    dest_arg = fn.entry.args[1]
    writers = [o for o in low.walk() if o.name == "loop.for" and any(
        s.name == "mem.store" and s.operand_values[1] is dest_arg for s in o.walk())]
    assert writers and not any(o.attributes.get("parallel") for o in writers)  # in order
    row = upd[:1]
    check(scatter_kernel(dest, row, [i], dynamic), [row, dest, i])
    j = np.array([[2], [0]])
    check(scatter_kernel(dest, upd[:2, :1], [j, 1], dynamic), [upd[:2, :1], dest, j, 1])
    view = dest[::-2]
    check(scatter_kernel(view, upd[:3], [np.array([2, 0, 1])], dynamic),
          [upd[:3], view, np.array([2, 0, 1])])


def test_lowered_scatter_errors():
    dest = np.zeros((4, 2), np.float32)
    low = lower(scatter_kernel(dest, np.zeros((3, 2), np.float32), [np.zeros(3, np.int64)],
                               dynamic=True))
    with pytest.raises(IndexError):
        Interpreter(low).call("f", np.ones((2, 2), np.float32), dest, np.array([1, -5]))
    with pytest.raises(ValueError, match="value array"):
        Interpreter(low).call("f", np.ones((3, 2), np.float32), dest, np.array([1, 2]))


def test_verifier_rejects_bad_index_ops():
    m = gather_kernel(np.zeros((4, 3), np.float32), [np.zeros(2, np.int64)])
    op = next(o for o in m.walk() if isinstance(o, scatter.GatherNdOp))
    src, idx = op.operand_values

    def error(o):
        try:
            o.verify_op()
        except ValueError as exc:
            return str(exc)
        return ""
    assert "expected result" in error(scatter.GatherNdOp([src, idx], [TensorType((3, 3), f32)]))
    assert "1 to 2 index" in error(scatter.GatherNdOp([src, idx, idx, idx],
                                                      [TensorType((2,), f32)]))
    assert "integer" in error(scatter.GatherNdOp([src, src], [TensorType((4, 3), f32)]))
    dest = next(o for o in m.walk() if o.name == "func.func").entry.args[0]
    assert "cannot broadcast" in error(scatter.ScatterOp([src, dest, idx]))
    assert "same element" in error(scatter.ScatterOp([idx, dest, idx]))
    assert "1 to 2 index" in error(scatter.ScatterOp([src, dest]))
