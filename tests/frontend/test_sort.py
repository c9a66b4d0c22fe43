"""Sorting and scans from the frontend: ``np.sort``/``np.argsort`` (functions and
methods, in-place ``x.sort()``), ``np.cumsum``/``np.cumprod`` and ``np.take_along_axis``.
IR text tests, differential tests (interpreter, optimized interpreter and the CPU
backend) on odd sizes, size 0/1, duplicates, NaNs, signed zeros, views and dtypes, and
located errors."""

from __future__ import annotations

import numpy as np
import pytest
from diff import UNORDERED_ZEROS, check, rand, views
from helpers import filecheck, ops
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc import errors, hybrid

RUNNERS = ("ir", "ir-opt", "cpu")
SORT_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
               "uint64", "float16", "float32", "float64"]


def messy(shape, dtype, seed=0):
    """Few distinct values (duplicates), plus NaN and -0.0 for floats."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(0 if dt.kind == "u" else -3, 4, shape).astype(dt)
    if dt.kind == "f" and x.size:
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.2] = np.nan
        flat[rng.random(flat.size) < 0.2] = -0.0
        flat[rng.random(flat.size) < 0.1] = np.inf
    return x


@hybrid
def sorts(x):
    return (np.sort(x), np.argsort(x, kind="stable"), np.sort(x, axis=0),
            np.argsort(x, axis=0, kind="stable"), np.sort(x, axis=None, kind="mergesort"),
            np.argsort(x, axis=None, stable=True), x.argsort(kind="stable"))


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_and_argsort_every_dtype(dtype):
    check(sorts, messy((5, 37), dtype), runners=RUNNERS, rtol=UNORDERED_ZEROS)


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (1, 17), (0, 4), (4, 0), (2, 16), (3, 33)])
def test_sort_sizes_around_runs_and_empty(shape):
    check(sorts, messy(shape, "float32", seed=sum(shape)), runners=RUNNERS,
          rtol=UNORDERED_ZEROS)


@pytest.mark.parametrize("view", range(4))
def test_sort_of_views(view):
    check(sorts, views(messy((6, 40), "float64", seed=3))[view], runners=RUNNERS,
          rtol=UNORDERED_ZEROS)


@hybrid
def descending(x):
    return np.argsort(-x, kind="stable"), np.argsort(-x, axis=0, kind="stable")


def test_argsort_of_negated_floats_sorts_descending_without_a_copy():
    text = descending.ir(messy((4, 9), "float32"))
    filecheck(text, """
        // CHECK: "tensor.argsort"(%{{[0-9]+}}) {axis = 1, descending = true} : (tensor<4x9xf32>) -> tensor<4x9xindex>
        // CHECK: "tensor.argsort"(%{{[0-9]+}}) {axis = 0, descending = true}
    """)
    assert "arith.neg" not in text  # the negation is dead once argsort reads x
    for dtype in ("float16", "float32"):
        check(descending, messy((7, 35), dtype, seed=5), runners=RUNNERS)
    # integers keep the negation: -x wraps, so it is not a descending sort
    assert "descending = true" not in descending.ir(messy((4, 9), "int8"))
    check(descending, np.array([[-128, 5, 127, -128, 0]], np.int8), runners=RUNNERS)


@hybrid
def in_place(x, y):
    x.sort()
    z = y * 2
    z.sort(axis=0)
    x[0].sort()
    w = y + 1
    w.fill(7)  # in-place methods make a value name a buffer (sort and fill alike)
    return x, z, w


def test_sort_method_sorts_buffers_in_place():
    check(in_place, messy((4, 21), "float32"), messy((5, 3), "int32", seed=1),
          runners=RUNNERS, rtol=UNORDERED_ZEROS)
    check(in_place, views(messy((8, 22), "float32"))[1], messy((1, 1), "int32"),
          runners=RUNNERS, rtol=UNORDERED_ZEROS)


def test_sort_text():
    @hybrid
    def f(x):
        return np.sort(x), np.argsort(x)

    filecheck(f.ir(np.zeros((3, 5), np.float32), optimized=False), """
        // CHECK: "tensor.sort"(%{{[0-9]+}}) {axis = 1} : (tensor<3x5xf32>) -> tensor<3x5xf32>
        // CHECK: %[[A:[0-9]+]] = "tensor.argsort"(%{{[0-9]+}}) {axis = 1} : (tensor<3x5xf32>) -> tensor<3x5xindex>
        // CHECK: "arith.cast"(%[[A]]) : (tensor<3x5xindex>) -> tensor<3x5xi64>
    """)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 3.0]),
                max_size=70))
def test_argsort_is_numpys_stable_order_on_any_length(values):
    fn = hybrid(dynamic_shape=True)(sorts.__wrapped__)
    x = np.array(values, np.float32).reshape(1, -1)
    check(fn, x, runners=("ir-opt", "cpu"), rtol=UNORDERED_ZEROS)


@hybrid
def scans(x):
    return (np.cumsum(x), np.cumsum(x, axis=0), np.cumprod(x, axis=-1),
            x.cumsum(axis=1, dtype=np.float64), x.cumprod(), np.cumsum(x[0]))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "float16", "float32"])
def test_cumsum_and_cumprod(dtype):
    x = rand((4, 7), dtype, low=-2, high=3)
    check(scans, x, runners=RUNNERS, rtol=1e-2 if dtype == "float16" else None)
    check(scans, views(x)[2], runners=RUNNERS, rtol=1e-2 if dtype == "float16" else None)
    check(scans, rand((1, 0), dtype), runners=RUNNERS)


def test_cumsum_accumulates_in_numpys_dtype():
    text = scans.ir(np.zeros((2, 3), np.int8))
    filecheck(text, """
        // CHECK: "arith.cast"(%{{[0-9]+}}) : (tensor<6xi8>) -> tensor<6xi64>
        // CHECK: "tensor.cumsum"(%{{[0-9]+}}) {axis = 0} : (tensor<6xi64>) -> tensor<6xi64>
    """)


@hybrid
def cumsum_out(x, out):
    np.cumsum(x, axis=1, out=out)
    return out


def test_cumsum_out():
    check(cumsum_out, rand((3, 4)), np.zeros((3, 4), np.float32), runners=RUNNERS)


@hybrid
def along(x, i, j):
    return (np.take_along_axis(x, i, axis=1), np.take_along_axis(x, j, axis=0),
            np.take_along_axis(x, np.argsort(x, axis=1, kind="stable"), axis=1),
            np.take_along_axis(x[0], i[0], axis=None))


def test_take_along_axis_with_broadcasting_and_negative_indices():
    x = rand((4, 6), "float64")
    i = np.array([[0, -1, 2], [5, 5, 0], [1, 1, 1], [-6, 3, 2]])
    check(along, x, i, np.array([[3, 0, -1, 2, 2, 1]]), runners=RUNNERS)
    bad = i.copy()
    bad[2, 1] = 6
    assert isinstance(check(along, x, bad, np.zeros((1, 6), np.int64), runners=RUNNERS),
                      IndexError)


@hybrid
def top_k(x, k):
    order = np.argsort(-x)
    return x[order[:k]], order[:k]


def test_top_k_with_a_run_time_k():
    check(top_k, rand((50,), "float32"), 7, runners=RUNNERS)


def where(err):
    return err.code, err.lineno


@pytest.mark.parametrize("body,code", [
    ("np.sort(x, kind='bogo')", "E50040"),
    ("np.sort(x, order='a')", "E50011"),
    ("np.sort(x, kind='stable', stable=True)", "E50040"),
    ("np.sort(x, axis=2)", "E50002"),
    ("x.sort(axis=None)", "E50001"),
    ("np.take_along_axis(x, x, axis=0)", "E50001"),
    ("np.take_along_axis(x, np.argsort(x)[0], axis=0)", "E50002"),
    ("np.partition(x, 2)", "E50011"),
])
def test_errors_are_located(body, code):
    src = f"def f(x):\n    y = 1\n    return {body}\n"
    namespace = {"np": np}
    from pyasc.frontend.source import register_source

    register_source("<sort errors>", src)
    exec(compile(src, "<sort errors>", "exec"), namespace)
    with pytest.raises(errors.PyascError) as info:
        hybrid(namespace["f"]).ir(np.zeros((3, 4), np.float32))
    assert where(info.value) == (code, 3)


def test_sort_is_a_single_op_in_optimized_ir():
    @hybrid
    def f(x):
        return np.sort(x * 2)

    assert ops(f.ir(np.zeros(8, np.float32))).count("tensor.sort") == 1
