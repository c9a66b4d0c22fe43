"""Convolutions written with loops run on the cube (``loop_conv``, ``loop_conv_nest``):
the forms users write (scalar loops, window slices, a batch loop, a stride, bias and
ReLU), float16 and float32, against a float64 numpy reference and ``interpret``; the
kernels are the conv kernel of ``pyasc.ops.conv2d`` (im2col in L1, the epilogue in one
conv MIX kernel) with the same counters; a small RGB convolution stays a stencil."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.conv_plan import ConvGeometry
from pyasc.backend.ascendc.loop_conv_cost import cube_estimate_s, stencil_estimate_s
from pyasc.backend.ascendc.soc import get_soc
from pyasc.ops import conv2d

TOL = {np.float16: 2e-3, np.float32: 1e-5}   # as pyasc.ops.conv2d's tests, times scale + 1


def loops(x, w):
    o_, c_, kh, kw = w.shape
    _, h, wd = x.shape
    out = np.empty((o_, h - kh + 1, wd - kw + 1), dtype=x.dtype)
    for o in range(o_):
        for i in range(h - kh + 1):
            for j in range(wd - kw + 1):
                acc = 0.0
                for c in range(c_):
                    for a in range(kh):
                        for b in range(kw):
                            acc += x[c, i + a, j + b] * w[o, c, a, b]
                out[o, i, j] = acc
    return out


def slices(x, w):
    o_ = w.shape[0]
    _, h, wd = x.shape
    out = np.empty((o_, h - 2, wd - 2), dtype=x.dtype)
    for o in range(o_):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])
    return out


def batch_bias_relu(x, w, bias):
    n_, c_, h, wd = x.shape
    o_ = w.shape[0]
    out = np.empty((n_, o_, h - 2, wd - 2), dtype=x.dtype)
    for n in range(n_):
        for o in range(o_):
            for i in range(h - 2):
                for j in range(wd - 2):
                    acc = bias[o]
                    for c in range(c_):
                        for a in range(3):
                            for b in range(3):
                                acc += x[n, c, i + a, j + b] * w[o, c, a, b]
                    out[n, o, i, j] = max(acc, 0)
    return out


def strided(x, w, bias):
    n_, c_, h, wd = x.shape
    o_ = w.shape[0]
    out = np.empty((n_, o_, (h - 3) // 2 + 1, (wd - 3) // 2 + 1), dtype=x.dtype)
    for n in range(n_):
        for o in range(o_):
            for i in range((h - 3) // 2 + 1):
                for j in range((wd - 3) // 2 + 1):
                    acc = 0.0
                    for c in range(c_):
                        for a in range(3):
                            for b in range(3):
                                acc += x[n, c, 2 * i + a, 2 * j + b] * w[o, c, a, b]
                    out[n, o, i, j] = np.maximum(acc + bias[o], 0)
    return out


def swapped_taps(x, w):
    # w read as w[o, c, b, a]: a valid sum, but not the im2col of w's layout
    o_, c_, kh, kw = w.shape
    _, h, wd = x.shape
    out = np.empty((o_, h - 2, wd - 2), dtype=x.dtype)
    for o in range(o_):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for c in range(c_):
                    for a in range(3):
                        for b in range(3):
                            acc += x[c, i + a, j + b] * w[o, c, b, a]
                out[o, i, j] = acc
    return out


def _reference(x, w, bias=None, stride=1, relu=False):
    """float64 conv2d (valid), and the same of |x|, |w| (the rounding scale)."""
    def conv(x, w):
        x4 = x if x.ndim == 4 else x[None]
        o, c, kh, kw = w.shape
        win = np.lib.stride_tricks.sliding_window_view(x4, (kh, kw), axis=(2, 3))
        win = win[:, :, ::stride, ::stride]
        y = np.einsum("nchwab,ocab->nohw", win, w)
        return y if x.ndim == 4 else y[0]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    y, scale = conv(x64, w64), conv(np.abs(x64), np.abs(w64))
    if bias is not None:
        b = bias.astype(np.float64).reshape(-1, 1, 1)
        y, scale = y + b, scale + np.abs(b)
    return (np.maximum(y, 0) if relu else y), scale


def _inputs(xs, ws, dtype, seed=0):
    rng = np.random.default_rng(seed + sum(xs) * 7 + sum(ws))
    return (rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype),
            rng.standard_normal(ws[0]).astype(dtype))


def _check(fn, args, ref, kinds):
    sim = hybrid(fn, target="ascend-sim")
    got = sim(*args)
    want, scale = ref
    dtype = args[0].dtype.type
    assert got.shape == want.shape and got.dtype == args[0].dtype
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))
    kernel = sim.kernel(*args)
    assert [type(k).__name__ for k in kernel.ascend.kernels] == kinds  # no scalar kernel
    return got, kernel


# 64 channels x 3 x 3: more taps than batch-loops unrolls (a scalar kernel before)
BIG = ((1, 64, 9, 11), (16, 64, 3, 3))
NCHW = ((2, 64, 9, 8), (16, 64, 3, 3))
CONV = ["ConvKernel"] + ["TransposeKernel"] * 3       # x, w to NHWC; y back to NCHW
MIX = ["ConvMixKernel"] + ["TransposeKernel"] * 2     # the epilogue writes NCHW


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("fn", [loops, slices], ids=lambda f: f.__name__)
def test_one_image_loop_conv_is_the_conv_kernel(fn, dtype):
    x, w, _ = _inputs(BIG[0][1:], BIG[1], dtype)
    got, _ = _check(fn, (x, w), _reference(x, w), CONV)
    if dtype == np.float32:  # the cube's order of a float32 sum: equal within 1e-5
        want = hybrid(fn, target="interpret")(x, w)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("images", [2, 1])  # one image: the frontend drops the n loop
def test_batch_bias_relu_is_one_conv_mix_kernel(images, dtype):
    x, w, b = _inputs(((images, *NCHW[0][1:])), NCHW[1], dtype)
    _check(batch_bias_relu, (x, w, b), _reference(x, w, b, relu=True), MIX)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_stride_two_odd_sizes(dtype):
    # a strided window is no batched window: a scalar kernel before, at any channel count
    x, w, b = _inputs((2, 8, 11, 13), (16, 8, 3, 3), dtype)
    got, _ = _check(strided, (x, w, b), _reference(x, w, b, stride=2, relu=True), MIX)
    if dtype == np.float32:
        want = hybrid(strided, target="interpret")(x, w, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_counters_equal_ops_conv2d():
    """The loop form moves and computes what ``pyasc.ops.conv2d`` does (same kernels)."""
    x, w, b = _inputs(*NCHW, np.float32)
    _, loop_kernel = _check(batch_bias_relu, (x, w, b),
                            _reference(x, w, b, relu=True), MIX)

    def ops_form(x, w, b):
        return np.maximum(conv2d(x, w, b), 0)

    ops = hybrid(ops_form, target="ascend-sim")
    ops(x, w, b)
    a, c = loop_kernel.last_counters, ops.kernel(x, w, b).last_counters
    for name in ("gm_to_l1_bytes", "l0c_to_gm_bytes", "cube_macs", "gm_to_ub_bytes",
                 "ub_to_gm_bytes"):
        assert a[name] == c[name], name
    assert a["cube_macs"] == x.shape[0] * w.size * 7 * 6


def test_batched_stencil_conv_takes_the_cube_when_it_pays():
    # 32 channels: batch-loops batches it (a stencil), and the estimate picks the cube
    x, w, b = _inputs((1, 32, 42, 42), (64, 32, 3, 3), np.float32)
    _check(batch_bias_relu, (x, w, b), _reference(x, w, b, relu=True), MIX)


def test_small_rgb_conv_stays_a_stencil():
    x, w, b = _inputs((1, 3, 16, 18), (16, 3, 3, 3), np.float32)
    _, kernel = _check(batch_bias_relu, (x, w, b), _reference(x, w, b, relu=True),
                       ["StencilKernel"])
    assert kernel.last_counters["cube_macs"] == 0


def test_estimates_pick_the_route():
    soc = get_soc("Ascend910B1")
    resnet = ConvGeometry(1, 64, 58, 58, 64, 3, 3, dtype="f32")
    rgb = ConvGeometry(1, 3, 32, 32, 16, 3, 3, dtype="f32")
    assert cube_estimate_s(resnet, soc) * 3 < stencil_estimate_s(resnet, soc)
    assert stencil_estimate_s(rgb, soc) < cube_estimate_s(rgb, soc)


def test_swapped_taps_are_not_a_conv():
    x, w, _ = _inputs((64, 5, 5), (4, 64, 3, 3), np.float32)
    sim = hybrid(swapped_taps, target="ascend-sim")
    want = _reference(x, w.transpose(0, 1, 3, 2))[0]
    np.testing.assert_allclose(sim(x, w), want, rtol=1e-4, atol=1e-3)
    kinds = [type(k).__name__ for k in sim.kernel(x, w).ascend.kernels]
    assert "ConvKernel" not in kinds and "CubeKernel" not in kinds


def test_sum_lanes_false_keeps_the_loop_order(monkeypatch):
    x, w, _ = _inputs((64, 9, 11), (16, 64, 3, 3), np.float32)
    kept = hybrid(loops, target="ascend-sim", sum_lanes=False)
    assert "ConvKernel" not in [type(k).__name__ for k in kept.kernel(x, w).ascend.kernels]
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "loop-conv-cube")
    off = hybrid(loops, target="ascend-sim")
    assert "ConvKernel" not in [type(k).__name__ for k in off.kernel(x, w).ascend.kernels]
