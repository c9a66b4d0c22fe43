"""The conv kernel's padding through ``LoadData`` 3D's padList (``conv_pad``): a
convolution reading a zero-padded copy of its input gets the unpadded input and the pads,
and the host neither fills nor copies the padded array; a padded array that something
else reads or writes, or that holds another value, keeps being read as it is (padList 0).
ascend-sim against interpret in every case."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.conv_plan import conv_l1_counts
from pyasc.ops import conv2d

TOL = {np.float16: 2e-3, np.float32: 1e-5}
try:
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
    TOL[BF16] = 8e-3
except ImportError:  # bfloat16 arrays need ml_dtypes (the "bfloat16" extra)
    BF16 = None


def _im2col_matmul(xp, w, sh, sw, dh, dw):
    """A hand-written im2col of ``xp`` (K ordered (c, kh, kw)) and its matmul."""
    n, c, hp, wp = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=xp.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                  j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return np.matmul(w.reshape(o, c * kh * kw), cols.reshape(n, c * kh * kw, oh * ow))


def _library_pad(x, w):
    return conv2d(x, w, stride=2, padding=1, dilation=2)


def _asymmetric(x, w):
    # top 2, bottom 1, left 0, right 1: zeros, then the input in its window
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 3, wd + 1), dtype=x.dtype)
    xp[:, :, 2:2 + h, 0:wd] = x
    return _im2col_matmul(xp, w, 1, 2, 2, 1)


def _padded_read_again(x, w):
    # the padded array is also summed: it must exist
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, :, 1:1 + h, 1:1 + wd] = x
    return _im2col_matmul(xp, w, 1, 1, 1, 1), xp.sum()


def _ones_padded(x, w):
    # padding with ones is not LoadData 3D's zero padding
    n, c, h, wd = x.shape
    xp = np.ones((n, c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, :, 1:1 + h, 1:1 + wd] = x
    return _im2col_matmul(xp, w, 1, 1, 1, 1)


def _written_twice(x, w):
    # a second write into the padded array after the interior one
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, :, 1:1 + h, 1:1 + wd] = x
    xp[:, :, 0, :] = 2
    return _im2col_matmul(xp, w, 1, 1, 1, 1)


def _wide_pad(x, w):
    # a padding as wide as the filter: the plan refuses it as padList, not as an array
    return conv2d(x, w, padding=3)


def _bf16_relu(x, w):
    # bfloat16 operands, ReLU and the cast back in Fixpipe (F322BF16)
    return np.maximum(conv2d(x, w, stride=(1, 2), padding=(2, 1), dilation=2), 0).astype(x.dtype)


def _check(fn, xs, ws, dtype):
    rng = np.random.default_rng(sum(xs) * 7 + sum(ws))
    args = [rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)]
    sim = hybrid(fn, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(*args)
    ref = hybrid(fn, target="interpret")
    want, scale = ref(*args), ref(*(np.abs(a) for a in args))
    for g, wv, s in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want, scale)),
                        strict=True):
        assert g.shape == wv.shape and g.dtype == wv.dtype
        err = np.abs(g.astype(np.float64) - wv.astype(np.float64))
        assert np.all(err <= TOL[dtype] * (s.astype(np.float64) + 1))
    kernel = sim.kernel(*args)
    (conv,) = [k for k in kernel.ascend.kernels if type(k).__name__ == "ConvKernel"]
    c, counts = kernel.last_counters, conv_l1_counts(conv.plan, args[0].itemsize)
    assert (c["gm_to_l1_bytes"], c["cube_macs"]) == (counts.gm_read, counts.macs)
    return conv, str(kernel.ascend.host), args[0].shape


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("fn", "xs", "ws", "pads"), [
    (_library_pad, (2, 3, 17, 19), (5, 3, 3, 3), (1, 1, 1, 1)),
    (_library_pad, (1, 17, 12, 9), (20, 17, 3, 2), (1, 1, 1, 1)),
    (_asymmetric, (2, 5, 10, 11), (7, 5, 3, 3), (0, 1, 2, 1)),
], ids=lambda v: getattr(v, "__name__", None))
def test_zero_padding_goes_to_padlist(fn, xs, ws, pads, dtype):
    conv, host, shape = _check(fn, xs, ws, dtype)
    geo = conv.plan.geo
    assert (geo.h, geo.w, geo.pads) == (*shape[2:], pads)
    # no padded array is filled or written on the host (nor the column matrix filled)
    assert "mem.fill" not in host and "mem.write" not in host


@pytest.mark.parametrize(("fn", "grow"), [
    (_padded_read_again, 2), (_ones_padded, 2), (_written_twice, 2), (_wide_pad, 6)],
    ids=lambda v: getattr(v, "__name__", None))
def test_other_padded_arrays_are_read_as_they_are(fn, grow):
    conv, _, shape = _check(fn, (2, 3, 7, 8), (4, 3, 3, 3), np.float32)
    geo = conv.plan.geo
    assert (geo.h, geo.w, geo.pads) == (shape[2] + grow, shape[3] + grow, (0, 0, 0, 0))


@pytest.mark.parametrize(("fn", "xs", "ws", "out"), [
    (_library_pad, (2, 17, 13, 11), (20, 17, 3, 3), "f32"),   # float32 result (opmath)
    (_bf16_relu, (2, 17, 13, 11), (20, 17, 3, 3), "bf16"),
    (_bf16_relu, (1, 64, 12, 10), (64, 64, 3, 3), "bf16"),    # weights larger than L0B
], ids=lambda v: getattr(v, "__name__", None))
def test_bfloat16_operands(fn, xs, ws, out):
    """bfloat16 x and w: Mmad bf16 x bf16 -> f32 on the L1 route, Fixpipe to the result."""
    if BF16 is None:
        pytest.skip("bfloat16 arrays need ml_dtypes")
    conv, _, _ = _check(fn, xs, ws, BF16)
    assert conv.plan.geo.dtype == "bf16" and any(conv.plan.geo.pads) and conv.out == out
