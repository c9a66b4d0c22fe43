"""Benchmark kernels, each written once as plain numpy-style Python, plus their inputs.

Every function here is what a pyasc user would write: the harness decorates it with
``pyasc.hybrid`` at run time, runs it unchanged under CPython + numpy (the numpy or CPython
column) and hands it to ``numba.njit`` as the "same code" Numba variant.  Nothing in this
module may depend on pyasc, Numba or the harness.

``make_inputs(name, size)`` builds the arguments of a kernel for ``size`` "small" (a quick
run) or "full" (the sizes of issue 5), always from a fixed seed, all float32 unless the
kernel needs indices.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Iterable

import numpy as np

# A Python float, not np.sqrt(2 / np.pi): a numpy float64 scalar is "strong" under NEP 50
# and would silently promote the whole float32 chain to float64.
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def relu(x):
    """The seed's relu."""
    return np.maximum(x, 0)


def gelu_tanh(x):
    """GELU, tanh approximation: an elementwise chain with a transcendental."""
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def softmax(x):
    """Numerically stable softmax over the last axis."""
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def layernorm(x, gamma, beta, eps=1e-5):
    """Layer normalization over the last axis with an affine gamma/beta."""
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


# The seed article's bilateral filter, verbatim (only the indentation, lost in the article's
# text, is restored).
def bilateral_filter(img, sigma_space=10, sigma_color=0.1):
    h, w = img.shape
    result = np.zeros_like(img)
    # 空间域核
    space_kernel = np.exp(-(np.arange(-5,6)**2)/(2*sigma_space**2))
    for i in range(5, h-5):
        for j in range(5, w-5):
            # 颜色差异核
            color_diff = img[i,j] - img[i-5:i+6, j-5:j+6]
            color_kernel = np.exp(-(color_diff**2)/(2*sigma_color**2))
            # 组合权重
            weights = space_kernel * color_kernel
            result[i,j] = np.sum(img[i-5:i+6, j-5:j+6] * weights) / np.sum(weights)
    return result


def adaptive_avg_pool(x, output_size):
    """Adaptive average pooling of NCHW to ``output_size`` (PyTorch's window rule)."""
    n, c, h, w = x.shape
    oh, ow = output_size
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        h0 = (i * h) // oh
        h1 = ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            w0 = (j * w) // ow
            w1 = ((j + 1) * w + ow - 1) // ow
            out[:, :, i, j] = np.mean(x[:, :, h0:h1, w0:w1], axis=(2, 3))
    return out


def sq_error_loss(pred, target):
    """The seed's custom_loss: sum of squared errors."""
    diff = pred - target
    return np.sum(diff**2)


def conv2d(x, w):
    """Direct 2-D convolution (cross-correlation), NCHW, "valid" padding, stride 1."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh = h - r + 1
    ow = wd - s + 1
    out = np.zeros((n, k, oh, ow), dtype=x.dtype)
    for o in range(k):
        for ci in range(c):
            for dy in range(r):
                for dx in range(s):
                    out[:, o] += w[o, ci, dy, dx] * x[:, ci, dy:dy + oh, dx:dx + ow]
    return out


def nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression; returns the kept box indices in score order."""
    order = np.argsort(-scores)
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    keep = np.empty(order.shape[0], dtype=np.int64)
    count = 0
    for a in range(order.shape[0]):
        i = order[a]
        suppressed = False
        for k in range(count):
            j = keep[k]
            xx1 = max(boxes[i, 0], boxes[j, 0])
            yy1 = max(boxes[i, 1], boxes[j, 1])
            xx2 = min(boxes[i, 2], boxes[j, 2])
            yy2 = min(boxes[i, 3], boxes[j, 3])
            inter = max(xx2 - xx1, 0.0) * max(yy2 - yy1, 0.0)
            if inter / (areas[i] + areas[j] - inter) > iou_threshold:
                suppressed = True
                break
        if suppressed:
            continue
        keep[count] = i
        count += 1
    return keep[:count]


def embedding(ids, table):
    """Embedding lookup: one table row per id."""
    return table[ids]


def matmul(a, b):
    """Matrix product."""
    return a @ b


def embedding_matmul(ids, table, w):
    """Embedding followed by a projection (the seed's fusion example)."""
    return matmul(embedding(ids, table), w)


# Kernels that call other kernels, and the names of those callees.
CALLEES = {"embedding_matmul": ("embedding", "matmul")}


def rebind(fn: Callable, wrap: Callable, names: Iterable[str]) -> Callable:
    """A copy of ``fn`` whose globals ``names`` are replaced by ``wrap(original)``.

    Compilers see a callee through the caller's globals, so this is how the harness makes
    ``embedding_matmul`` call ``hybrid(embedding)`` (or ``njit(embedding)``) without
    editing the kernel.  The copy keeps the code object, hence its source and line numbers.
    """
    scope = dict(fn.__globals__)
    for name in names:
        scope[name] = wrap(scope[name])
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__doc__, copy.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    return copy


# ---------------------------------------------------------------------------------------
# Inputs.  SIZES[name][size] are the keyword arguments of the generator of the same name.

SIZES: dict[str, dict[str, dict]] = {
    "relu": {"small": {"n": 1 << 20}, "full": {"n": 1 << 24}},
    "gelu_tanh": {"small": {"n": 1 << 20}, "full": {"n": 1 << 24}},
    "softmax": {"small": {"shape": (512, 1024)}, "full": {"shape": (4096, 1024)}},
    "layernorm": {"small": {"shape": (512, 1024)}, "full": {"shape": (4096, 1024)}},
    "bilateral_filter": {"small": {"shape": (64, 64)}, "full": {"shape": (256, 256)}},
    "adaptive_avg_pool": {
        "small": {"shape": (2, 16, 56, 56), "out": (7, 7)},
        "full": {"shape": (8, 64, 112, 112), "out": (7, 7)},
    },
    "sq_error_loss": {"small": {"n": 1 << 20}, "full": {"n": 1 << 24}},
    "conv2d": {
        "small": {"x": (1, 8, 64, 64), "w": (16, 8, 3, 3)},
        "full": {"x": (1, 16, 128, 128), "w": (32, 16, 3, 3)},
    },
    "nms": {"small": {"n": 1000}, "full": {"n": 4000}},
    "embedding_matmul": {
        "small": {"vocab": 10000, "dim": 256, "ids": 1024},
        "full": {"vocab": 50000, "dim": 256, "ids": 4096},
    },
    "matmul": {"small": {"n": 256}, "full": {"n": 1024}},
}


# One fixed seed per kernel, so changing one kernel's inputs never changes another's.
_SEEDS = {name: 1000 + k for k, name in enumerate(SIZES)}


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(_SEEDS[name])


def _normal(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def _vector(rng, n):
    return (_normal(rng, n),)


def _rows(rng, shape):
    return (_normal(rng, shape),)


def _layernorm(rng, shape):
    d = shape[-1]
    return _normal(rng, shape), 1 + 0.1 * _normal(rng, d), 0.1 * _normal(rng, d)


def _image(rng, shape):
    # Intensities in [0, 1), which is what sigma_color=0.1 is tuned for.
    return (rng.random(shape, dtype=np.float32),)


def _pool(rng, shape, out):
    return _normal(rng, shape), out


def _loss(rng, n):
    return _normal(rng, n), _normal(rng, n)


def _conv(rng, x, w):
    return _normal(rng, x), _normal(rng, w) / np.float32(3 * w[1])


def _boxes(rng, n):
    # Boxes clustered around n/40 objects, as a detector emits them, so that NMS really
    # suppresses (about a fifth is kept); scores are distinct so every argsort agrees.
    centers = rng.uniform(0, 1000, (max(n // 40, 1), 2))
    xy = centers[rng.integers(0, len(centers), n)] + rng.normal(0, 8, (n, 2))
    wh = rng.uniform(30, 90, (n, 2))
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], axis=1).astype(np.float32)
    scores = ((rng.permutation(n) + 0.5) / n).astype(np.float32)
    return boxes, scores, 0.5


def _embedding(rng, vocab, dim, ids):
    table = _normal(rng, (vocab, dim))
    w = _normal(rng, (dim, dim)) / np.float32(math.sqrt(dim))
    return rng.integers(0, vocab, ids, dtype=np.int64), table, w


def _matmul(rng, n):
    return _normal(rng, (n, n)), _normal(rng, (n, n))


GENERATORS = {
    "relu": _vector,
    "gelu_tanh": _vector,
    "softmax": _rows,
    "layernorm": _layernorm,
    "bilateral_filter": _image,
    "adaptive_avg_pool": _pool,
    "sq_error_loss": _loss,
    "conv2d": _conv,
    "nms": _boxes,
    "embedding_matmul": _embedding,
    "matmul": _matmul,
}


def make_inputs(name: str, size: str) -> tuple:
    """The positional arguments of kernel ``name`` at ``size`` ("small" or "full")."""
    return GENERATORS[name](_rng(name), **SIZES[name][size])


def describe_size(name: str, size: str) -> str:
    """A short human-readable description of the problem size, for the result tables."""
    params = SIZES[name][size]
    shown = {key: _show(value) for key, value in params.items()}
    if len(shown) == 1:
        return next(iter(shown.values()))
    return " ".join(f"{key}={value}" for key, value in shown.items())


def _show(value) -> str:
    if isinstance(value, tuple):
        return "x".join(map(str, value))
    if value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 20}M"
    return str(value)
