"""Stencils written with loops run as stencil kernels on ascend-sim (``stencil-windows``).

After ``batch-loops`` a 3x3 blur or a depthwise convolution is a group whose inputs are
shifted windows of one array.  The stencil kernel loads each tile's input rows once
(halo included) and makes every window a ``Gather`` inside the Unified Buffer: the GM
traffic must stay within 1.2x the minimum (every input read once, the output written
once), with no scalar GM access, and the results equal numpy's.  Odd sizes, several
tiles and several blocks; two arrays read through windows; a window reaching both
sides; and the pass disabled (the ``flat`` kernel of before, 4-9x the GM bytes).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ascendc_kit import check, kernel, run_sim

import pyasc
from pyasc import hybrid
from pyasc.errors import WindowSizeCapWarning
from pyasc.jit import window_cap

RNG = np.random.default_rng(1919)


@hybrid
def blur3(img):
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


@hybrid
def depthwise(x, wt):
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


@hybrid
def two_arrays(a, b):
    out = np.zeros_like(a)
    for i in range(2, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 3):
            out[i, j] = np.exp(a[i - 2, j + 3] - a[i, j - 1]) * b[i + 1, j] + b[i, j]
    return out


@hybrid
def gradient_magnitude(img):
    h, w = img.shape
    out = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            gx = img[i, j + 2] - img[i, j] + 2 * (img[i + 1, j + 2] - img[i + 1, j])
            gy = img[i + 2, j] - img[i, j] + 2 * (img[i + 2, j + 1] - img[i, j + 1])
            out[i, j] = np.sqrt(gx * gx + gy * gy)
    return out


@hybrid
def laplacian(img):
    out = np.zeros_like(img)
    for i in range(1, img.shape[0] - 1):
        for j in range(1, img.shape[1] - 1):
            out[i, j] = img[i - 1, j] + img[i + 1, j] + img[i, j - 1] + img[i, j + 1] \
                - 4 * img[i, j]
    return out


def _f32(*shape):
    return RNG.random(shape).astype(np.float32)


CASES = [
    ("blur 41x67", blur3, (_f32(41, 67),)),
    ("blur 257x131 (several tiles, blocks)", blur3, (_f32(257, 131),)),
    ("depthwise 5x23x37", depthwise, (_f32(5, 23, 37), _f32(5, 3, 3))),
    ("depthwise 3x61x45 5x5", depthwise, (_f32(3, 61, 45), _f32(3, 5, 5))),
    ("two arrays", two_arrays, (_f32(29, 35), _f32(29, 35))),
    ("blur float16 image", blur3, (_f32(37, 53).astype(np.float16),)),
    ("laplacian int32", laplacian, (RNG.integers(-1000, 1000, (31, 45)).astype(np.int32),)),
    ("laplacian float16", laplacian, (_f32(21, 77).astype(np.float16),)),
    # the fusion pass splits it in two groups (gx; gy and the root): merged as stencils
    ("sobel magnitude", gradient_magnitude, (_f32(33, 70),)),
]


def _minimum(args, got) -> int:
    return sum(a.nbytes for a in args) + np.asarray(got).nbytes


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_stencil_reads_each_input_once(name, fn, args):
    k = check(fn, *args)
    kinds = [type(x).__name__ for x in k.ascend.kernels]
    assert kinds == ["StencilKernel"], name
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0  # no scalar loop
    assert c["Gather_calls"] > 0
    interior = np.asarray(fn.__wrapped__(*args))
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
    assert gm <= 1.2 * _minimum(args, interior), (gm, _minimum(args, interior))


def test_disabled_pass_keeps_the_flat_kernel(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "stencil-windows")
    img = _f32(19, 23)
    k = check(blur3, img)
    assert [type(x).__name__ for x in k.ascend.kernels] == ["VectorKernel"]
    c = k.last_counters
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] > 4 * 2 * img.nbytes * 0.8


def test_windows_written_between_snapshot_and_use_are_not_a_stencil():
    @hybrid
    def blur_then_overwrite(img):
        out = np.zeros_like(img)
        for i in range(1, img.shape[0] - 1):
            for j in range(1, img.shape[1] - 1):
                out[i, j] = img[i - 1, j] + img[i + 1, j] + img[i, j]
        img[:] = out  # the stencil read img before this write
        return img * 2
    check(blur_then_overwrite, _f32(17, 21))


# ---- window slices (``img[i-r:i+r+1, j-r:j+r+1]`` in a pixel loop) -------------------

@hybrid
def bilateral5(img, sigma_color=0.1):
    h, w = img.shape
    result = np.zeros_like(img)
    space = np.exp(-(np.arange(-2, 3) ** 2) / np.float32(8)).astype(np.float32)
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            color_diff = img[i, j] - img[i - 2:i + 3, j - 2:j + 3]
            color = np.exp(-(color_diff ** 2) / np.float32(2 * sigma_color ** 2))
            weights = space * color
            result[i, j] = np.sum(img[i - 2:i + 3, j - 2:j + 3] * weights) / np.sum(weights)
    return result


@hybrid
def window_max_minus_mean(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 2):
            win = x[i - 1:i + 2, j - 1:j + 3]
            out[i, j] = win.max() - win.mean() * 0.5 + win.min()
    return out


def test_window_slices_run_as_one_stencil_kernel():
    img = _f32(37, 53)
    k = check(bilateral5, img)
    assert [type(x).__name__ for x in k.ascend.kernels] == ["StencilKernel"]
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    tiles = k.ascend.kernels[0].units
    assert c["Gather_calls"] == 25 * tiles  # one per window offset, the centre shared
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.2 * 2 * img.nbytes


def test_window_max_min_and_mean():
    check(window_max_minus_mean, _f32(19, 26))
    k = check(window_max_minus_mean, _f32(19, 26))
    assert [type(x).__name__ for x in k.ascend.kernels] == ["StencilKernel"]


def test_seed_bilateral_filter_demoted_is_a_stencil_kernel():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from bilateral_filter import bilateral_filter

    demoted = hybrid(bilateral_filter.__wrapped__, device_float64="demote")
    img = _f32(41, 67)
    with pytest.warns(Warning, match="float32"):
        k = check(demoted, img)
    kinds = [type(x).__name__ for x in k.ascend.kernels]
    # the (11,) float64 space kernel is a scalar kernel over its 11 taps (a fused group
    # of the frontend, demoted as scalar code); every pixel runs in the stencil kernel
    assert kinds == ["ScalarKernel", "StencilKernel"]
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"] < 0.05 * img.nbytes
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
    assert gm <= 1.2 * 2 * img.nbytes


@hybrid
def partial_window_sums(x):
    out = np.zeros((x.shape[0], x.shape[1]), dtype=x.dtype)
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            out[i, j] = np.sum(x[i - 1:i + 2, j - 1:j + 2], axis=0).max()  # not whole
    return out


@hybrid
def self_normalized_window(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            win = x[i - 1:i + 2, j - 1:j + 2]
            out[i, j] = np.sum(win / win.sum() * win)  # reads its own reduction
    return out


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_windows_without_a_per_element_form_stay_scalar_and_correct():
    k = check(partial_window_sums, _f32(9, 11))
    assert "ScalarKernel" in [type(x).__name__ for x in k.ascend.kernels]


def test_a_window_reading_its_own_reduction_is_a_stencil():
    # batch_windows emits the window's ops in passes, each after the sums it reads (897f120)
    k = check(self_normalized_window, _f32(9, 11))
    assert [type(x).__name__ for x in k.ascend.kernels] == ["StencilKernel"]


# ---- run-time shapes (``dynamic_shape=True``) ------------------------------------------

# (two_arrays stays a scalar kernel with run-time shapes: its accesses of b are checked,
# and batch-loops leaves the versioned loop alone; the Sobel filter's gx and gy are
# one stencil kernel: merge_adjacent merges gx's group into its consumer past gy's;
# window slices' clamps are decided by the loops' bounds)
DYNAMIC = [("blur", blur3, [(41, 67), (20, 37), (130, 257), (3, 3)], 1),
           ("laplacian", laplacian, [(31, 45), (64, 129)], 1),
           ("sobel magnitude", gradient_magnitude, [(33, 70), (18, 129)], 1),
           ("window slices", bilateral5, [(37, 53), (9, 300), (70, 23)], 1),
           ("window max minus mean", window_max_minus_mean, [(19, 26), (40, 7)], 1)]


@pytest.mark.parametrize("name,fn,shapes,launches", DYNAMIC, ids=[c[0] for c in DYNAMIC])
def test_dynamic_shape_stencil_one_kernel_for_every_shape(name, fn, shapes, launches):
    dyn = hybrid(fn.__wrapped__, dynamic_shape=True)
    for shape in shapes:
        args = [_f32(*shape)]
        k = check(dyn, *args)
        kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
        assert [kinds[n] for n, _ in k.last_kernels] == ["StencilKernel"] * launches, name
        c = k.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        if shape[0] * shape[1] >= 1024 and launches == 1:  # a 3x3 image is all halo
            interior = np.asarray(fn.__wrapped__(*args))
            gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
            assert gm <= 1.2 * _minimum(args, interior), (shape, gm, _minimum(args, interior))
    assert len(dyn.specializations) == 1


def test_seed_bilateral_filter_demoted_with_run_time_shapes_is_a_stencil_kernel():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    from bilateral_filter import bilateral_filter

    dyn = hybrid(bilateral_filter.__wrapped__, dynamic_shape=True, device_float64="demote")
    for shape in [(41, 67), (20, 33), (130, 70), (25, 700), (9, 40)]:
        img = _f32(*shape)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            k = check(dyn, img)
        if shape == (41, 67):  # compiled at the first call: the demotion is warned
            assert any("float32" in str(w.message) for w in seen)
        kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
        # the 11-element space kernel is a scalar kernel; an image of fewer than 11 rows
        # has no interior: the stencil kernel launches no block
        assert [kinds[n] for n, _ in k.last_kernels] == \
            ["ScalarKernel"] + ["StencilKernel"] * (shape[0] > 10), shape
        c = k.last_counters
        # the space kernel's 11 taps only: no scalar access per pixel
        assert c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"] <= 1024
        assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.2 * 2 * img.nbytes
    assert len(dyn.specializations) == 1


def depthwise_k(x, wt, k):
    k = pyasc.static(k)  # the window loops unroll: a static kernel size
    c, h, w = x.shape
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


def test_dynamic_depthwise_reads_each_plane_weight_once_per_block():
    # boundscheck=False: with the checks of wt's indices (its shape is not x's) the
    # nest is versioned on them, and batch-loops takes only top-level nests
    dyn = hybrid(depthwise_k, dynamic_shape=True, boundscheck=False)
    for shape, k in [((5, 23, 37), 3), ((3, 61, 45), 3), ((7, 9, 300), 3), ((4, 20, 19), 5),
                     ((2, 40, 33), 5)]:
        args = (_f32(*shape), _f32(shape[0], k, k), k)
        kern = check(dyn, *args)
        kinds = {x.name: type(x).__name__ for x in kern.ascend.kernels}
        assert [kinds[n] for n, _ in kern.last_kernels] == ["StencilKernel"], shape
        c = kern.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        interior = np.asarray(depthwise_k(*args))
        gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
        assert gm <= 1.2 * _minimum(args[:2], interior), (shape, gm)
    assert len(dyn.specializations) == 2  # one per kernel size k


def test_dynamic_stencil_rows_wider_than_the_halo_buffer_run_in_column_tiles():
    dyn = hybrid(blur3.__wrapped__, dynamic_shape=True)
    for shape in [(6, 9000), (12, 40), (37, 2500), (2, 5000)]:
        k = check(dyn, _f32(*shape))
        kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
        assert [kinds[n] for n, _ in k.last_kernels] == (["StencilKernel"] if shape[0] > 2
                                                         else []), shape
        if shape[0] <= 2:
            continue  # no interior: nothing launched
        c = k.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
        assert gm <= 1.2 * 2 * 4 * shape[0] * shape[1], (shape, gm)
    assert len(dyn.specializations) == 1


def _raised(fn, *args) -> IndexError:
    with pytest.raises(IndexError) as info:
        fn(*args)
    return info.value


def test_bounds_checked_dynamic_depthwise_is_a_stencil_kernel():
    # boundscheck on (the default): hoist-checks versions the nest on wt's checks
    # (``wt.shape >= (c, k, k)``, unprovable with run-time shapes); the host evaluates
    # that condition and launches the batched fast copy's stencil kernel
    dyn = hybrid(depthwise_k, dynamic_shape=True)
    for shape, k in [((5, 23, 37), 3), ((3, 61, 45), 3), ((7, 9, 300), 3), ((4, 20, 19), 5),
                     ((1, 7, 7), 5)]:
        args = (_f32(*shape), _f32(shape[0], k, k), k)
        kern = check(dyn, *args)
        kinds = {x.name: type(x).__name__ for x in kern.ascend.kernels}
        assert [kinds[n] for n, _ in kern.last_kernels] == ["StencilKernel"], shape
        c = kern.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
        assert gm <= 1.2 * _minimum(args[:2], depthwise_k(*args)), (shape, gm)
    assert len(dyn.specializations) == 2  # one per kernel size k


def depthwise_shape_k(x, wt):
    k = wt.shape[1]  # a run-time dimension under dynamic_shape: the window loops' size
    c, h, w = x.shape
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                s = np.float32(0)
                for di in range(k):
                    for dj in range(wt.shape[2]):
                        s += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = s
    return out


def depthwise_shape_slices(x, wt):
    k = wt.shape[1]
    c, h, w = x.shape
    out = np.empty((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                out[ch, i, j] = (x[ch, i:i + k, j:j + k] * wt[ch]).sum()
    return out


WINDOW_SHAPES = [((5, 23, 37), 3), ((3, 61, 45), 3), ((7, 9, 301), 3), ((4, 20, 19), 5),
                 ((2, 41, 33), 5), ((1, 7, 7), 5)]


@pytest.mark.parametrize("fn", [depthwise_shape_k, depthwise_shape_slices])
@pytest.mark.parametrize("boundscheck", [False, True])
def test_dynamic_window_of_a_weight_dimension_is_one_stencil_kernel_per_size(fn, boundscheck):
    # the window loops run to wt.shape[1] (a run-time dimension): the jit specializes
    # that dimension by value (one kernel per window size, the image dims stay run-time)
    dyn = hybrid(fn, dynamic_shape=True, boundscheck=boundscheck)
    interp = hybrid(fn, dynamic_shape=True, boundscheck=boundscheck, target="interpret")
    for shape, k in WINDOW_SHAPES:
        args = (_f32(*shape), _f32(shape[0], k, k))
        kern = check(dyn, *args)
        np.testing.assert_allclose(run_sim(dyn, *args)[0], interp(*args), rtol=1e-5, atol=1e-6)
        kinds = {x.name: type(x).__name__ for x in kern.ascend.kernels}
        assert [kinds[n] for n, _ in kern.last_kernels] == ["StencilKernel"], shape
        c = kern.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
        assert gm <= 1.2 * _minimum(args, fn(*args)), (shape, gm)
    assert len(dyn.specializations) == 2  # one per window size
    # the loops: wt.shape[1] (and the dj loop's wt.shape[2]) by value, nothing else; the
    # slices x[ch, i:i + k, j:j + k]: k = wt.shape[1] (wt[ch]'s other size is versioned)
    last = "{k}" if fn is depthwise_shape_k else "?"
    for k in (3, 5):
        assert f"(x: float32[?, ?, ?], wt: float32[?, {k}, {last.format(k=k)}])" in \
            str(dyn.specializations), dyn.specializations


def test_window_sizes_past_the_cap_run_one_generic_scalar_kernel(monkeypatch):
    # the first window size (cap 1 here, 8 by default) is a stencil kernel; later sizes
    # share the generic kernel (k run-time: scalar, correct for every size)
    monkeypatch.setattr(window_cap, "MAX_WINDOW_SIZES", 1)
    dyn = hybrid(depthwise_shape_k, dynamic_shape=True)
    runs = [((3, 20, 19), 3, "StencilKernel"), ((2, 17, 21), 5, "ScalarKernel"),
            ((1, 9, 9), 2, "ScalarKernel"), ((2, 11, 30), 3, "StencilKernel")]
    with pytest.warns(WindowSizeCapWarning, match="more than 1 window sizes"):
        for shape, k, kind in runs:
            kern = check(dyn, _f32(*shape), _f32(shape[0], k, k))
            kinds = {x.name: type(x).__name__ for x in kern.ascend.kernels}
            assert [kinds[n] for n, _ in kern.last_kernels] == [kind], (shape, k)
    assert len(dyn.specializations) == 2, dyn.specializations


@pytest.mark.parametrize("wt_shape", [(3, 2, 3), (3, 3, 2), (2, 3, 3)])
def test_bounds_checked_dynamic_depthwise_raises_numpys_index_error(wt_shape):
    # the checks fail: the host runs the unchanged (checked) nest, which raises at the
    # first failing access with the interpreter's message; larger weights are in bounds
    dyn = hybrid(depthwise_k, dynamic_shape=True)
    interp = hybrid(depthwise_k, dynamic_shape=True, target="interpret")
    x = _f32(3, 11, 13)
    wt = _f32(*wt_shape)
    want = _raised(interp, x, wt, 3)
    kern = kernel(dyn, x, wt, 3)
    got = _raised(lambda *a: dyn.run_with(lambda program: kern, *a), x, wt, 3)
    assert str(want) in str(got), (str(want), str(got))
    kinds = {x.name: type(x).__name__ for x in kern.ascend.kernels}
    assert [kinds[n] for n, _ in kern.last_kernels] == ["ScalarKernel"]
    wider = _f32(4, 4, 5)  # wt larger than the kernel reads: in bounds, the stencil
    kern = check(dyn, x, wider, 3)
    assert [kinds[n] for n, _ in kern.last_kernels] == ["StencilKernel"]
    # checks that fail but never run (no output rows): no error, as in numpy
    check(dyn, _f32(3, 2, 13), wt, 3)
