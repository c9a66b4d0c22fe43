"""The ``@hybrid`` functions the AscendC backend tests run on ascend-sim.

Each is compiled once per dtype (``dynamic_shape=True``: every shape shares the kernel)
and shared by the differential, performance and text tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from pyasc import hybrid

_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT / "examples"))
sys.path.insert(0, str(_ROOT / "benchmarks"))
import kernels as _bench  # noqa: E402
from bilateral_filter import bilateral_filter  # noqa: E402
from relu import relu as seed_relu  # noqa: E402

nms = hybrid(_bench.nms)  # greedy NMS of the benchmark suite: data-dependent scalar loops
make_boxes = _bench._boxes

__all__ = ["cumulative_rows", "f64_math", "make_boxes", "nms", "adaptive_avg_pool", "bilateral_filter", "checked_gather", "gelu", "half_suite",
           "int_suite", "layernorm", "relu", "residual", "row_stats", "scale_rows", "seed_relu", "softmax",
           "squared_error", "zoo"]


@hybrid(dynamic_shape=True)
def relu(x):
    return np.maximum(x, 0)


@hybrid(dynamic_shape=True)
def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


@hybrid(dynamic_shape=True)
def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@hybrid(dynamic_shape=True)
def layernorm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


@hybrid(dynamic_shape=True)
def squared_error(pred, target):
    return np.sum((pred - target) ** 2)


@hybrid(dynamic_shape=True)
def adaptive_avg_pool(x, output_size):
    h, w = x.shape
    oh, ow = output_size
    out = np.zeros((oh, ow), dtype=x.dtype)
    for i in range(oh):
        h0 = (i * h) // oh
        h1 = ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            w0 = (j * w) // ow
            w1 = ((j + 1) * w + ow - 1) // ow
            out[i, j] = np.mean(x[h0:h1, w0:w1])
    return out


@hybrid(dynamic_shape=True)
def zoo(x, y, s):
    a = np.where(x > y, x, y * 0.5)
    b = np.abs(x) + np.sqrt(np.abs(y))
    c = np.exp(-np.abs(x)) / (1 + y * y)
    d = np.floor(x * 3) + np.minimum(x, s)
    e = s - x
    f = 2.0 / (1 + x * x)
    g = np.log(1 + x * x) - (x > 0).astype(x.dtype)
    return a, b, c, d, e, f, g


@hybrid(dynamic_shape=True)
def row_stats(x):
    return np.max(x, axis=-1), np.min(x, axis=-1), np.sum(x, axis=-1), np.max(x)


@hybrid(dynamic_shape=True)
def half_suite(x, gamma, beta, target, s):
    """The float16 variants, as one program (one C++ build): callees are inlined."""
    return (relu(x), gelu(x), softmax(x), layernorm(x, gamma, beta),
            squared_error(x, target), *zoo(x, target, s))


@hybrid(dynamic_shape=True)
def int_suite(a, b, x, m):
    """Integer arithmetic, casts both ways, boolean inputs and outputs."""
    return (a + b, a * 3 - b, np.maximum(a, b), np.minimum(a, -5), np.abs(a),
            a.astype(np.float32) * 0.5, a == b, np.where(m, x, 2 * x), x > 0,
            x.astype(np.int32))


@hybrid(dynamic_shape=True)
def residual(pred, target):
    d = pred - target
    return d, np.sum(d * d), np.max(np.abs(d))


@hybrid(dynamic_shape=True)
def scale_rows(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * (i + 1)
    return x


@hybrid(dynamic_shape=True)
def f64_math(x):
    out = np.empty((9, x.shape[0]), dtype=np.float64)
    for i in range(x.shape[0]):
        v = x[i]
        out[0, i] = np.exp(v)
        out[1, i] = np.log(np.abs(v) + 1e-300)
        out[2, i] = np.sqrt(np.abs(v))
        out[3, i] = np.tanh(v)
        out[4, i] = np.sin(v * 3)
        out[5, i] = np.cos(v * 3)
        out[6, i] = np.floor(v) + np.round(v * 2) + np.ceil(v)
        out[7, i] = np.abs(v) ** 2.5
        out[8, i] = np.erf(v) if False else v ** 3
    return out


@hybrid(dynamic_shape=True, boundscheck=True)
def checked_gather(x, idx):
    out = np.zeros(idx.shape[0], dtype=x.dtype)
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]] * 2
    return out


@hybrid
def matmul(a, b):
    return a @ b


@hybrid(dynamic_shape=True)
def cumulative_rows(x):
    """A loop carrying an array from row to row: scalar code."""
    out = np.zeros_like(x)
    acc = np.zeros(x.shape[1], dtype=x.dtype)
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return out


@hybrid
def matmul_bias_gelu(a, b, bias):
    """A linear layer with GELU: one MIX kernel (cube matmul, vector epilogue)."""
    y = a @ b + bias
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y**3)))


@hybrid(dynamic_shape=True)
def matmul_bias_gelu_dynamic(a, b, bias):
    """The same layer for every shape: one MIX kernel whose sizes are arguments (and,
    for the shapes it does not take, the unfused cube and vector kernels)."""
    y = a @ b + bias
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y**3)))

from pyasc.ops import conv2d  # noqa: E402  (here: the lines above are in golden texts)


@hybrid
def conv2d_relu(x, w):
    """A strided, padded conv2d with ReLU: one conv kernel, the im2col in L1 (LoadData
    3D) and the ReLU in Fixpipe."""
    return np.maximum(conv2d(x, w, stride=2, padding=1), 0)
