"""Convolutions written with window slices (numpy style) run as stencil kernels.

``out[c, i, j] = np.sum(x[c, i:i+3, j:j+3] * w[c])`` (depthwise) and
``out[o, i, j] = np.sum(x[:, i:i+3, j:j+3] * w[o])`` (multi-channel) have windows that
drop an axis indexed by a loop (``x[c, ...]``), span a whole static axis (``x[:, ...]``)
or move along size-one axes only (``w[o]``): ``batch_windows`` expands them into their
elements, and the batched nest is a stencil kernel (no scalar loop over pixels, GM
traffic within 1.2x the minimum), equal to numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(2026)


def _f32(*shape):
    return RNG.random(shape).astype(np.float32)


def depthwise_slices(x, w):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3] * w[ch])
    return out


def _minimum(args, got) -> int:
    return sum(a.nbytes for a in args) + np.asarray(got).nbytes


def _launched(k) -> list[str]:
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _assert_stencil(k, fn, args, launches: int = 1) -> None:
    assert _launched(k) == ["StencilKernel"] * launches
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0  # no scalar loop
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
    want = _minimum(args, fn(*args))
    assert gm <= 1.2 * want, (gm, want)


@pytest.mark.parametrize("shape", [(5, 23, 37), (3, 61, 45), (1, 7, 9)])
def test_depthwise_window_slices_are_a_stencil_kernel(shape):
    args = (_f32(*shape), _f32(shape[0], 3, 3))
    _assert_stencil(check(hybrid(depthwise_slices), *args), depthwise_slices, args)


def conv_slices(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])
    return out


def conv_loops(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = np.float32(0)
                for ch in range(c):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = acc
    return out


# (8, 30, 64) x 16: 72 per-plane weights, one UB buffer (as 72 TPipe buffers the group
# was split in two kernels, the second reading x once per output plane)
CONV = [((3, 13, 17), 4), ((2, 40, 33), 5), ((4, 9, 70), 3), ((1, 21, 19), 2),
        ((8, 30, 64), 16)]


@pytest.mark.parametrize("fn", [conv_slices, conv_loops], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape,outs", CONV, ids=[f"{s}x{o}" for s, o in CONV])
def test_multichannel_conv_is_one_stencil_kernel(fn, shape, outs):
    # the windows x[c, i+a, j+b] are fixed planes of x: a unit copies its rows of every
    # channel once and computes every output plane from them (x read once, not per o)
    args = (_f32(*shape), _f32(outs, shape[0], 3, 3))
    _assert_stencil(check(hybrid(fn), *args), fn, args)


# ---- run-time shapes (``dynamic_shape=True``) ------------------------------------------

def test_dynamic_depthwise_window_slices_one_kernel_for_every_shape():
    # w[c] has w's run-time sizes: batch-loops versions the nest on w.shape[1:] == (3, 3)
    # (the host picks the branch) and batches the fast copy into the stencil kernel
    dyn = hybrid(depthwise_slices, dynamic_shape=True)
    for shape in [(5, 23, 37), (3, 61, 45), (7, 9, 300), (1, 40, 33), (2, 3, 5)]:
        args = (_f32(*shape), _f32(shape[0], 3, 3))
        k = check(dyn, *args)
        if shape[1] == 3:  # one output row
            assert _launched(k) == ["StencilKernel"]
            continue
        _assert_stencil(k, depthwise_slices, args)
    assert len(dyn.specializations) == 1


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_dynamic_depthwise_window_slices_other_weight_shapes_keep_numpys_rules():
    # w of (C, 1, 1) broadcasts against the window (numpy's rule): the unchanged nest
    # runs it (a scalar kernel); a (C, 2, 2) w raises numpy's broadcasting ValueError
    dyn = hybrid(depthwise_slices, dynamic_shape=True)
    x = _f32(3, 11, 13)
    k = check(dyn, x, _f32(3, 1, 1))
    assert _launched(k) == ["ScalarKernel"]
    interp = hybrid(depthwise_slices, dynamic_shape=True, target="interpret")
    for target in (interp, hybrid(depthwise_slices, dynamic_shape=True, target="ascend-sim")):
        with pytest.raises(ValueError, match="broadcast"):
            target(x, _f32(3, 2, 2))


def conv_batch_slices(x, w):
    n, c, h, wd = x.shape
    out = np.zeros((n, w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for b in range(n):
        for o in range(w.shape[0]):
            for i in range(h - 2):
                for j in range(wd - 2):
                    out[b, o, i, j] = np.sum(x[b, :, i:i + 3, j:j + 3] * w[o])
    return out


@pytest.mark.parametrize("shape,outs", [((2, 3, 13, 17), 4), ((3, 2, 30, 41), 5),
                                        ((1, 4, 9, 20), 3)])
def test_batched_multichannel_conv_is_one_stencil_kernel(shape, outs):
    # a (N, O, rows, cols) space: a unit is (image, row tile), its channels' rows copied
    # once, every output plane of that image computed from them
    args = (_f32(*shape), _f32(outs, shape[1], 3, 3))
    _assert_stencil(check(hybrid(conv_batch_slices), *args), conv_batch_slices, args)


def pair_dots(a, b):
    out = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            out[i, j] = np.sum(a[i] * b[j])
    return out


def pair_max(a, b):
    out = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            out[i, j] = np.max(np.abs(a[i] - b[j])) + a[i, 0] * b[j, 2]
    return out


def column_windows(a):
    out = np.zeros((a.shape[0] - 2, a.shape[1]), np.float32)
    for i in range(a.shape[0] - 2):
        for j in range(a.shape[1]):
            out[i, j] = np.sum(a[i:i + 3, j] * 2.0)
    return out


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fn,shapes", [(pair_dots, [(5, 4), (7, 4)]),
                                       (pair_max, [(6, 3), (9, 3)]),
                                       (column_windows, [(8, 11)])])
def test_small_static_rows_in_two_loop_nests_keep_their_values(fn, shapes, dynamic):
    # nests of two loops whose bodies take small static row views (a[i], b[j]) or
    # column windows now expand into per-element vector work: results as numpy's
    args = tuple(_f32(*s) for s in shapes)
    check(hybrid(fn, dynamic_shape=dynamic), *args)


# ---- multi-channel convolutions with run-time shapes ------------------------------------

def conv_rgb(x, w):
    # a literal channel count (an RGB image): the taps unroll, every extent is run-time
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for ch in range(3):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = acc
    return out


def conv_rgb_batch(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 2, x.shape[3] - 2), dtype=x.dtype)
    for b in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 2):
                for j in range(x.shape[3] - 2):
                    acc = np.float32(0)
                    for ch in range(3):
                        for di in range(3):
                            for dj in range(3):
                                acc += x[b, ch, i + di, j + dj] * w[o, ch, di, dj]
                    out[b, o, i, j] = acc
    return out


RGB = [((3, 7, 17), 4), ((3, 33, 7), 1), ((3, 17, 33), 4), ((3, 7, 7), 1), ((3, 41, 67), 4)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("batch", [0, 1, 2])
@pytest.mark.parametrize("boundscheck", [False, True])
def test_dynamic_multichannel_conv_of_a_literal_channel_count(dtype, batch, boundscheck):
    # the output planes (and images) are a run-time count the windows x[ch, i+a, j+b]
    # are broadcast over (taken from the broadcast); a batch loop around the conv is a
    # (N, O, rows, cols) space of run-time extents: one stencil kernel for every shape
    fn = conv_rgb_batch if batch else conv_rgb
    dyn = hybrid(fn, dynamic_shape=True, boundscheck=boundscheck)
    interp = hybrid(fn, dynamic_shape=True, boundscheck=boundscheck, target="interpret")
    for shape, outs in RGB:
        x = _f32(*((batch, *shape) if batch else shape)).astype(dtype)
        args = (x, _f32(outs, 3, 3, 3).astype(dtype))
        k = check(dyn, *args, rtol=1e-5 if dtype == np.float32 else 1e-3)
        assert _launched(k) == ["StencilKernel"]
        if shape[1] > 40:  # (small images: a tile's halo rows and weights weigh more)
            _assert_stencil(k, fn, args)
        if dtype == np.float32:  # the program's order (channel, row, column): exact
            np.testing.assert_array_equal(run_sim(dyn, *args)[0], interp(*args))
    assert len(dyn.specializations) == 1


RUN_TIME_C = [((1, 7, 17), 4), ((3, 17, 7), 1), ((5, 9, 33), 4)]


@pytest.mark.parametrize("fn", [conv_slices, conv_loops, conv_batch_slices],
                         ids=lambda f: f.__name__)
def test_dynamic_multichannel_conv_of_a_run_time_channel_count_is_exact(fn):
    # the channel count is a run-time loop bound (or the whole axis of x[:, i:i+3,
    # j:j+3]): one compiled function for every C, results as interpret's
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    for shape, outs in RUN_TIME_C:
        x = _f32(*((2, *shape) if fn is conv_batch_slices else shape))
        args = (x, _f32(outs, shape[0], 3, 3))
        check(dyn, *args)
        if fn is conv_loops:  # (np.sum of a window is numpy's pairwise sum: rounding)
            np.testing.assert_array_equal(run_sim(dyn, *args)[0], interp(*args))
    assert len(dyn.specializations) == 1


def test_dynamic_multichannel_conv_loops_of_a_run_time_channel_count_is_a_stencil_kernel():
    # channel-interchange moves `for ch in range(c)` out of the nest; the loop is one
    # stencil kernel walking the channels (lower_channels)
    dyn = hybrid(conv_loops, dynamic_shape=True)
    shape, outs = (3, 41, 67), 4
    args = (_f32(*shape), _f32(outs, shape[0], 3, 3))
    _assert_stencil(check(dyn, *args), conv_loops, args)


@pytest.mark.parametrize("fn", [conv_slices, conv_batch_slices], ids=lambda f: f.__name__)
def test_dynamic_multichannel_conv_of_a_run_time_channel_count_is_a_stencil_kernel(fn):
    dyn = hybrid(fn, dynamic_shape=True)
    shape, outs = (3, 41, 67), 4
    x = _f32(*((2, *shape) if fn is conv_batch_slices else shape))
    args = (x, _f32(outs, shape[0], 3, 3))
    _assert_stencil(check(dyn, *args), fn, args)
