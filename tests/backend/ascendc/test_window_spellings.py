"""Window spellings of issue 19 that fell back to scalar or extra kernels on ascend-sim.

Found by ``benchmarks/loop_spellings.py`` (``bil_norm_inside``, ``gauss5_lit``,
``dw_batch``): each form here launched a scalar kernel (or a vector kernel beside the
stencil) before; each must now be stencil kernels only, with no scalar GM access, equal
to ``target="interpret"`` (within the rounding of a window sum's order), static and
``dynamic_shape=True``, float32 and float16, on odd sizes.

* weights normalized inside the window (``wts / wts.sum()``, ``1 / wts.sum()``, a
  softmax of the window): ``batch_windows`` emits the window's ops in passes, each after
  the reductions it reads;
* literal weight tables (``np.array([[1, 4, 6, 4, 1], ...]) / 256``, ``np.outer(g, g)``,
  ``k / k.sum()``): ``canonicalize`` folds them to one constant, so no kernel builds them;
* a batch loop around a depthwise stencil (``out[b, ch, i, j] = np.sum(x[b, ch, i:i+3,
  j:j+3] * w[ch])``): ``stencil-windows`` collapses images and channels into planes;
* two window sums in one statement under ``dynamic_shape``: ``merge_adjacent`` merges a
  group into its first consumer group, not only into the next group;
* weights normalized in place (``wts /= wts.sum()``): ``forward-writes`` reads the
  buffer written whole as its last value.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning

RNG = np.random.default_rng(19)
CONFIGS = [pytest.param(d, t, id=f"{'dynamic' if d else 'static'}-{t}")
           for d in (False, True) for t in ("float32", "float16")]


def _launched(k) -> list[str]:  # noqa: ANN001
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def run_checked(fn, args: tuple, dynamic: bool, tol: float,  # noqa: ANN001, ANN201
                twin: bool = False):
    """ascend-sim == interpret within ``tol`` (same dtype and shape); the kernel.
    ``twin``: a scalar kernel may be compiled, not launched (the dynamic ``w[ch]`` nest's
    version for a ``w`` of fewer channels than the loop's, as for rank 3)."""
    want = hybrid(fn, target="interpret", dynamic_shape=dynamic)(*[a.copy() for a in args])
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=dynamic)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PyascPerformanceWarning (a fallback) either
        if twin:
            warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = sim(*[a.copy() for a in args])
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                   rtol=tol, atol=tol)
    k = sim.kernel(*args)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    return k


# ---- weights normalized inside the window ----------------------------------------------

def bilateral_normalized(img):
    # the weights divided by their sum (a reduction of the window) before the weighted sum
    h, w = img.shape
    out = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            wts = space * np.exp(-np.abs(win - img[i, j]) * np.float32(10))
            wts = wts / wts.sum()
            out[i, j] = (win * wts).sum()
    return out


def normalized_spellings(img):
    # three more spellings, one kernel each: the sum named first; its inverse (a scalar
    # op between the passes); a softmax of the window (three passes: max, sum, product)
    h, w = img.shape
    a = np.zeros_like(img)
    b = np.zeros_like(img)
    c = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            win = img[i - 1:i + 2, j - 1:j + 2]
            wts = np.exp(-np.abs(win - img[i, j]) * np.float32(4))
            s = np.sum(wts)
            a[i, j] = np.sum(win * (wts / s))
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            win = img[i - 1:i + 2, j - 1:j + 2]
            wts = 1 / (1 + (win - img[i, j]) ** 2)
            inv = 1 / wts.sum()
            b[i, j] = (win * wts * inv).sum()
    for i in range(h - 2):
        for j in range(w - 2):
            win = img[i:i + 3, j:j + 3]
            e = np.exp(win - win.max())
            c[i, j] = np.sum(win * e / e.sum())
    return a, b, c


@pytest.mark.parametrize("dynamic,dtype", CONFIGS)
@pytest.mark.parametrize("fn", [bilateral_normalized, normalized_spellings],
                         ids=lambda f: f.__name__)
def test_weights_normalized_inside_the_window_are_stencils(fn, dynamic, dtype):
    img = RNG.random((19, 37)).astype(dtype)
    k = run_checked(fn, (img,), dynamic, 2e-3 if dtype == "float16" else 1e-5)
    assert set(_launched(k)) == {"StencilKernel"}, _launched(k)


# ---- literal weight tables ---------------------------------------------------------------

def literal_tables(x):
    # a table of integer literals divided by a constant, an outer product of a literal
    # vector, and a table divided by its own sum: constants, no kernel of their own
    k1 = np.array([[1, 4, 6, 4, 1], [4, 16, 24, 16, 4], [6, 24, 36, 24, 6],
                   [4, 16, 24, 16, 4], [1, 4, 6, 4, 1]], dtype=np.float32) / 256
    g = np.array([1.0, 2.0, 1.0], dtype=np.float32) / 4
    k2 = np.outer(g, g)
    k3 = np.array([[1, 2, 1], [2, 5, 2], [1, 2, 1]], dtype=np.float32)
    k3 = k3 / k3.sum()
    h, w = x.shape
    a = np.zeros((h - 4, w - 4), dtype=x.dtype)
    b = np.zeros((h - 2, w - 2), dtype=x.dtype)
    c = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            a[i, j] = np.sum(x[i:i + 5, j:j + 5] * k1)
    for i in range(h - 2):
        for j in range(w - 2):
            b[i, j] = np.sum(x[i:i + 3, j:j + 3] * k2)
    for i in range(h - 2):
        for j in range(w - 2):
            c[i, j] = (x[i:i + 3, j:j + 3] * k3).sum()
    return a, b, c


@pytest.mark.parametrize("dynamic,dtype", CONFIGS)
def test_literal_weight_tables_are_constants(dynamic, dtype):
    x = RNG.random((21, 35)).astype(dtype)
    k = run_checked(literal_tables, (x,), dynamic, 2e-3 if dtype == "float16" else 1e-5)
    assert _launched(k) == ["StencilKernel"] * 3, _launched(k)


# ---- a batch loop around a depthwise stencil ---------------------------------------------

def batch_depthwise(x, w):
    # rank 4 (images, channels, rows, cols): the two leading axes are the stencil's planes,
    # plane n * C + c of x, the weights per channel; slices, chained indexing, no weights
    n, c, h, wd = x.shape
    a = np.zeros((n, c, h - 2, wd - 2), dtype=x.dtype)
    b = np.zeros((n, c, h - 2, wd - 2), dtype=x.dtype)
    m = np.zeros((n, c, h - 2, wd - 2), dtype=x.dtype)
    for im in range(n):
        for ch in range(c):
            for i in range(h - 2):
                for j in range(wd - 2):
                    a[im, ch, i, j] = np.sum(x[im, ch, i:i + 3, j:j + 3] * w[ch])
    for im in range(n):
        for ch in range(c):
            for i in range(h - 2):
                for j in range(wd - 2):
                    acc = 0.0
                    for p in range(3):
                        for q in range(3):
                            acc += x[im][ch][i + p][j + q] * w[ch][p][q]
                    b[im][ch][i][j] = acc
    for im in range(n):
        for ch in range(c):
            for i in range(h - 2):
                for j in range(wd - 2):
                    m[im, ch, i, j] = x[im, ch, i:i + 3, j:j + 3].mean()
    return a, b, m


def batch_some_channels(x):
    # channels 1.. and ..C-2 of each image: not whole planes of x (output plane
    # n * (C - 1) + c is not plane n * C + c of x): no collapsed stencil (at run time:
    # the host's check of the channels), still equal
    n, c, h, wd = x.shape
    a = np.zeros((n, c - 1, h - 2, wd - 2), dtype=x.dtype)
    b = np.zeros((n, c - 1, h - 2, wd - 2), dtype=x.dtype)
    for im in range(n):
        for ch in range(c - 1):
            for i in range(h - 2):
                for j in range(wd - 2):
                    a[im, ch, i, j] = np.sum(x[im, ch + 1, i:i + 3, j:j + 3])
    for im in range(n):
        for ch in range(c - 1):
            for i in range(h - 2):
                for j in range(wd - 2):
                    b[im, ch, i, j] = np.sum(x[im, ch, i:i + 3, j:j + 3])
    return a, b


@pytest.mark.parametrize("dynamic,dtype", CONFIGS)
def test_batch_loop_around_depthwise_is_one_stencil(dynamic, dtype):
    x = RNG.random((2, 3, 13, 21)).astype(dtype)
    w = RNG.random((3, 3, 3)).astype(dtype)
    k = run_checked(batch_depthwise, (x, w), dynamic, 2e-3 if dtype == "float16" else 1e-5,
                    twin=dynamic)
    assert _launched(k) == ["StencilKernel"] * 3, _launched(k)
    c = k.last_counters  # each of the three reads x about once (plus the halo rows)
    assert c["gm_to_ub_bytes"] <= 3 * 1.5 * x.nbytes + 2 * w.nbytes, c


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_batch_loop_over_some_channels_is_equal(dynamic):
    x = RNG.random((2, 4, 11, 19)).astype(np.float32)
    run_checked(batch_some_channels, (x,), dynamic, 1e-5)


# ---- two window sums in one statement ----------------------------------------------------

def two_window_sums(x):
    # two sums of the window (batched side by side: under dynamic_shape the grouping
    # split them into one group per tap of each, alternating, which merged pairwise only
    # when adjacent); a literal table, and the window named once
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / 16
    h, w = x.shape
    a = np.zeros((h - 2, w - 2), dtype=x.dtype)
    b = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            a[i, j] = np.sum(x[i:i + 3, j:j + 3] * k) + (x[i:i + 3, j:j + 3] * k).sum()
    for i in range(h - 2):
        for j in range(w - 2):
            win = x[i:i + 3, j:j + 3]
            b[i, j] = np.sum(win * k) - np.sum(win * win)
    return a, b


@pytest.mark.parametrize("dynamic,dtype", CONFIGS)
def test_two_window_sums_in_one_statement_are_one_stencil(dynamic, dtype):
    x = RNG.random((17, 39)).astype(dtype)
    k = run_checked(two_window_sums, (x,), dynamic, 2e-3 if dtype == "float16" else 1e-5)
    assert _launched(k) == ["StencilKernel"] * 2, _launched(k)


# ---- weights normalized in place ---------------------------------------------------------

def normalized_in_place(img):
    # wts /= wts.sum(): a buffer written and read back whole, forwarded (forward-writes)
    # to the values, so the window loop batches as for wts = wts / wts.sum()
    h, w = img.shape
    out = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            wts = space * np.exp(-np.abs(win - img[i, j]) * np.float32(10))
            wts /= wts.sum()
            wts *= np.float32(2)
            out[i, j] = (win * wts).sum()
    return out


@pytest.mark.parametrize("dynamic,dtype", CONFIGS)
def test_weights_normalized_in_place_are_a_stencil(dynamic, dtype):
    img = RNG.random((19, 37)).astype(dtype)
    k = run_checked(normalized_in_place, (img,), dynamic, 2e-3 if dtype == "float16" else 1e-5)
    assert _launched(k) == ["StencilKernel"], _launched(k)
