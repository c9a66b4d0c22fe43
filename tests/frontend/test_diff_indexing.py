"""Differential tests: indexing, slicing, views, stores, masks and gathers, on
contiguous arrays, views, odd sizes and size-1 dims."""

from __future__ import annotations

import numpy as np
import pytest
from diff import MATH, ON_DEVICE, SUM, check, rand, views

from pyasc import hybrid


@hybrid
def basic_reads(x):
    return (x[0], x[-1], x[1:], x[:-1], x[::2], x[::-1], x[-2::-2], x[1:100], x[-100:2],
            x[..., 0], x[None], x[:, None, 0], x[-1, ...], x[0, 0], x[-1, -1])


SHAPES = [(3, 4), (5, 1), (1, 1), (7, 6)]


@pytest.mark.parametrize("shape", SHAPES)
def test_basic_indexing(shape):
    check(basic_reads, rand(shape))


@pytest.mark.parametrize("view", range(4))
def test_basic_indexing_of_views(view):
    check(basic_reads, views(rand((6, 5)))[view])


@hybrid
def dynamic_indices(x, i, j, k):
    return x[i], x[i, j], x[i:j], x[j:i:-1], x[i:], x[:, k::2], x[-i], x[i - 1:j + 1]


@pytest.mark.parametrize("i,j,k", [(1, 3, 0), (0, 3, 1), (-2, 2, 2), (3, -1, -2), (4, 0, 0)])
def test_run_time_indices(i, j, k):
    check(dynamic_indices, rand((5, 4), "int32"), i, j, k)


def test_out_of_bounds_indices_raise_with_boundscheck():
    checked = hybrid(boundscheck=True)(dynamic_indices.__wrapped__)
    err = check(checked, rand((5, 4), "int32"), 1, 4, 0)
    assert isinstance(err, IndexError)
    check(checked, rand((5, 4), "int32"), -5, 2, 0)


@hybrid
def windows(img):
    h, w = img.shape
    out = np.zeros_like(img)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            out[i, j] = img[i - 1:i + 2, j - 1:j + 2].sum()
    return out


@pytest.mark.parametrize("shape", [(3, 3), (6, 5), (8, 2)])
def test_sliding_windows_have_static_shapes(shape):
    check(windows, rand(shape, "float64"), rtol=SUM(9))


@hybrid
def stores(x, v):
    out = np.zeros_like(x)
    out[0] = v
    out[1:3] = x[0]
    out[-1, ::2] = 7
    out[..., 0] += 1
    out[1, 1] = v * 2
    return out


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_stores_with_broadcasting(dtype):
    check(stores, rand((4, 5), dtype, low=0), 3)


@hybrid
def write_through_views(x):
    y = x[1:]
    y[0] = 100
    t = x.T
    t[0, 0] = -1
    z = x
    z += 1
    return x


def test_writes_through_views_alias_the_parameter():
    check(write_through_views, rand((3, 3)))
    check(write_through_views, views(rand((6, 4)))[0])


@hybrid
def accumulate_in_place(x, w):
    out = np.zeros((3,) + x.shape, x.dtype)
    for k in range(3):
        out[k] += w[k] * x  # the fused group stores straight into out[k]
        out[k, 1:] += out[k, :-1]  # reads the buffer at another index: via a temporary
        out[k] = np.exp(out[k] * 0.125) + out[k]
    t = x.copy()
    t[::-1] += t
    x[1:] += x[:-1] * 2
    x += 1
    return out, t, x


@hybrid
def add_into(p, q):
    p += q * 2
    return p


accumulate_dynamic = hybrid(dynamic_shape=True)(accumulate_in_place.__wrapped__)


@hybrid(dynamic_shape=True)
def broadcast_into_rows(x, out):
    out[1:] = np.exp(x * 0.5)  # (m,) written into (n - 1, m): the write broadcasts
    return out


def test_accumulating_into_views_matches_numpy():
    check(accumulate_dynamic, rand((5, 6)), rand((3,), seed=1), rtol=MATH)
    check(broadcast_into_rows, rand((4,)), rand((3, 4), seed=2), rtol=MATH)
    check(broadcast_into_rows, rand((1,)), rand((3, 4), seed=2), rtol=MATH)
    check(accumulate_in_place, rand((5, 6)), rand((3,), seed=1), rtol=MATH)
    check(accumulate_in_place, views(rand((8, 6)))[2], rand((3,), seed=1),
          rtol=MATH)
    a = rand((7,), "int32")
    check(add_into, a, a)  # both parameters are one array
    check(add_into, rand((4, 3), "int32"), rand((4, 3), "int32", seed=2))


@hybrid
def masks(x, limit):
    y = x.copy()
    y[y > limit] = limit
    y[x < 0] += 10
    return y, x[x > 0], y[y > 100]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_boolean_masks(dtype):
    check(masks, rand((4, 5), dtype), 1)
    check(masks, rand((7,), dtype, seed=4), 0)


@hybrid
def gathers(x, idx):
    return x[idx], x[:, idx], x[idx, 1], x[[0, -1]], np.take(x, idx), np.take(x, idx, axis=1)


def test_integer_array_indexing():
    check(gathers, rand((5, 4)), np.array([0, 3, -1, 2]))
    check(gathers, rand((4, 4), "int8"), np.array([[1, 2], [3, 0]]))


@hybrid
def out_args(x, y, out):
    np.add(x, y, out=out)
    np.exp(x, out=x)
    np.sum(y, axis=0, out=out[0])
    return out


def test_out_arguments_write_in_place():
    check(out_args, rand((3, 4), "float64"), rand((3, 4), "float64", 1), np.empty((3, 4)),
          rtol=MATH + ON_DEVICE(SUM(3)))


@hybrid
def ascontiguous(x):
    y = np.ascontiguousarray(x)
    y[0] = 0
    return y, x


@pytest.mark.parametrize("view", [0, 2, None])
def test_ascontiguousarray_copies_only_views(view):
    a = rand((4, 6))
    check(ascontiguous, a if view is None else views(a)[view])


@hybrid
def dynamic_shapes(x):
    n = x.shape[0]
    y = x[1:n - 1]
    return y * 2, np.zeros(n), x.reshape(-1), len(x)


def test_dynamic_shape_specialization():
    fn = hybrid(dynamic_shape=True)(dynamic_shapes.__wrapped__)
    for n in (3, 8):
        check(fn, rand((n, 2)))
    assert "?x2" not in fn.ir(rand((3, 2))) and "?x?xf32" in fn.ir(rand((3, 2)))


@hybrid
def write_rows(x):
    y = x * 1
    for row in y:
        row[0] = -1
    for row in x:
        row *= 2
    return y, x


def test_loop_rows_are_views():
    check(write_rows, rand((3, 4)))
