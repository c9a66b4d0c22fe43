"""Other spellings of issue 19's loops run as vector kernels on ascend-sim, equal to numpy.

Found by ``benchmarks/loop_spellings.py`` (the audit of many user spellings): each form
here was a scalar kernel (or an internal error) before; each must now launch vector
kernels only, with no scalar GM access, static and ``dynamic_shape=True``, float32 and
float16.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(1919)


def _launched(k) -> list[str]:  # noqa: ANN001
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _assert_vector(k) -> None:  # noqa: ANN001
    assert set(_launched(k)) <= {"VectorKernel", "StencilKernel"}, _launched(k)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0


# ---- a batch loop around a per-row loop: the row view x[b, i] --------------------------

def softmax_batch_rows(x):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            e = np.exp(x[b, i] - x[b, i].max())
            out[b, i] = e / e.sum()
    return out


def layernorm_batch_rows_two_outputs(x):
    out = np.empty_like(x)
    mu = np.empty(x.shape[:2], dtype=x.dtype)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            m = x[b, i].mean()
            mu[b, i] = m
            d = x[b, i] - m
            out[b, i] = d / np.sqrt((d * d).mean() + 1e-5)
    return out, mu


def rmsnorm_batch_rows_offset(x, g):
    # a part of the rows (i from 1): the rows view is strided across the batch axis
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        for i in range(1, x.shape[1]):
            row = x[b, i, :]
            out[b, i, :] = row / np.sqrt(np.mean(row * row) + 1e-6) * g
    return out


def pixel_dot(x, w):
    # a reduction of an array made from a pixel's value: the batched sum reduces the
    # per-pixel axes (after the two batch axes), not the second batch axis
    out = np.zeros(x.shape, dtype=x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = np.sum(w * x[i, j]) + x[i, j]
    return out


CASES = [
    (softmax_batch_rows, lambda: (RNG.standard_normal((3, 7, 45)),)),
    (layernorm_batch_rows_two_outputs, lambda: (RNG.standard_normal((2, 9, 40)),)),
    (rmsnorm_batch_rows_offset, lambda: (RNG.standard_normal((3, 6, 33)),
                                         RNG.standard_normal(33))),
    (pixel_dot, lambda: (RNG.standard_normal((6, 7)), RNG.standard_normal((3, 4)))),
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn,make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_nested_row_loops_are_vector_kernels(fn, make, dynamic, dtype):
    args = tuple(a.astype(dtype) for a in make())
    tol = 2e-3 if dtype == "float16" else 1e-5
    k = check(hybrid(fn, dynamic_shape=dynamic), *args, rtol=tol, atol=tol)
    _assert_vector(k)


# ---- while loops that count: ``i = 0; while i < n: ...; i += 1`` ------------------------

def softmax_while(x):
    out = np.empty_like(x)
    i = 0
    while i < x.shape[0]:
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
        i += 1
    return out


def blur_while_rows(x):
    h, w = x.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    i = 0
    while i < h - 2:
        for j in range(w - 2):
            out[i, j] = np.sum(x[i:i + 3, j:j + 3]) / 9
        i += 1
    return out


WHILE = [(softmax_while, (19, 45)), (blur_while_rows, (23, 37))]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn,shape", WHILE, ids=[f.__name__ for f, _ in WHILE])
def test_counted_while_loops_are_vector_kernels(fn, shape, dynamic, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    tol = 2e-3 if dtype == "float16" else 1e-5
    _assert_vector(check(hybrid(fn, dynamic_shape=dynamic), x, rtol=tol, atol=tol))


def while_counter_used_after(x):
    # the counter's final value is read after the loop (max(init, n)); from 2 on
    out = np.zeros_like(x)
    i = 2
    while i < x.shape[0]:
        out[i] = x[i] * 2
        i += 1
    out[0] = x[0] + i
    return out


def while_step_two(x):
    out = np.zeros_like(x)
    i = 1
    while i < x.shape[0]:
        out[i] = np.exp(x[i])
        i += 2
    return out


def while_from_past_the_end(x):
    out = np.ones_like(x)
    i = x.shape[0] + 3
    while i < x.shape[0]:
        out[i] = x[i]
        i += 1
    out[0] = i
    return out


def while_with_break(x):
    out = np.zeros_like(x)
    i = 0
    while i < x.shape[0]:
        if x[i, 0] > 1.0:
            break
        out[i] = x[i] + 1
        i += 1
    return out


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", [while_counter_used_after, while_step_two,
                                while_from_past_the_end, while_with_break],
                         ids=lambda f: f.__name__)
def test_other_while_loops_stay_correct(fn, dynamic):
    check(hybrid(fn, dynamic_shape=dynamic), RNG.standard_normal((9, 20)).astype(np.float32))


# ---- chained indexing: x[c][i + a][j + b] ---------------------------------------------

def depthwise_chained(x, w):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for a in range(3):
                    for b in range(3):
                        acc += x[ch][i + a][j + b] * w[ch][a][b]
                out[ch][i][j] = acc
    return out


def softmax_batch_chained(x):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        xb = x[b]
        for i in range(x.shape[1]):
            e = np.exp(xb[i] - xb[i].max())
            out[b][i] = e / e.sum()
    return out


CHAINED = [(depthwise_chained, lambda: (RNG.standard_normal((4, 17, 23)),
                                        RNG.standard_normal((4, 3, 3)))),
           (softmax_batch_chained, lambda: (RNG.standard_normal((3, 5, 40)),))]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn,make", CHAINED, ids=[f.__name__ for f, _ in CHAINED])
def test_chained_indexing_is_vector_kernels(fn, make, dynamic, dtype):
    args = tuple(a.astype(dtype) for a in make())
    tol = 2e-3 if dtype == "float16" else 1e-5
    k = check(hybrid(fn, dynamic_shape=dynamic), *args, rtol=tol, atol=tol)
    _assert_vector(k)


# ---- the seed's bilateral filter on a float16 image (device_float64="demote") ---------

def bilateral_seed(img, sigma_space=10, sigma_color=0.1):
    h, w = img.shape
    result = np.zeros_like(img)
    space_kernel = np.exp(-(np.arange(-5, 6)**2)/(2*sigma_space**2))
    for i in range(5, h-5):
        for j in range(5, w-5):
            color_diff = img[i, j] - img[i-5:i+6, j-5:j+6]
            color_kernel = np.exp(-(color_diff**2)/(2*sigma_color**2))
            weights = space_kernel * color_kernel
            result[i, j] = np.sum(img[i-5:i+6, j-5:j+6] * weights) / np.sum(weights)
    return result


@pytest.mark.filterwarnings("ignore::pyasc.errors.DeviceFloat64Warning")
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_float16_bilateral_is_one_stencil_kernel(dynamic):
    # the float64 result (numpy's promotion) is stored into a float16 image: the demoted
    # float32 value is cast to float16 directly (a float64 cast back of the whole image
    # was a third, scalar kernel reading the image with GetValue)
    img = RNG.random((23, 41)).astype(np.float16)
    fn = hybrid(bilateral_seed, dynamic_shape=dynamic, device_float64="demote")
    k = check(fn, img, rtol=2e-3, atol=2e-3)
    assert _launched(k) == ["ScalarKernel", "StencilKernel"]  # (the 11-tap space kernel)


def scale_by_first(x):
    # an element of the row view (r[0]) was a load classified loop-invariant: an
    # internal error (a 1-index load of the batched 2-D view); now x[i, 0], a column
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        r = x[i]
        out[i] = r * r[0] + r[-1]
    return out


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_elements_of_a_row_view(dynamic):
    x = RNG.standard_normal((9, 40)).astype(np.float32)
    _assert_vector(check(hybrid(scale_by_first, dynamic_shape=dynamic), x))


# ---- keepdims rows: x[i:i + 1], a row of shape (1, n) ------------------------------------

def softmax_keepdims(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i:i + 1]
        e = np.exp(row - row.max(axis=1, keepdims=True))
        out[i:i + 1] = e / e.sum(axis=1, keepdims=True)
    return out


def rmsnorm_keepdims_colon(x, g):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        r = x[i:i + 1, :]
        out[i:i + 1, :] = r / np.sqrt(np.mean(r * r, axis=-1, keepdims=True) + 1e-6) * g
    return out


def softmax_batch_keepdims(x):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            r = x[b, i:i + 1]
            e = np.exp(r - np.max(r, axis=-1, keepdims=True))
            out[b, i:i + 1] = e / np.sum(e, axis=-1, keepdims=True)
    return out


KEEPDIMS = [(softmax_keepdims, lambda: (RNG.standard_normal((9, 37)),)),
            (rmsnorm_keepdims_colon, lambda: (RNG.standard_normal((7, 45)),
                                              RNG.standard_normal(45))),
            (softmax_batch_keepdims, lambda: (RNG.standard_normal((3, 5, 29)),))]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn,make", KEEPDIMS, ids=[f.__name__ for f, _ in KEEPDIMS])
def test_keepdims_rows_are_vector_kernels(fn, make, dynamic, dtype):
    # the loop's axis kept with size 1 (batch-loops wanted it dropped: a scalar kernel)
    args = tuple(a.astype(dtype) for a in make())
    tol = 2e-3 if dtype == "float16" else 1e-5
    k = check(hybrid(fn, dynamic_shape=dynamic), *args, rtol=tol, atol=tol)
    _assert_vector(k)
