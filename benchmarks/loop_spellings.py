"""Issue 19 audit: many user spellings of the same loops, on ascend-sim.

For each spelling (per-row softmax/layernorm/rmsnorm/log_softmax, blurs, gaussian,
pooling, adaptive pooling, depthwise and direct convolution, the seed's bilateral filter
and variations) and each configuration (static / ``dynamic_shape=True``, float32 /
float16) prints the kernels launched (V vector, T stencil, P pool, S scalar, C cube),
GM bytes against the minimum, scalar GM accesses, and whether the result equals
``target="interpret"``; or the error raised.

    PYASC_SIM_OPT=-O0 python benchmarks/loop_spellings.py [--only NAME,...] [--part K/N]
"""

from __future__ import annotations

import sys
import traceback
import warnings

import numpy as np
from pyasc import hybrid

KINDS = {"VectorKernel": "V", "ScalarKernel": "S", "StencilKernel": "T", "CubeKernel": "C",
         "PoolKernel": "P"}

# ---- (a) per-row loops -------------------------------------------------------------


def sm_range(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out


def sm_row_var(x):
    n = x.shape[0]
    out = np.empty_like(x)
    for i in range(n):
        row = x[i]
        e = np.exp(row - np.max(row))
        out[i] = e / np.sum(e)
    return out


def sm_enumerate(x):
    out = np.empty_like(x)
    for i, row in enumerate(x):
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out


def sm_colon(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i, :] - np.amax(x[i, :]))
        out[i, :] = e / np.sum(e)
    return out


def sm_while(x):
    out = np.empty_like(x)
    i = 0
    while i < x.shape[0]:
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
        i += 1
    return out


def sm_keepdims(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i:i + 1]
        e = np.exp(row - row.max(axis=1, keepdims=True))
        out[i:i + 1] = e / e.sum(axis=1, keepdims=True)
    return out


def sm_zeros_out(x):
    out = np.zeros(x.shape, dtype=x.dtype)
    for i in range(x.shape[0]):
        m = np.max(x[i], axis=0)
        e = np.exp(x[i] - m)
        out[i] = e * (1.0 / np.sum(e, axis=-1))
    return out


def logsm_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i]
        s = row - row.max()
        out[i] = s - np.log(np.sum(np.exp(s)))
    return out


def ln_var(x, g, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i]
        mu = row.mean()
        var = row.var()
        out[i] = (row - mu) / np.sqrt(var + 1e-5) * g + b
    return out


def ln_rsqrt(x, g, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        d = x[i] - np.mean(x[i])
        inv = 1 / np.sqrt(np.mean(d * d) + 1e-5)
        out[i] = d * inv * g + b
    return out


def ln_no_affine(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i, :]
        d = row - row.mean()
        out[i, :] = d / np.sqrt((d ** 2).mean() + 1e-5)
    return out


def rms_rows(x, g):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i]
        out[i] = row / np.sqrt(np.mean(row * row) + 1e-6) * g
    return out


def rms_rsqrt(x, g):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        r = 1.0 / np.sqrt(np.sum(x[i] ** 2) / x.shape[1] + 1e-6)
        out[i] = x[i] * r * g
    return out


def two_outputs(x):
    out = np.empty_like(x)
    mx = np.empty(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        m = x[i].max()
        mx[i] = m
        out[i] = x[i] - m
    return out, mx


def sm_batch(x):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            e = np.exp(x[b, i] - x[b, i].max())
            out[b, i] = e / e.sum()
    return out


def ln_batch_two(x):
    out = np.empty_like(x)
    mu = np.empty(x.shape[:2], dtype=x.dtype)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            m = x[b, i].mean()
            mu[b, i] = m
            d = x[b, i] - m
            out[b, i] = d / np.sqrt((d * d).mean() + 1e-5)
    return out, mu

# ---- (b) windows ------------------------------------------------------------------


def blur_shift9(x):
    return (x[:-2, :-2] + x[:-2, 1:-1] + x[:-2, 2:]
            + x[1:-1, :-2] + x[1:-1, 1:-1] + x[1:-1, 2:]
            + x[2:, :-2] + x[2:, 1:-1] + x[2:, 2:]) / 9


def blur_mean_win(x):
    h, w = x.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            out[i, j] = x[i:i + 3, j:j + 3].mean()
    return out


def blur_npmean_centered(x):
    h, w = x.shape
    out = np.zeros_like(x)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            out[i, j] = np.mean(x[i - 1:i + 2, j - 1:j + 2])
    return out


def blur_sum9(x):
    h, w = x.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            out[i, j] = x[i:i + 3, j:j + 3].sum() / 9
    return out


def blur_while(x):
    h, w = x.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    i = 0
    while i < h - 2:
        for j in range(w - 2):
            out[i, j] = np.sum(x[i:i + 3, j:j + 3]) / 9
        i += 1
    return out


def blur_batch(x):
    n, h, w = x.shape
    out = np.zeros((n, h - 2, w - 2), dtype=x.dtype)
    for b in range(n):
        for i in range(h - 2):
            for j in range(w - 2):
                out[b, i, j] = x[b, i:i + 3, j:j + 3].mean()
    return out


def gauss5_arr(x, k):
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            out[i, j] = np.sum(x[i:i + 5, j:j + 5] * k)
    return out


def gauss5_lit(x):
    k = np.array([[1, 4, 6, 4, 1], [4, 16, 24, 16, 4], [6, 24, 36, 24, 6],
                  [4, 16, 24, 16, 4], [1, 4, 6, 4, 1]], dtype=np.float32) / 256
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            out[i, j] = np.sum(x[i:i + 5, j:j + 5] * k)
    return out


def gauss5_loops(x, k):
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            acc = 0.0
            for a in range(5):
                for b in range(5):
                    acc += x[i + a, j + b] * k[a, b]
            out[i, j] = acc
    return out


def gauss5_outer(x):
    g = np.array([1.0, 4.0, 6.0, 4.0, 1.0], dtype=np.float32) / 16
    k = np.outer(g, g)
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            out[i, j] = (x[i:i + 5, j:j + 5] * k).sum()
    return out

# ---- pooling -----------------------------------------------------------------------


def maxpool_win(x):
    h, w = x.shape
    out = np.zeros((h // 2, w // 2), dtype=x.dtype)
    for i in range(h // 2):
        for j in range(w // 2):
            out[i, j] = x[2 * i:2 * i + 2, 2 * j:2 * j + 2].max()
    return out


def maxpool_npmax(x):
    c, h, w = x.shape
    out = np.zeros((c, h // 2, w // 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h // 2):
            for j in range(w // 2):
                out[ch, i, j] = np.max(x[ch, 2 * i:2 * i + 2, 2 * j:2 * j + 2])
    return out


def avgpool_win(x):
    h, w = x.shape
    out = np.zeros((h // 2, w // 2), dtype=x.dtype)
    for i in range(h // 2):
        for j in range(w // 2):
            out[i, j] = x[2 * i:2 * i + 2, 2 * j:2 * j + 2].mean()
    return out


def maxpool_reshape(x):
    h, w = x.shape
    return x.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3))


def maxpool_s2k3(x):
    h, w = x.shape
    oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
    out = np.empty((oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[i, j] = np.amax(x[2 * i:2 * i + 3, 2 * j:2 * j + 3])
    return out


def maxpool_leading(x):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (h // 2, w // 2), dtype=x.dtype)
    for i in range(h // 2):
        for j in range(w // 2):
            out[..., i, j] = x[..., 2 * i:2 * i + 2, 2 * j:2 * j + 2].max(axis=(-2, -1))
    return out


def adapt_avg(x):
    oh, ow = 5, 4
    c, h, w = x.shape
    out = np.zeros((c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        s = (i * h) // oh
        e = ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            t = (j * w) // ow
            f = ((j + 1) * w + ow - 1) // ow
            out[:, i, j] = x[:, s:e, t:f].mean(axis=(1, 2))
    return out


def adapt_max(x):
    oh, ow = 5, 4
    c, h, w = x.shape
    out = np.zeros((c, oh, ow), dtype=x.dtype)
    for ch in range(c):
        for i in range(oh):
            for j in range(ow):
                s = (i * h) // oh
                e = ((i + 1) * h + oh - 1) // oh
                t = (j * w) // ow
                f = ((j + 1) * w + ow - 1) // ow
                out[ch, i, j] = x[ch, s:e, t:f].max()
    return out

# ---- depthwise / direct convolution -----------------------------------------------


def dw_idx(x, w):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for a in range(3):
                    for b in range(3):
                        acc += x[ch, i + a, j + b] * w[ch, a, b]
                out[ch, i, j] = acc
    return out


def dw_chain(x, w):
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


def dw_bias_relu(x, w, bias):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = bias[ch]
                for a in range(3):
                    for b in range(3):
                        acc += x[ch, i + a, j + b] * w[ch, a, b]
                out[ch, i, j] = max(acc, 0.0)
    return out


def dw_slices_bias_relu(x, w, bias):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                v = np.sum(x[ch, i:i + 3, j:j + 3] * w[ch]) + bias[ch]
                out[ch, i, j] = np.maximum(v, 0)
    return out


def dw_batch(x, w):
    n, c, h, wd = x.shape
    out = np.zeros((n, c, h - 2, wd - 2), dtype=x.dtype)
    for b in range(n):
        for ch in range(c):
            for i in range(h - 2):
                for j in range(wd - 2):
                    out[b, ch, i, j] = np.sum(x[b, ch, i:i + 3, j:j + 3] * w[ch])
    return out


def dw_pad_same(x, w):
    c, h, wd = x.shape
    xp = np.zeros((c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, 1:-1, 1:-1] = x
    out = np.zeros_like(x)
    for ch in range(c):
        for i in range(h):
            for j in range(wd):
                out[ch, i, j] = np.sum(xp[ch, i:i + 3, j:j + 3] * w[ch])
    return out


def conv_bias_relu(x, w, bias):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = bias[o]
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = max(acc, 0)
    return out


def conv_slices_relu(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[o, i, j] = max(np.sum(x[:, i:i + 3, j:j + 3] * w[o]), 0)
    return out


def conv_scale_bias(x, w, s, bias):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc * s + bias[o]
    return out


def conv_bias_relu_scale(x, w, bias, scale):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = np.maximum(acc + bias[o], 0) * scale[o]
    return out


def conv_residual(x, w, res):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc + res[o, i, j]
    return out


def conv_gated(x, w, g):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc * g[o, i + 1, j + 1] + g[o, i + 2, j]
    return out


def conv_residual_batch(x, w, res):
    n_, c, h, wd = x.shape
    out = np.zeros((n_, w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for n in range(n_):
        for o in range(w.shape[0]):
            for i in range(h - 2):
                for j in range(wd - 2):
                    acc = 0.0
                    for ch in range(c):
                        for a in range(3):
                            for b in range(3):
                                acc += x[n, ch, i + a, j + b] * w[o, ch, a, b]
                    out[n, o, i, j] = np.maximum(acc + res[n, o, i, j], 0)
    return out

# ---- bilateral ---------------------------------------------------------------------


def bil_seed(img, sigma_space=10, sigma_color=0.1):
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


def bil_f32(img):
    h, w = img.shape
    result = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            wts = space * np.exp(-((win - img[i, j]) ** 2) * np.float32(50))
            result[i, j] = np.sum(win * wts) / np.sum(wts)
    return result


def bil_cauchy(img):
    h, w = img.shape
    result = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            d = win - img[i, j]
            wts = space * (1 / (1 + d * d * np.float32(100)))
            result[i, j] = np.sum(win * wts) / np.sum(wts)
    return result


def bil_norm_inside(img):
    h, w = img.shape
    result = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            wts = space * np.exp(-np.abs(win - img[i, j]) * np.float32(10))
            wts = wts / wts.sum()
            result[i, j] = (win * wts).sum()
    return result


def bil_norm_inplace(img):
    h, w = img.shape
    result = np.zeros_like(img)
    r = np.arange(-2, 3).astype(np.float32)
    space = np.exp(-(r ** 2) / np.float32(8))
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            win = img[i - 2:i + 3, j - 2:j + 3]
            wts = space * np.exp(-np.abs(win - img[i, j]) * np.float32(10))
            wts /= wts.sum()
            result[i, j] = (win * wts).sum()
    return result


def two_win_sums(x):
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / 16
    h, w = x.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            out[i, j] = np.sum(x[i:i + 3, j:j + 3] * k) + (x[i:i + 3, j:j + 3] * k).sum()
    return out


def bil_loops(img):
    h, w = img.shape
    result = np.zeros_like(img)
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            c = img[i, j]
            num = np.float32(0)
            den = np.float32(0)
            for a in range(-2, 3):
                for b in range(-2, 3):
                    v = img[i + a, j + b]
                    wt = np.exp(np.float32(-(a * a + b * b) / 8.0)) * np.exp(-(v - c) ** 2 * 50)
                    num += v * wt
                    den += wt
            result[i, j] = num / den
    return result


def _cases():
    rng = np.random.default_rng(0)

    def r(*s):
        return rng.random(s).astype(np.float32)
    rows = r(16, 200)
    return [
        ("sm_range", sm_range, (rows,)), ("sm_row_var", sm_row_var, (rows,)),
        ("sm_enumerate", sm_enumerate, (rows,)), ("sm_colon", sm_colon, (rows,)),
        ("sm_while", sm_while, (rows,)), ("sm_keepdims", sm_keepdims, (rows,)),
        ("sm_zeros_out", sm_zeros_out, (rows,)), ("logsm_rows", logsm_rows, (rows,)),
        ("ln_var", ln_var, (rows, r(200), r(200))), ("ln_rsqrt", ln_rsqrt, (rows, r(200), r(200))),
        ("ln_no_affine", ln_no_affine, (rows,)), ("rms_rows", rms_rows, (rows, r(200))),
        ("rms_rsqrt", rms_rsqrt, (rows, r(200))), ("two_outputs", two_outputs, (rows,)),
        ("sm_batch", sm_batch, (r(3, 8, 100),)), ("ln_batch_two", ln_batch_two, (r(3, 8, 100),)),
        ("blur_shift9", blur_shift9, (r(40, 70),)), ("blur_mean_win", blur_mean_win, (r(40, 70),)),
        ("blur_npmean_centered", blur_npmean_centered, (r(40, 70),)),
        ("blur_sum9", blur_sum9, (r(40, 70),)), ("blur_while", blur_while, (r(40, 70),)),
        ("blur_batch", blur_batch, (r(3, 20, 37),)),
        ("gauss5_arr", gauss5_arr, (r(40, 70), r(5, 5))), ("gauss5_lit", gauss5_lit, (r(40, 70),)),
        ("gauss5_loops", gauss5_loops, (r(40, 70), r(5, 5))),
        ("gauss5_outer", gauss5_outer, (r(40, 70),)),
        ("maxpool_win", maxpool_win, (r(40, 70),)),
        ("maxpool_npmax", maxpool_npmax, (r(3, 40, 70),)),
        ("avgpool_win", avgpool_win, (r(40, 70),)),
        ("maxpool_reshape", maxpool_reshape, (r(40, 70),)),
        ("maxpool_s2k3", maxpool_s2k3, (r(41, 71),)),
        ("maxpool_leading", maxpool_leading, (r(2, 3, 40, 70),)),
        ("adapt_avg", adapt_avg, (r(3, 23, 37),)), ("adapt_max", adapt_max, (r(3, 23, 37),)),
        ("dw_idx", dw_idx, (r(4, 30, 40), r(4, 3, 3))),
        ("dw_chain", dw_chain, (r(4, 30, 40), r(4, 3, 3))),
        ("dw_bias_relu", dw_bias_relu, (r(4, 30, 40) - 0.5, r(4, 3, 3), r(4) - 0.5)),
        ("dw_slices_bias_relu", dw_slices_bias_relu,
         (r(4, 30, 40) - 0.5, r(4, 3, 3), r(4) - 0.5)),
        ("dw_batch", dw_batch, (r(2, 4, 30, 40), r(4, 3, 3))),
        ("dw_pad_same", dw_pad_same, (r(4, 30, 40), r(4, 3, 3))),
        ("conv_bias_relu", conv_bias_relu, (r(3, 20, 30) - 0.5, r(5, 3, 3, 3), r(5) - 0.5)),
        ("conv_slices_relu", conv_slices_relu, (r(3, 20, 30) - 0.5, r(5, 3, 3, 3))),
        ("bil_seed", bil_seed, (r(40, 70),)), ("bil_f32", bil_f32, (r(40, 70),)),
        ("bil_cauchy", bil_cauchy, (r(40, 70),)),
        ("bil_norm_inside", bil_norm_inside, (r(40, 70),)),
        ("bil_loops", bil_loops, (r(40, 70),)),
        ("bil_norm_inplace", bil_norm_inplace, (r(40, 70),)),
        ("two_win_sums", two_win_sums, (r(40, 70),)),
        ("conv_scale_bias", conv_scale_bias,
         (r(3, 20, 30) - 0.5, r(5, 3, 3, 3), np.array(0.75, np.float32), r(5) - 0.5)),
        ("conv_bias_relu_scale", conv_bias_relu_scale,
         (r(3, 20, 30) - 0.5, r(5, 3, 3, 3), r(5) - 0.5, r(5))),
        ("conv_residual", conv_residual, (r(3, 20, 30) - 0.5, r(5, 3, 3, 3), r(5, 18, 28))),
        ("conv_gated", conv_gated, (r(3, 20, 30) - 0.5, r(5, 3, 3, 3), r(5, 20, 30))),
        ("conv_residual_batch", conv_residual_batch,
         (r(2, 3, 20, 30) - 0.5, r(5, 3, 3, 3), r(2, 5, 18, 28) - 0.5)),
    ]


def _launched(k) -> str:  # noqa: ANN001
    kinds = {x.name: KINDS[type(x).__name__] for x in k.ascend.kernels}
    return "+".join(kinds[name] for name, _ in k.last_kernels)


def _nbytes(v) -> int:  # noqa: ANN001
    if isinstance(v, tuple):
        return sum(_nbytes(x) for x in v)
    return np.asarray(v).nbytes


def _close(got, want, tol: float) -> bool:  # noqa: ANN001
    if isinstance(want, tuple):
        return all(_close(g, w, tol) for g, w in zip(got, want, strict=True))
    g, w = np.asarray(got), np.asarray(want)
    return (g.dtype == w.dtype and g.shape == w.shape
            and np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol))


def measure(fn, args, dynamic: bool, f16: bool) -> str:  # noqa: ANN001
    """One row: kinds, GM ratio, scalar accesses, equality with interpret."""
    if f16:
        args = tuple(a.astype(np.float16) if isinstance(a, np.ndarray) else a for a in args)
    ref = hybrid(fn, target="interpret", dynamic_shape=dynamic)(*[np.copy(a) for a in args])
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=dynamic, device_float64="demote")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sim(*[np.copy(a) for a in args])
        k = sim.kernel(*args)
    c = k.last_counters
    scalar = c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + scalar
    minimum = sum(a.nbytes for a in args if isinstance(a, np.ndarray)) + _nbytes(ref)
    ok = _close(got, ref, 2e-2 if f16 else 1e-4)
    return (f"{_launched(k):10} gm x{gm / minimum:6.2f} scalarB {scalar:8} vec {c['vec_calls']:6}"
            f" {'EQUAL' if ok else 'WRONG'}")


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    part = sys.argv[sys.argv.index("--part") + 1] if "--part" in sys.argv else "0/1"
    k, n = map(int, part.split("/"))
    confs = [(d, h) for d in (False, True) for h in (False, True)]
    if "--conf" in sys.argv:
        sel = sys.argv[sys.argv.index("--conf") + 1].split(",")
        confs = [(d, h) for d, h in confs
                 if f"{'dyn' if d else 'static'}-{'f16' if h else 'f32'}" in sel]
    for idx, (name, fn, args) in enumerate(_cases()):
        if idx % n != k or (only and name not in only):
            continue
        for dynamic, f16 in confs:
            tag = f"{'dyn' if dynamic else 'static'}-{'f16' if f16 else 'f32'}"
            try:
                row = measure(fn, args, dynamic, f16)
            except Exception as e:  # noqa: BLE001 -- the audit records every failure
                last = traceback.extract_tb(e.__traceback__)[-1]
                row = f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:110]} @{last.name}"
            print(f"{name:22} {tag:11} {row}", flush=True)


if __name__ == "__main__":
    main()
