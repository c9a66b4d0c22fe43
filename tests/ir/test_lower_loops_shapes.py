"""``lower-to-loops``: views (slice, transpose, reshape), extract/dim, concat, gather and
compress, checked against the interpreter before the pass."""

from __future__ import annotations

import numpy as np
import pytest
from loops_harness import check, count_ops, kernel, op1, run_both

from pyasc.ir.core import OpResult
from pyasc.ir.ops import arith, tensor
from pyasc.ir.types import DYN, TensorType, index

RNG = np.random.default_rng(1)


def rand(shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 10).astype(dtype)


def const(b, v, t=index):
    return b.insert(arith.ConstantOp.new(v, t)).result


def as_value(b, v):
    return v if not isinstance(v, int) else const(b, v)


def slice_(b, x, offsets, sizes, steps, drop=()):
    """``tensor.slice``; int parts become constants, Values make the size dynamic."""
    shape = tuple(s if isinstance(s, int) else DYN for a, s in enumerate(sizes) if a not in drop)
    parts = [as_value(b, v) for v in (*offsets, *sizes, *steps)]
    attrs = {"drop": tuple(drop)} if drop else {}
    return op1(b, tensor.SliceOp, [x, *parts], TensorType(shape, x.type.element), **attrs)


def add1(b, x):
    one = const(b, 1.0, x.type.element)
    return b.insert(arith.AddOp.new(x, one)).result


@pytest.mark.parametrize("dynamic", [False, True])
def test_slices_negative_steps_drop_and_returned_views(dynamic):
    x = rand((6, 8))

    def body(b, t):
        s1 = slice_(b, t, [1, 7], [2, 8], [2, -1])
        s2 = slice_(b, t, [2, 1], [1, 3], [1, 1], drop=[0])
        s3 = slice_(b, s1, [1, 6], [1, 3], [1, -2])
        return [add1(b, s1), s2, s3, t]
    low = check(kernel([x], body, dynamic), [x])
    # Returned views are copied into fresh buffers; the parameter returned as a
    # tensor is copied too.
    assert count_ops(low, "mem.subview") == 3


def test_slice_of_strided_parameter_with_dynamic_sizes():
    base = rand((7, 9))
    x = base[::-1, 1::2]

    def body(b, t, n):
        s = slice_(b, t, [0, 1], [n, 3], [2, 1])
        return [add1(b, s)]
    check(kernel([x, 3], body, dynamic=True), [x, 3])
    check(kernel([x, 3], body, dynamic=True), [x, 0])


@pytest.mark.parametrize("dynamic", [False, True])
def test_transpose_is_a_view(dynamic):
    x, y = rand((3, 4, 5)), rand((5, 3))

    def body(b, t, u):
        tt = op1(b, tensor.TransposeOp, [t], TensorType(
            tuple(t.type.shape[p] for p in (2, 0, 1)), t.type.element), perm=(2, 0, 1))
        s = slice_(b, tt, [0, 0, 1], [tt.type.shape[0] if not dynamic else 5, 3, 1],
                   [1, 1, 1], drop=[2])
        return [b.insert(arith.MulOp.new(s, u)).result, tt]
    low = check(kernel([x, y], body, dynamic), [x, y])
    assert count_ops(low, "mem.transpose") == 1


def test_reshape_view_when_contiguous_copy_otherwise():
    x = rand((4, 6))

    def body(b, t):
        r1 = op1(b, tensor.ReshapeOp, [t], TensorType((2, 12), t.type.element))
        row = slice_(b, t, [1, 0], [1, 6], [1, 1], drop=[0])
        r2 = op1(b, tensor.ReshapeOp, [row], TensorType((3, 2), t.type.element))
        col = slice_(b, t, [0, 2], [4, 1], [1, 1], drop=[1])
        r3 = op1(b, tensor.ReshapeOp, [col], TensorType((2, 2), t.type.element))
        return [add1(b, r1), add1(b, r2), add1(b, r3)]
    low = check(kernel([x], body), [x])
    reshapes = [op for op in low.walk() if op.name == "mem.reshape"]
    kinds = [v.op.name if isinstance(v, OpResult) else "param"
             for v in (op.operand_values[0] for op in reshapes)]
    assert kinds == ["param", "mem.subview", "mem.alloc"]


def test_reshape_dynamic_and_size_mismatch():
    def body(b, t, n):
        r = op1(b, tensor.ReshapeOp, [t, n], TensorType((DYN, 2), t.type.element))
        return [add1(b, r)]
    x = rand((3, 4))
    mod = kernel([x, 6], body, dynamic=True)
    check(mod, [x, 6])
    check(mod, [rand((0, 4)), 0])
    with pytest.raises(ValueError, match="reshape"):
        run_both(mod, [x, 5])
    xs = rand((4, 6))[:, ::2]  # strided parameter: reshaped through a copy
    check(kernel([xs, 6], body, dynamic=True), [xs, 6])


def test_extract_and_dim():
    x = rand((3, 5))

    def body(b, t, i):
        e = op1(b, tensor.ExtractOp, [t, i, const(b, 4)], t.type.element)
        d0 = op1(b, tensor.DimOp, [t], index, axis=0)
        d1 = op1(b, tensor.DimOp, [t], index, axis=1)
        return [e, d0, d1]
    for dynamic in (False, True):
        check(kernel([x, 2], body, dynamic), [x, 2])


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dynamic", [False, True])
def test_concat(axis, dynamic):
    shapes = [(2, 3), (4, 3), (0, 3)] if axis == 0 else [(2, 1), (2, 4), (2, 0)]
    xs = [rand(s, np.int16) for s in shapes]

    def body(b, *ts):
        size = sum(s[axis] for s in shapes)
        shape = [DYN if dynamic else d for d in shapes[0]]
        shape[axis] = DYN if dynamic else size
        return [op1(b, tensor.ConcatOp, list(ts), TensorType(tuple(shape), ts[0].type.element),
                    axis=axis)]
    check(kernel(xs, body, dynamic), xs)


def test_concat_mismatch_raises():
    xs = [rand((2, 3)), rand((2, 4))]
    mod = kernel(xs, lambda b, p, q: [op1(b, tensor.ConcatOp, [p, q],
                                          TensorType((DYN, DYN), p.type.element), axis=0)],
                 dynamic=True)
    with pytest.raises(ValueError, match="concatenation"):
        run_both(mod, xs)


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_wraps_negative_indices(idx_dtype, axis):
    x = rand((5, 4, 2))
    n = x.shape[axis]
    raw = np.array([[0, -1], [n - 1, 2]])
    idx = (raw % n if np.dtype(idx_dtype).kind == "u" else raw).astype(idx_dtype)

    def body(b, t, i):
        shape = t.type.shape[:axis] + i.type.shape + t.type.shape[axis + 1:]
        return [op1(b, tensor.GatherOp, [t, i], TensorType(shape, t.type.element), axis=axis)]
    for dynamic in (False, True):
        check(kernel([x, idx], body, dynamic), [x, idx])


def test_gather_scalar_index_and_out_of_bounds():
    x = rand((6,))

    def body(b, t, k):
        return [op1(b, tensor.GatherOp, [t, k], t.type.element, axis=0)]
    mod = kernel([x, np.int32(0)], body)
    for k in (0, 5, -6, -1):
        check(mod, [x, np.int32(k)])
    for k in (6, -7):
        with pytest.raises(IndexError):
            run_both(mod, [x, np.int32(k)])


@pytest.mark.parametrize("mask_rank", [1, 2])
@pytest.mark.parametrize("dynamic", [False, True])
def test_compress(mask_rank, dynamic):
    x = rand((5, 3), np.float64)
    mask = RNG.random(x.shape[:mask_rank]) < 0.5
    mask.reshape(-1)[0] = True

    def body(b, t, mk):
        return [op1(b, tensor.CompressOp, [t, mk],
                    TensorType((DYN, *t.type.shape[mask_rank:]), t.type.element))]
    check(kernel([x, mask], body, dynamic), [x, mask])
    check(kernel([x, mask], body, dynamic), [x, np.zeros_like(mask)])


def test_compress_mask_mismatch_raises_index_error():
    x, mask = rand((5, 3)), np.ones(4, bool)
    mod = kernel([x, mask], lambda b, t, mk: [op1(b, tensor.CompressOp, [t, mk],
                                                   TensorType((DYN, DYN), t.type.element))],
                 dynamic=True)
    with pytest.raises(IndexError):
        run_both(mod, [x, mask])


def test_views_of_fresh_buffers_keep_them_alive():
    # The slice of a temporary is used after the temporary's last direct use: the
    # dealloc must wait for the view (the interpreter poisons freed buffers).
    x = rand((4, 4))

    def body(b, t):
        tmp = add1(b, t)
        view = slice_(b, tmp, [3, 0], [4, 4], [-1, 1])
        return [add1(b, add1(b, view))]
    low = check(kernel([x], body), [x])
    ops = [op.name for op in low.body.blocks[0].ops[0].body.blocks[0].ops]
    assert ops.index("mem.dealloc") > ops.index("mem.subview")
