"""The formulations of ``formulations.py`` (issue 17): the same computations written the
ordinary ways users write them, as plain numpy-style Python (each is run by numpy,
``@pyasc.hybrid`` and ``numba.njit`` unchanged), plus the C of the tanh column."""

from __future__ import annotations

import numpy as np

import kernels

EPS = 1e-5


def softmax_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def softmax_scalar(x):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        mx = x[i, 0]
        for j in range(1, m):
            if x[i, j] > mx:
                mx = x[i, j]
        s = np.float32(0.0)
        for j in range(m):
            e = np.exp(x[i, j] - mx)
            out[i, j] = e
            s += e
        for j in range(m):
            out[i, j] = out[i, j] / s
    return out


def layernorm_rows(x, gamma, beta):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        r = x[i]
        mu = np.mean(r)
        d = r - mu
        out[i] = d / np.sqrt(np.mean(d * d) + EPS) * gamma + beta
    return out


def layernorm_scalar(x, gamma, beta):
    n, m = x.shape
    out = np.empty((n, m), np.float32)
    for i in range(n):
        s = np.float32(0.0)
        for j in range(m):
            s += x[i, j]
        mu = s / m
        v = np.float32(0.0)
        for j in range(m):
            d = x[i, j] - mu
            v += d * d
        inv = np.float32(1.0) / np.sqrt(v / m + np.float32(EPS))
        for j in range(m):
            out[i, j] = (x[i, j] - mu) * inv * gamma[j] + beta[j]
    return out


def layernorm_whole(x, gamma, beta):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * gamma + beta


def softmax_out_whole(x, out):
    """Whole-array softmax written into a preallocated ``out`` (``out[...] = ...``)."""
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    out[...] = e / np.sum(e, axis=-1, keepdims=True)


def softmax_out_rows(x, out):
    """Row loop writing each row into a preallocated ``out`` (``out[i] = ...``)."""
    for i in range(x.shape[0]):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)


def layernorm_out_whole(x, gamma, beta, out):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    out[...] = (x - mean) / np.sqrt(var + EPS) * gamma + beta


def layernorm_out_rows(x, gamma, beta, out):
    for i in range(x.shape[0]):
        r = x[i]
        mu = np.mean(r)
        d = r - mu
        out[i] = d / np.sqrt(np.mean(d * d) + EPS) * gamma + beta


def sqdiff_whole(a, b):
    return np.sum((a - b) ** 2)


def sqdiff_temp(a, b):
    d = a - b
    return np.sum(d * d)


def sqdiff_scalar(a, b):
    s = np.float32(0.0)
    for i in range(a.shape[0]):
        d = a[i] - b[i]
        s += d * d
    return s


def tanh_whole(x):
    return np.tanh(x)


def tanh_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.tanh(x[i])
    return out


def gelu_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        r = x[i]
        out[i] = 0.5 * r * (1 + np.tanh(kernels.SQRT_2_OVER_PI * (r + 0.044715 * r * r * r)))
    return out


def gelu_whole(x):
    return 0.5 * x * (1 + np.tanh(kernels.SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


TANH_C = """
#include <math.h>
#include <stdint.h>
void tanh_rows(const float *restrict x, float *restrict out, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows * cols; i++)
        out[i] = tanhf(x[i]);
}
"""


def conv_accumulator(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    out = np.empty((n, k, h - r + 1, wd - s + 1), np.float32)
    for b in range(n):
        for o in range(k):
            for y in range(h - r + 1):
                for xx in range(wd - s + 1):
                    acc = np.float32(0.0)
                    for ci in range(c):
                        for di in range(r):
                            for dj in range(s):
                                acc += x[b, ci, y + di, xx + dj] * w[o, ci, di, dj]
                    out[b, o, y, xx] = acc
    return out


def conv_into_output(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    out = np.zeros((n, k, h - r + 1, wd - s + 1), np.float32)
    for b in range(n):
        for o in range(k):
            for y in range(h - r + 1):
                for xx in range(wd - s + 1):
                    for ci in range(c):
                        for di in range(r):
                            for dj in range(s):
                                out[b, o, y, xx] += x[b, ci, y + di, xx + dj] * w[o, ci, di, dj]
    return out


def conv_slices(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh, ow = h - r + 1, wd - s + 1
    out = np.zeros((n, k, oh, ow), np.float32)
    for o in range(k):
        for ci in range(c):
            for dy in range(r):
                for dx in range(s):
                    out[:, o] += w[o, ci, dy, dx] * x[:, ci, dy:dy + oh, dx:dx + ow]
    return out


def nms_mask(boxes, scores, iou_threshold):
    """Greedy NMS with a keep mask: each kept box suppresses the later ones (guarded
    loads: every load of the inner loop sits under ``if keep[j]``)."""
    order = np.argsort(-scores)
    b = boxes[order]
    n = b.shape[0]
    areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = np.ones(n, np.int64)
    for i in range(n):
        if keep[i] == 1:
            for j in range(i + 1, n):
                if keep[j] == 1:
                    xx1 = max(b[i, 0], b[j, 0])
                    yy1 = max(b[i, 1], b[j, 1])
                    xx2 = min(b[i, 2], b[j, 2])
                    yy2 = min(b[i, 3], b[j, 3])
                    inter = max(xx2 - xx1, 0.0) * max(yy2 - yy1, 0.0)
                    if inter / (areas[i] + areas[j] - inter) > iou_threshold:
                        keep[j] = 0
    return order[keep == 1]


def nms_slices(boxes, scores, iou_threshold):
    """Greedy NMS, numpy style: each kept box against all later boxes as slices."""
    order = np.argsort(-scores)
    b = boxes[order]
    n = b.shape[0]
    areas = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = np.ones(n, np.bool_)
    for i in range(n):
        if keep[i]:
            xx1 = np.maximum(b[i, 0], b[i + 1:, 0])
            yy1 = np.maximum(b[i, 1], b[i + 1:, 1])
            xx2 = np.minimum(b[i, 2], b[i + 1:, 2])
            yy2 = np.minimum(b[i, 3], b[i + 1:, 3])
            inter = np.maximum(xx2 - xx1, 0.0) * np.maximum(yy2 - yy1, 0.0)
            iou = inter / (areas[i] + areas[i + 1:] - inter)
            keep[i + 1:] = keep[i + 1:] & ~(iou > iou_threshold)
    return order[keep]


def bilateral_scalar(img, sigma_space=10, sigma_color=0.1):
    """The bilateral filter with explicit window loops and scalar accumulators (the
    types of the numpy formulation: float64 space kernel and sums)."""
    h, w = img.shape
    result = np.zeros_like(img)
    space = np.exp(-(np.arange(-5, 6) ** 2) / (2 * sigma_space**2))
    den_c = np.float32(2 * sigma_color**2)
    for i in range(5, h - 5):
        for j in range(5, w - 5):
            c = img[i, j]
            num = 0.0
            den = 0.0
            for di in range(11):
                for dj in range(11):
                    v = img[i + di - 5, j + dj - 5]
                    d = c - v
                    wgt = space[dj] * np.exp(-(d * d) / den_c)
                    num += v * wgt
                    den += wgt
            result[i, j] = num / den
    return result


def bilateral_shifted(img, sigma_space=10, sigma_color=0.1):
    """The bilateral filter over whole shifted planes: one window offset at a time,
    vectorized across the output pixels."""
    h, w = img.shape
    result = np.zeros_like(img)
    space = np.exp(-(np.arange(-5, 6) ** 2) / (2 * sigma_space**2))
    c = img[5:h - 5, 5:w - 5]
    num = np.zeros((h - 10, w - 10))
    den = np.zeros((h - 10, w - 10))
    for di in range(11):
        for dj in range(11):
            v = img[di:di + h - 10, dj:dj + w - 10]
            wgt = space[dj] * np.exp(-((c - v) ** 2) / (2 * sigma_color**2))
            num += v * wgt
            den += wgt
    result[5:h - 5, 5:w - 5] = num / den
    return result


def fir_empty(x, w):
    """A FIR filter (correlation) with a float32 scalar accumulator stored as it is."""
    n, k = x.shape[0], w.shape[0]
    y = np.empty(n - k + 1, np.float32)
    for i in range(n - k + 1):
        acc = np.float32(0.0)
        for t in range(k):
            acc += x[i + t] * w[t]
        y[i] = acc
    return y


def fir_float64(x, w):
    """The same with ``acc = 0.0``: a Python float is weak under numpy 2, so ``acc`` is float32
    after the first ``+=`` (the same sum as ``fir_empty``, written the other common way)."""
    n, k = x.shape[0], w.shape[0]
    y = np.empty(n - k + 1, np.float32)
    for i in range(n - k + 1):
        acc = 0.0
        for t in range(k):
            acc += x[i + t] * w[t]
        y[i] = acc
    return y


def fir_slices(x, w):
    """The same, numpy style: one shifted slice per tap."""
    n, k = x.shape[0], w.shape[0]
    y = np.zeros(n - k + 1, np.float32)
    for t in range(k):
        y += w[t] * x[t:t + n - k + 1]
    return y
