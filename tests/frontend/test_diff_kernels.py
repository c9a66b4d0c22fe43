"""Differential tests on whole operators as users write them (softmax, layer norm,
GELU, convolution, pooling, cumulative sums, NMS-style loops)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import SUM, Tol, check, rand, views

from pyasc import hybrid


@hybrid
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@hybrid
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


@hybrid
def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


@hybrid
def linear(x, w, b):
    return np.maximum(x @ w.T + b, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 4, 5)])
def test_normalizations(dtype, shape):
    x, n = rand(shape, dtype), shape[-1]
    check(softmax, x, rtol=Tol(math=1, terms=n))
    check(layer_norm, x, rand(shape[-1:], dtype, 1), rand(shape[-1:], dtype, 2),
          rtol=SUM(2 * n))
    check(gelu, x, rtol=Tol(math=2))  # tanh and x ** 3 (pow)


@pytest.mark.parametrize("view", [None, 0, 1])
def test_linear_layer_on_views(view):
    x = rand((6, 4))
    check(linear, x if view is None else views(x)[view], rand((3, 4), seed=1),
          rand((3,), seed=2), rtol=SUM(4))


@hybrid
def conv1d(x, k):
    n, m = x.shape[0], k.shape[0]
    out = np.zeros(n - m + 1, dtype=x.dtype)
    for i in range(n - m + 1):
        out[i] = np.sum(x[i:i + m] * k)
    return out


@hybrid
def max_pool2d(x, size):
    h, w = x.shape
    out = np.empty((h // size, w // size), x.dtype)
    for i in range(h // size):
        for j in range(w // size):
            out[i, j] = x[i * size:(i + 1) * size, j * size:(j + 1) * size].max()
    return out


@pytest.mark.parametrize("n", [3, 10])
def test_convolution_and_pooling(n):
    check(conv1d, rand((n,)), rand((3,), seed=4))
    check(max_pool2d, rand((n, n + 1)), 2)
    check(max_pool2d, rand((n, n)), 3)


@hybrid
def cumsum(x):
    out = np.empty_like(x)
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc
    return out


def test_running_sum_over_rows():
    check(cumsum, rand((5,), "int32"))
    check(cumsum, rand((4, 3)))


@hybrid
def greedy_suppress(scores, threshold):
    keep = np.zeros(scores.shape[0], dtype=np.bool_)
    s = scores.copy()
    for _ in range(scores.shape[0]):
        best = np.argmax(s)
        if s[best] < threshold:
            break
        keep[best] = True
        lo = max(best - 1, 0)
        hi = min(best + 2, s.shape[0])
        s[lo:hi] = -1.0
    return keep


@pytest.mark.parametrize("threshold", [-5.0, 0.0, 0.8])
def test_nms_style_loop_with_break(threshold):
    check(greedy_suppress, rand((9,), "float64"), threshold)
