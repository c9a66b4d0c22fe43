"""numpy references of the ``pyasc.ops`` operators (PyTorch's semantics), computed in
float64: conv2d as an im2col with ``einsum``, the pools with
``sliding_window_view``, the others by their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

WINDOWS = np.lib.stride_tricks.sliding_window_view


def pair(v):
    return (v, v) if np.ndim(v) == 0 else tuple(v)


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n = xp.shape[0]
    o, cg, kh, kw = w.shape
    win = WINDOWS(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # (n, c, oh, ow, kh, kw): the columns
    oh, ow = win.shape[2:4]
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw)
    wg = w.astype(np.float64).reshape(groups, o // groups, cg, kh, kw)
    y = np.einsum("ngcyxij,gocij->ngoyx", cols, wg).reshape(n, o, oh, ow)
    return y if bias is None else y + bias.reshape(-1, 1, 1)


def _pool_windows(x, kernel, stride, padding, dilation, ceil_mode, value):
    """Windows (..., oh, ow, kh, kw) of ``x`` padded like PyTorch's pools."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    h, w = x.shape[-2:]

    def out(size, k, s, p, d):
        span = size + 2 * p - d * (k - 1) - 1
        o = (span + (s - 1 if ceil_mode else 0)) // s + 1
        return o - 1 if ceil_mode and (o - 1) * s >= size + p else o

    oh, ow = out(h, kh, sh, ph, dh), out(w, kw, sw, pw, dw)
    eh = max((oh - 1) * sh + dh * (kh - 1) + 1 - h - ph, 0)
    ew = max((ow - 1) * sw + dw * (kw - 1) + 1 - w - pw, 0)
    lead = [(0, 0)] * (x.ndim - 2)
    xp = np.pad(x, lead + [(ph, eh), (pw, ew)], constant_values=value)
    win = WINDOWS(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(-2, -1))
    return win[..., ::sh, ::sw, ::dh, ::dw][..., :oh, :ow, :, :], (ph, pw, eh, ew)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = pair(kernel_size)
    s = k if stride is None else pair(stride)
    win, _ = _pool_windows(x.astype(np.float64), k, s, pair(padding), pair(dilation),
                           ceil_mode, -np.inf)
    return win.max(axis=(-2, -1))


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    k = pair(kernel_size)
    s = k if stride is None else pair(stride)
    p = pair(padding)
    win, (ph, pw, eh, ew) = _pool_windows(x.astype(np.float64), k, s, p, (1, 1),
                                          ceil_mode, 0.0)
    total = win.sum(axis=(-2, -1))
    if divisor_override is not None:
        return total / divisor_override
    h, w = x.shape[-2:]
    # PyTorch: the window clipped to [-p, size + p), or to the input without padding
    ones = np.zeros((h + ph + eh, w + pw + ew))
    if count_include_pad:
        ones[:h + 2 * ph, :w + 2 * pw] = 1
    else:
        ones[ph:ph + h, pw:pw + w] = 1
    cwin = WINDOWS(ones, k, axis=(0, 1))[::s[0], ::s[1]][:total.shape[-2], :total.shape[-1]]
    return total / cwin.sum(axis=(-2, -1))


def adaptive_avg_pool2d(x, output_size):
    h, w = x.shape[-2:]
    oh, ow = pair(output_size)
    oh, ow = h if oh is None else oh, w if ow is None else ow
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * h // oh, -(-(i + 1) * h // oh))
            cols = slice(j * w // ow, -(-(j + 1) * w // ow))
            out[..., i, j] = x[..., rows, cols].astype(np.float64).mean(axis=(-2, -1))
    return out


def softmax(x, dim=-1):
    e = np.exp(x.astype(np.float64) - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x, dim=-1):
    s = x.astype(np.float64) - x.max(axis=dim, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=dim, keepdims=True))


def _axes(normalized_shape):
    k = 1 if np.ndim(normalized_shape) == 0 else len(normalized_shape)
    return tuple(range(-k, 0))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    x64, axes = x.astype(np.float64), _axes(normalized_shape)
    y = (x64 - x64.mean(axis=axes, keepdims=True)) / np.sqrt(
        x64.var(axis=axes, keepdims=True) + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def rms_norm(x, normalized_shape, weight=None, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt(np.mean(x64 ** 2, axis=_axes(normalized_shape), keepdims=True) + eps)
    return y if weight is None else y * weight


def gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    return 0.5 * x64 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2)))


def silu(x):
    x64 = x.astype(np.float64)
    return x64 / (1 + np.exp(-x64))


TOL = {np.float16: dict(rtol=2e-3, atol=2e-3), np.float32: dict(rtol=2e-5, atol=2e-5),
       np.float64: dict(rtol=1e-11, atol=1e-11)}


def assert_close(got, want, dtype, scale=1.0):
    """``got`` has ``dtype`` and equals ``want`` within ``dtype``'s tolerance (times
    ``scale``: the number of terms summed into each output, for the long sums)."""
    assert got.dtype == np.dtype(dtype), got.dtype
    assert got.shape == want.shape, (got.shape, want.shape)
    tol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol["rtol"] * scale,
                               atol=tol["atol"] * scale)


def float64_device(monkeypatch, target: str, dtype) -> None:
    """On ascend-sim, float64 cases run on the default SoC as if its table allowed
    float64: no real SoC does (docs/ascendc-backend.md#float64, E50041 otherwise); this
    keeps the double code paths these cases always tested."""
    if target != "ascend-sim" or np.dtype(dtype) != np.float64:
        return
    import dataclasses

    from pyasc.backend.ascendc import soc

    monkeypatch.setitem(soc.SOCS, soc.DEFAULT_SOC,
                        dataclasses.replace(soc.SOCS[soc.DEFAULT_SOC], float64=True))


TARGETS = ["interpret", "cpu", "ascend-sim"]
DTYPES = [np.float16, np.float32, np.float64]


def grid(cases, sim_dtype_cases):
    """``(target, case, dtype)`` parameters: every case in every dtype on each target,
    except that ascend-sim (slow scalar code for these ops) runs float32 only, and every
    dtype only for ``sim_dtype_cases``."""
    for target in TARGETS:
        for case in cases:
            for dtype in DTYPES:
                if target != "ascend-sim" or dtype == np.float32 or case in sim_dtype_cases:
                    yield pytest.param(target, case, dtype,
                                       id=f"{target}-{case}-{np.dtype(dtype).name}")
