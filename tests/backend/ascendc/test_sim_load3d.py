"""ascend-sim's LoadData 3D v2 (img2col) model against a numpy im2col: into L0A (the
forward convolution's A), into L0B (the weight-gradient product's B), L0A transposed; odd
channel counts, stride, dilation, asymmetric padding, partial M/K windows, fp16 and fp32;
and each rule of the instruction firing at the offending line."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library, marked_line

from pyasc.backend.ascendc.sim import SimViolationError

FILE = "sim_load3d.cpp"
# (C, H, W, fh, fw, (sh, sw), (dh, dw), (left, right, top, bottom))
GEOMETRIES = [
    (3, 17, 19, 3, 3, (2, 2), (2, 2), (1, 1, 1, 1)),
    (8, 10, 12, 3, 3, (1, 1), (1, 1), (0, 0, 0, 0)),
    (17, 7, 9, 3, 2, (1, 2), (2, 1), (0, 1, 2, 0)),
]
DTYPES = {"f16": np.float16, "f32": np.float32}


def _out_hw(g) -> tuple[int, int]:
    c, h, w, fh, fw, (sh, sw), (dh, dw), (pl, pr, pt, pb) = g
    return (h + pt + pb - (fh - 1) * dh - 1) // sh + 1, (w + pl + pr - (fw - 1) * dw - 1) // sw + 1


def _im2col(x: np.ndarray, g, c0: int) -> np.ndarray:
    """(OH*OW, C1*fh*fw*C0) columns of x (C, H, W): K = (c1, kh, kw, c0), channels padded with 0."""
    c, h, w, fh, fw, (sh, sw), (dh, dw), (pl, pr, pt, pb) = g
    c1 = -(-c // c0)
    oh, ow = _out_hw(g)
    xp = np.zeros((c1 * c0, h + pt + pb, w + pl + pr), np.float64)
    xp[:c, pt:pt + h, pl:pl + w] = x
    cols = np.zeros((oh * ow, c1, fh, fw, c0))
    for i in range(fh):
        for j in range(fw):
            patch = xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            cols[:, :, i, j, :] = patch.reshape(c1, c0, oh * ow).transpose(2, 0, 1)
    return cols.reshape(oh * ow, -1)


def _direct_conv(x: np.ndarray, w: np.ndarray, g) -> np.ndarray:
    """(O, OH, OW) by the definition, to check _im2col itself."""
    c, h, wd, fh, fw, (sh, sw), (dh, dw), (pl, pr, pt, pb) = g
    oh, ow = _out_hw(g)
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr)))
    out = np.zeros((w.shape[0], oh, ow))
    for i in range(fh):
        for j in range(fw):
            win = xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            out += np.einsum("oc,cyx->oyx", w[:, :, i, j].astype(np.float64), win)
    return out


def _windows(g, c0: int) -> list[tuple[int, int, int, int]]:
    """The whole matrix, and a window starting at pixel 16 and at the second K block."""
    c, _, _, fh, fw = g[:5]
    oh, ow = _out_hw(g)
    pixels, ktotal = oh * ow, -(-c // c0) * c0 * fh * fw
    rest = pixels - 16
    return [(0, pixels, 0, ktotal), (16, 32 if rest > 32 else rest, c0, ktotal - c0)]


def _args(g, window, other: int) -> list[int]:
    c, h, w, fh, fw, (sh, sw), (dh, dw), pads = g
    return [h, w, c, fh, fw, sh, sw, dh, dw, *pads, *window, other]


def _inputs(g, dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(g[:3]).astype(dtype)
    return x, np.ascontiguousarray(x.transpose(1, 2, 0))


@pytest.mark.parametrize("name", sorted(DTYPES))
@pytest.mark.parametrize("g", GEOMETRIES)
def test_img2col_into_l0a_is_the_forward_convolution(name, g):
    dtype = DTYPES[name]
    c0 = 32 // np.dtype(dtype).itemsize
    x, nhwc = _inputs(g, dtype, sum(g[:5]))
    o = 5
    w = np.random.default_rng(1).standard_normal((o, g[0], g[3], g[4])).astype(dtype)
    c1 = -(-g[0] // c0)
    wr = np.zeros((o, c1 * c0, g[3], g[4]), dtype)
    wr[:, :g[0]] = w
    wt = np.ascontiguousarray(wr.reshape(o, c1, c0, g[3], g[4]).transpose(0, 1, 3, 4, 2).reshape(o, -1))
    cols = _im2col(x, g, c0)
    for window in _windows(g, c0):
        m0, m, k0, k = window
        y = np.zeros((m, o), np.float32)
        counters = library(FILE).launch(f"conv_a_{name}", 1, nhwc, wt, y, *_args(g, window, o), wt.shape[1])
        want = cols[m0:m0 + m, k0:k0 + k] @ wt[:, k0:k0 + k].T.astype(np.float64)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        assert counters["l1_to_l0a_bytes"] == -(-m // 16) * 16 * k * np.dtype(dtype).itemsize
    oh, ow = _out_hw(g)
    full = cols @ wt.T.astype(np.float64)
    np.testing.assert_allclose(full.T.reshape(o, oh, ow), _direct_conv(x, w, g), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", sorted(DTYPES))
@pytest.mark.parametrize("g", GEOMETRIES)
def test_img2col_into_l0b_is_the_columns_as_b(name, g):
    """L0B is always 'transposed': B = cols (K_mmad = pixels), so C = A @ cols."""
    dtype = DTYPES[name]
    c0 = 32 // np.dtype(dtype).itemsize
    x, nhwc = _inputs(g, dtype, 7 + sum(g[:5]))
    cols = _im2col(x, g, c0)
    for window in _windows(g, c0):
        m0, m, k0, k = window
        a = np.random.default_rng(m).standard_normal((20, m)).astype(dtype)
        y = np.zeros((20, k), np.float32)
        library(FILE).launch(f"conv_b_{name}", 1, nhwc, a, y, *_args(g, window, 20))
        want = a.astype(np.float64) @ cols[m0:m0 + m, k0:k0 + k]
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("g", GEOMETRIES)
def test_img2col_into_l0a_transposed_b16(g):
    x, nhwc = _inputs(g, np.float16, 3 + sum(g[:5]))
    cols = _im2col(x, g, 16)
    for window in _windows(g, 16):
        m0, m, k0, k = window
        bt = np.random.default_rng(k).standard_normal((12, m)).astype(np.float16)
        y = np.zeros((k, 12), np.float32)
        library(FILE).launch("conv_t_f16", 1, nhwc, bt, y, *_args(g, window, 12))
        want = cols[m0:m0 + m, k0:k0 + k].T @ bt.T.astype(np.float64)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


# kernel -> words of the explanation (the API is LoadData(3D) in each)
CASES = {
    "l3d_no_mte2_mte1": "SetFlag/WaitFlag<HardEvent::MTE2_MTE1>",
    "l3d_channel_size": "channelSize 12 is not an allowed value",
    "l3d_partial_c0": "not a multiple of C0 = 16",
    "l3d_past_last_pixel": "passes the 4 x 4 = 16 output pixels",
    "l3d_no_fmatrix": "never set (call SetFmatrix)",
    "l3d_k_start": "kStartPt 8 is not a multiple of C0",
    "l3d_b8_to_l0b": "does not support b8",
    "l3d_l0a_overflow": "beyond its tensor",
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_load3d_violation_names_api_and_line(kernel):
    x = np.zeros(256, np.float16)
    with pytest.raises(SimViolationError) as err:
        library(FILE).launch(kernel, 1, x)
    line = marked_line(FILE, f"// VIOLATION: {kernel}")
    assert (err.value.api, err.value.line) == ("LoadData(3D)", line), str(err.value)
    assert CASES[kernel] in err.value.detail, err.value.detail
