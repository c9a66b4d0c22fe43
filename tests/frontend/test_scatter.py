"""Advanced indexing from the frontend: several index arrays (broadcast together),
integers and masks mixed with arrays, assignment through index arrays and masks
(``mem.scatter``, last write wins), ``x[idx] op= v``, and N-D ``np.dot``.  IR text
tests, differential tests (interpreter, optimized interpreter, CPU backend) and
located errors."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand, views
from helpers import filecheck
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc import errors, hybrid

RUNNERS = ("ir", "ir-opt", "cpu")


@hybrid
def reads(x, i, j):
    return (x[i, j], x[i[:, None], j], x[i, :, j], x[:, i, j], x[1:, i, 2], x[..., i, j],
            x[-1, i, j], x[i, 0, 1:], x[[0, -1], [1, 0]], x[i, j[0]])


def test_several_index_arrays_follow_numpys_layout():
    x = rand((5, 4, 6))
    i, j = np.array([0, -1, 3, 3]), np.array([1, 2, 0, -4])
    check(reads, x, i, j, runners=RUNNERS)
    check(reads, views(rand((8, 4, 6), "int16"))[1], i, j.astype(np.uint8) % 4,
          runners=RUNNERS)


def test_out_of_bounds_and_unbroadcastable_indices_raise():
    x, i = rand((5, 4, 6)), np.array([0, 1, 2, 3])
    assert isinstance(check(reads, x, i, np.array([0, 1, 2, 4])), IndexError)
    fn = hybrid(dynamic_shape=True)(reads.__wrapped__)
    got = check(fn, x, i, np.array([0, 1, 2]), runners=RUNNERS)
    assert isinstance(got, IndexError)


@hybrid
def masked_reads(x, m, r, i):
    return x[m, 1:3], x[m, i], x[1, r], x[m], x[:3][r, 0]


def test_masks_mixed_with_other_indices():
    x = rand((5, 3, 4), "float64")
    m = np.array([True, False, True, True, False])
    r = np.array([False, True, True])
    check(masked_reads, x, m, r, np.array([2, 0, 1]), runners=RUNNERS)
    check(masked_reads, x, ~m & False, r, np.zeros(0, np.int64), runners=RUNNERS)


def test_gather_nd_text():
    @hybrid
    def f(x, i, j):
        return x[i, j]

    filecheck(f.ir(np.zeros((4, 6), np.float32), np.zeros(3, np.int32),
                   np.zeros((2, 1), np.int64), optimized=False), """
        // CHECK: "tensor.gather_nd"(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) {array = "x", axes = [0, 1]} : (tensor<4x6xf32>, tensor<3xi32>, tensor<2x1xi64>) -> tensor<2x3xf32>
    """)


@hybrid
def scatters(x, i, v):
    x[i] = v
    return x


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "uint64"])
def test_scatter_last_write_wins(dtype):
    i = np.array([0, 3, 3, -1, 6, 0, 3])
    check(scatters, rand((7,), dtype), i, rand((7,), dtype, seed=3), runners=RUNNERS)
    check(scatters, rand((7,), dtype), i, rand((1,), dtype, seed=4), runners=RUNNERS)
    check(scatters, rand((7, 2), dtype), i[:3], rand((2,), dtype, seed=5), runners=RUNNERS)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-6, 5), max_size=12), st.integers(0, 3))
def test_scatter_any_indices(indices, seed):
    fn = hybrid(dynamic_shape=True)(scatters.__wrapped__)
    i = np.array(indices, np.int64)
    check(fn, rand((6, 2), "int32", seed), i, rand((len(indices), 2), "int32", seed + 1),
          runners=("ir-opt", "cpu"))


def test_scatter_value_errors():
    assert isinstance(check(scatters, rand((7,)), np.array([1, 7]), 1.0, runners=RUNNERS),
                      IndexError)
    fn = hybrid(dynamic_shape=True)(scatters.__wrapped__)
    got = check(fn, rand((7,)), np.array([1, 2]), rand((3,)), runners=RUNNERS)
    assert isinstance(got, ValueError)


@hybrid
def mixed_stores(x, i, j, v):
    x[i, j] = v
    x[:, i, 0] = -1
    x[i, 1:3, j[0]] = 7
    x[1:, i, i] = v[0, :3]
    return x


def test_scatter_with_several_indices_and_views():
    i, j = np.array([0, 2, -1]), np.array([3, 0, 3])
    check(mixed_stores, rand((4, 4, 5)), i, j, rand((3, 5), seed=1), runners=RUNNERS)
    check(mixed_stores, views(rand((8, 4, 5), "int32"))[0], i, j,
          rand((3, 5), "int32", seed=1), runners=RUNNERS)


def test_scatter_text():
    @hybrid
    def f(x, i, v):
        x[:, i] = v

    filecheck(f.ir(np.zeros((4, 6), np.float32), np.zeros(3, np.int64),
                   np.zeros((4, 3), np.float64), optimized=False), """
        // CHECK: %[[T:[0-9]+]] = "mem.transpose"(%x) {perm = [1, 0]}
        // CHECK: %[[V:[0-9]+]] = "arith.cast"(%{{[0-9]+}}) : (tensor<4x3xf64>) -> tensor<4x3xf32>
        // CHECK: %[[W:[0-9]+]] = "tensor.transpose"(%[[V]]) {perm = [1, 0]}
        // CHECK: "mem.scatter"(%[[W]], %[[T]], %{{[0-9]+}}) {array = "x", axes = [1]} : (tensor<3x4xf32>, memref<6x4xf32, strided<[1, 6]>>, tensor<3xi64>) -> ()
    """)


@hybrid
def mask_stores(x, y, m, v, row):
    x[m] = v
    y[m] = row
    y[y[:, 0] > 100] = 0
    return x, y


def test_mask_assignment_of_arrays():
    m = np.array([True, False, True, True, False, True])
    x, y = rand((6,)), rand((6, 3), seed=2)
    check(mask_stores, x, y, m, rand((4,), seed=3), rand((3,), seed=4), runners=RUNNERS)
    assert isinstance(check(mask_stores, x, y, m, rand((3,)), rand((3,)), runners=RUNNERS),
                      ValueError)


def test_mask_shape_is_checked_at_run_time_for_dynamic_shapes():
    fn = hybrid(dynamic_shape=True)(mask_stores.__wrapped__)
    x, y = rand((5,)), rand((5, 3))
    got = check(fn, x, y, np.ones(4, bool), rand((4,)), rand((3,)), runners=RUNNERS)
    assert isinstance(got, IndexError)
    check(fn, x, y, x > 0, rand((int((x > 0).sum()),)), rand((3,)), runners=RUNNERS)


@hybrid
def mask2d_store(x, v):
    x[x > 0] = v
    return x


def test_two_dimensional_mask_assignment():
    x = rand((4, 5), "float64")
    check(mask2d_store, x, np.arange(int((x > 0).sum()), dtype=np.float64), runners=RUNNERS)
    check(mask2d_store, views(x)[2], np.float64(2.5), runners=RUNNERS)


@hybrid
def augmented(x, i, j):
    x[i] += 1
    x[i, j] *= 2
    x[x < 0] -= 1
    return x


def test_augmented_assignment_through_indices_updates_duplicates_once():
    check(augmented, rand((5, 4), "int32"), np.array([1, 1, 3]), np.array([0, 0, 2]),
          runners=RUNNERS)


@hybrid
def dots(a, b, c):
    return np.dot(a, b), np.dot(b, c), a.dot(b[0]), np.dot(b[0, 0], c), np.dot(a[0], b)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_dot_of_n_dimensional_arrays(dtype):
    a, b, c = rand((2, 3, 4), dtype), rand((5, 4, 3), dtype, 1), rand((2, 3, 6), dtype, 2)
    check(dots, a, b, c, runners=RUNNERS, rtol=1e-12)


def test_dot_n_d_is_one_flat_matmul():
    @hybrid
    def f(a, b):
        return np.dot(a, b)

    filecheck(f.ir(np.zeros((2, 3, 4)), np.zeros((5, 4, 7)), optimized=False), """
        // CHECK: "tensor.reshape"(%{{[0-9]+}}) : (tensor<2x3x4xf64>) -> tensor<6x4xf64>
        // CHECK: "tensor.matmul"(%{{[0-9]+}}, %{{[0-9]+}}) : (tensor<6x4xf64>, tensor<4x35xf64>) -> tensor<6x35xf64>
        // CHECK: "tensor.reshape"(%{{[0-9]+}}) : (tensor<6x35xf64>) -> tensor<2x3x5x7xf64>
    """)
    fn = hybrid(dynamic_shape=True)(f.__wrapped__)
    check(fn, rand((2, 3, 4), "float64"), rand((5, 4, 7), "float64"), runners=RUNNERS,
          rtol=1e-12)
    assert isinstance(check(fn, rand((2, 3, 4)), rand((5, 3, 7))), ValueError)


BAD = [
    ("x[i, None]", "E50011"),
    ("x[i, i[:2]]", "E50002"),
    ("x[i.astype(np.float32), 0]", "E50001"),
    ("x[0, i, 1]", "E50002"),
    ("x[np.zeros(4, np.bool_)]", "E50002"),
    ("np.dot(x[None], x[None])", "E50002"),
]


@pytest.mark.parametrize("body,code", BAD, ids=[b for b, _ in BAD])
def test_errors_are_located(body, code):
    src = f"def f(x, i):\n    y = 1\n    return {body}\n"
    namespace = {"np": np}
    from pyasc.frontend.source import register_source

    register_source("<scatter errors>", src)
    exec(compile(src, "<scatter errors>", "exec"), namespace)
    with pytest.raises(errors.PyascError) as info:
        hybrid(namespace["f"]).ir(np.zeros((3, 4), np.float32), np.zeros(3, np.int64))
    assert (info.value.code, info.value.lineno) == (code, 3)


def test_store_shape_mismatch_is_located():
    src = "def f(x, i):\n    x[i, 0] = x[:2, 0]\n"
    namespace = {"np": np}
    from pyasc.frontend.source import register_source

    register_source("<scatter store>", src)
    exec(compile(src, "<scatter store>", "exec"), namespace)
    with pytest.raises(errors.ShapeInferenceError) as info:
        hybrid(namespace["f"]).ir(np.zeros((3, 4), np.float32), np.zeros(3, np.int64))
    assert info.value.lineno == 2
