"""Python loops over rows run as vector kernels on ascend-sim (``batch-loops``).

Each formulation below writes a per-row computation, or a small-window stencil over
the pixels (a nest of loops, the window's static loops unrolled), in another way; each must
become vector kernels only (no scalar kernel: no GetValue/SetValue on GM) with results
equal to numpy.  The loops after them are not provably independent (carried values,
reads of other rows of a written array, ``break``, possibly aliased arguments): they
stay scalar kernels, and stay correct.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, kernel

from pyasc import hybrid

RNG = np.random.default_rng(19)
X = RNG.standard_normal((37, 45)).astype(np.float32)
BIG = RNG.standard_normal((130, 67)).astype(np.float32)   # several blocks
G = RNG.standard_normal(45).astype(np.float32)
B = RNG.standard_normal(45).astype(np.float32)


@hybrid
def softmax_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i]
        m = row.max()
        e = np.exp(row - m)
        out[i] = e / e.sum()
    return out


@hybrid
def softmax_slices_static(x):
    out = np.zeros_like(x)
    for i in range(37):
        m = np.max(x[i, :], keepdims=True)
        e = np.exp(x[i, :] - m)
        out[i, :] = e / np.sum(e, keepdims=True)
    return out


@hybrid
def layernorm_rows(x, g, b):
    n = x.shape[0]
    out = np.empty_like(x)
    for i in range(n):
        r = x[i, :]
        mu = np.mean(r, keepdims=True)
        d = r - mu
        var = (d * d).mean()
        out[i, :] = d / np.sqrt(var + 1e-5) * g + b
    return out


@hybrid
def normalized_in_place(x):
    for i in range(x.shape[0]):
        x[i] = x[i] / np.abs(x[i]).sum()
    return x


@hybrid
def row_sums_part(x):
    out = np.zeros(x.shape[0], dtype=x.dtype)
    for i in range(2, 30):
        out[i] = x[i].sum() * 2
    return out


@hybrid
def elementwise_1d(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2 + y[i]
    return out


@hybrid
def planes(x):
    out = np.empty_like(x)
    for p in range(x.shape[0]):
        plane = x[p]
        out[p] = plane - plane.max(axis=-1, keepdims=True)
    return out


@hybrid(dynamic_shape=True)
def softmax_dynamic(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.exp(x[i] - x[i].max()) / np.exp(x[i] - x[i].max()).sum()
    return out


@hybrid
def blur3_loops(img):
    h, w = img.shape
    out = np.zeros_like(img)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            acc = np.float32(0)
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    acc += img[i + di, j + dj]
            out[i, j] = acc / 9
    return out


@hybrid(dynamic_shape=True)
def blur_cross_terms(img):
    out = np.zeros_like(img)
    for i in range(1, img.shape[0] - 1):
        for j in range(1, img.shape[1] - 1):
            out[i, j] = (img[i - 1, j] + img[i + 1, j] + img[i, j - 1] + img[i, j + 1]
                         + 4 * img[i, j]) * 0.125
    return out


@hybrid
def depthwise_loops(x, wt):
    c, h, w = x.shape
    k = wt.shape[1]
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                s = np.float32(0)
                for di in range(k):
                    for dj in range(k):
                        s += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = s
    return out


IMG = RNG.random((41, 67)).astype(np.float32)
BATCHED = [
    (blur3_loops, (IMG,)), (blur_cross_terms, (IMG,)), (blur_cross_terms, (X[:7, :5],)),
    (depthwise_loops, (RNG.random((5, 23, 37)).astype(np.float32),
                       RNG.random((5, 3, 3)).astype(np.float32))),
    (softmax_rows, (X,)), (softmax_rows, (BIG,)), (softmax_slices_static, (X,)),
    (layernorm_rows, (X, G, B)), (normalized_in_place, (X,)), (row_sums_part, (X,)),
    (elementwise_1d, (G, B)), (planes, (RNG.standard_normal((3, 5, 41)).astype(np.float32),)),
    (softmax_dynamic, (X,)), (softmax_dynamic, (BIG,)),
]


def _kinds(k) -> list[str]:
    return [type(kernel).__name__ for kernel in k.ascend.kernels]


@pytest.mark.parametrize("fn,args", BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_row_loops_run_as_vector_kernels(fn, args):
    k = check(fn, *args)
    assert set(_kinds(k)) <= {"VectorKernel", "StencilKernel"}  # stencils: their own kind
    counters = k.last_counters
    assert counters["gm_scalar_read_bytes"] == counters["gm_scalar_write_bytes"] == 0


def test_each_row_is_read_from_gm_once():
    k = check(softmax_rows, BIG)
    assert k.last_counters["gm_to_ub_bytes"] == BIG.nbytes
    assert k.last_counters["ub_to_gm_bytes"] == BIG.nbytes


@hybrid
def carried(x):
    out = np.empty_like(x)
    acc = np.float32(0)
    for i in range(x.shape[0]):
        acc = acc + x[i].sum()
        out[i] = x[i] * acc
    return out


@hybrid
def prefix_rows(x):
    out = x.copy()
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out


@hybrid
def reads_next_row(x):
    for i in range(x.shape[0] - 1):
        x[i] = x[i + 1] * 2
    return x


@hybrid
def stops_early(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i].sum() > 3:
            break
        out[i] = x[i] * 2
    return out


@hybrid
def skips_rows(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i, 0] > 0:
            continue
        out[i] = x[i] * 2
    return out


@hybrid
def written_argument_beside_another(x, y):
    for i in range(x.shape[0]):
        x[i] = y[i] * 2
    return x


@hybrid
def whole_array_in_body(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] - out.sum()
    return out


@hybrid
def smooths_in_place(img):
    for i in range(1, img.shape[0]):
        for j in range(1, img.shape[1]):
            img[i, j] = (img[i - 1, j] + img[i, j - 1]) * 0.5  # reads elements just written
    return img


NOT_BATCHED = [smooths_in_place, carried, prefix_rows, reads_next_row, stops_early, skips_rows,
               whole_array_in_body]


@pytest.mark.parametrize("fn", NOT_BATCHED, ids=lambda f: f.__name__)
def test_dependent_loops_stay_scalar_and_correct(fn):
    k = check(fn, X[:9, :7].copy())
    assert "ScalarKernel" in _kinds(k)


def test_possibly_aliased_arguments_stay_scalar():
    a = X[:9, :7].copy()
    k = check(written_argument_beside_another, a, a[::-1].copy())
    assert "ScalarKernel" in _kinds(k)


@hybrid
def previous_row_wraps(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i - 1] * 2  # row -1 is the last row, as in numpy
    return out


@hybrid
def next_row_read_only(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0] - 1):
        out[i] = x[i + 1] - x[i]
    return out


@pytest.mark.parametrize("fn", [previous_row_wraps, next_row_read_only],
                         ids=lambda f: f.__name__)
def test_shifted_rows_of_read_only_arrays(fn):
    check(fn, X[:9, :7].copy())


def scale_rows(x, s):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * s[i]  # s[i]: checked against s's own run-time length
    return out


def test_bounds_checked_row_loop_with_run_time_shapes_runs_on_the_vector_unit():
    # hoist-checks versions the loop on ``len(s) >= len(x)``: the host evaluates it and
    # launches the batched copy's vector kernel, or the checked loop's scalar kernel
    dyn = hybrid(scale_rows, dynamic_shape=True)
    for rows, cols in [(37, 45), (130, 67), (3, 1000), (1, 7)]:
        x = RNG.standard_normal((rows, cols)).astype(np.float32)
        s = RNG.standard_normal(rows + rows % 2).astype(np.float32)  # as long, or longer
        k = check(dyn, x, s)
        kinds = {kern.name: type(kern).__name__ for kern in k.ascend.kernels}
        assert [kinds[n] for n, _ in k.last_kernels] == ["VectorKernel"], (rows, cols)
        c = k.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    x, s = X[:9, :7].copy(), G[:5].copy()
    with pytest.raises(IndexError) as want:
        hybrid(scale_rows, dynamic_shape=True, target="interpret")(x, s)
    k = kernel(dyn, x, s)
    with pytest.raises(IndexError) as got:
        dyn.run_with(lambda program: k, x, s)
    assert str(want.value) in str(got.value)  # index 5 ... with size 5, where it failed
    kinds = {kern.name: type(kern).__name__ for kern in k.ascend.kernels}
    assert [kinds[n] for n, _ in k.last_kernels] == ["ScalarKernel"]
    assert len(dyn.specializations) == 1


def _window_extremes_of_bools(x):
    hi = np.zeros_like(x)
    lo = np.zeros_like(x)
    for i in range(x.shape[0] - 2):
        for j in range(x.shape[1] - 2):
            hi[i, j] = x[i:i + 3, j:j + 3].max()
            lo[i, j] = np.min(x[i:i + 3, j:j + 3])
    return hi, lo


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_window_slice_extremes_of_bools(dynamic):
    # found by the simfuzz campaign (loops profile, seed 51, program 1260): the max of a
    # bool window slice was scalarized as arith.max on i1, which the verifier rejects
    # (E50050 after batch-loops); a bool window's max is an or, its min an and
    fn = hybrid(dynamic_shape=dynamic)(_window_extremes_of_bools)
    check(fn, RNG.standard_normal((13, 9)) > 0.6)
