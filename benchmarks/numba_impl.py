"""Numba versions: the kernels' own code under ``numba.njit`` and explicit-loop variants.

The explicit-loop functions below are plain Python written the way one writes for Numba:
scalar loops, float32 constants (a float literal is float64 in Numba and would promote the
math), and the same algorithms as the C versions in ``c/`` (including the 8-lane sums of
``c/bench.h``), so that the Numba and C columns compare compilers, not algorithms.  The
Numba column of the results is the best of the variants that compile and give the right
result ("Numba's best single-thread variant").  Numba is optional: ``available()`` says
whether it imports, and nothing here imports it at module level.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import kernels

ZERO = np.float32(0.0)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
GELU_A = np.float32(kernels.SQRT_2_OVER_PI)
GELU_B = np.float32(0.044715)
LANES = 8
BLOCK = 4096


def available() -> str | None:
    """``None`` if Numba imports, else the reason it does not."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # an optional column: any import failure just disables it
        return f"{type(exc).__name__}: {exc}"
    return None


def lane_sum(a):
    acc = np.zeros(LANES, np.float32)
    n = a.shape[0] // LANES
    for k in range(n):
        for lane in range(LANES):
            acc[lane] += a[k * LANES + lane]
    for i in range(n * LANES, a.shape[0]):
        acc[0] += a[i]
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


def lane_sum_sq(a, c):
    acc = np.zeros(LANES, np.float32)
    n = a.shape[0] // LANES
    for k in range(n):
        for lane in range(LANES):
            d = a[k * LANES + lane] - c
            acc[lane] += d * d
    for i in range(n * LANES, a.shape[0]):
        d = a[i] - c
        acc[0] += d * d
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


def relu_loops(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v > ZERO else ZERO
    return out


def gelu_tanh_loops(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = HALF * v * (ONE + math.tanh(GELU_A * (v + GELU_B * (v * v * v))))
    return out


def softmax_loops(x):
    rows, cols = x.shape
    out = np.empty_like(x)
    for r in range(rows):
        m = x[r, 0]
        for j in range(1, cols):
            m = x[r, j] if x[r, j] > m else m
        for j in range(cols):
            out[r, j] = math.exp(x[r, j] - m)
        s = lane_sum(out[r])
        for j in range(cols):
            out[r, j] = out[r, j] / s
    return out


def layernorm_loops(x, gamma, beta, eps=1e-5):
    rows, cols = x.shape
    out = np.empty_like(x)
    n = np.float32(cols)
    for r in range(rows):
        mean = lane_sum(x[r]) / n
        d = math.sqrt(lane_sum_sq(x[r], mean) / n + np.float32(eps))
        for j in range(cols):
            out[r, j] = (x[r, j] - mean) / d * gamma[j] + beta[j]
    return out


def bilateral_filter_loops(img, sigma_space=10, sigma_color=0.1):
    h, w = img.shape
    result = np.zeros_like(img)
    space = np.empty(11)
    for k in range(11):
        space[k] = math.exp(-((k - 5) * (k - 5)) / (2 * sigma_space**2))
    cden = np.float32(2 * sigma_color**2)
    for i in range(5, h - 5):
        for j in range(5, w - 5):
            c = img[i, j]
            num = 0.0
            den = 0.0
            for di in range(11):
                for dj in range(11):
                    v = img[i - 5 + di, j - 5 + dj]
                    d = c - v
                    weight = space[dj] * math.exp(-(d * d) / cden)
                    num += v * weight
                    den += weight
            result[i, j] = num / den
    return result


def adaptive_avg_pool_loops(x, output_size):
    n, c, h, w = x.shape
    oh, ow = output_size
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    colsum = np.empty(w, dtype=np.float32)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                h0 = (i * h) // oh
                h1 = ((i + 1) * h + oh - 1) // oh
                colsum[:] = ZERO
                for y in range(h0, h1):
                    for col in range(w):
                        colsum[col] += x[b, ch, y, col]
                for j in range(ow):
                    w0 = (j * w) // ow
                    w1 = ((j + 1) * w + ow - 1) // ow
                    s = ZERO
                    for col in range(w0, w1):
                        s += colsum[col]
                    out[b, ch, i, j] = s / np.float32((h1 - h0) * (w1 - w0))
    return out


def sq_error_loss_loops(pred, target):
    total = 0.0
    acc = np.zeros(LANES, np.float32)
    for b in range(0, pred.shape[0], BLOCK):
        e = min(b + BLOCK, pred.shape[0])
        acc[:] = ZERO
        n = (e - b) // LANES
        for k in range(n):
            for lane in range(LANES):
                d = pred[b + k * LANES + lane] - target[b + k * LANES + lane]
                acc[lane] += d * d
        for i in range(b + n * LANES, e):
            d = pred[i] - target[i]
            acc[0] += d * d
        total += ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    return np.float32(total)


def conv2d_loops(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    oh = h - r + 1
    ow = wd - s + 1
    out = np.zeros((n, k, oh, ow), dtype=x.dtype)
    for b in range(n):
        for o in range(k):
            for ci in range(c):
                for dy in range(r):
                    for dx in range(s):
                        wv = w[o, ci, dy, dx]
                        for y in range(oh):
                            for col in range(ow):
                                out[b, o, y, col] += wv * x[b, ci, y + dy, col + dx]
    return out


def embedding_matmul_loops(ids, table, w):
    d = table.shape[1]
    m = w.shape[1]
    out = np.zeros((ids.shape[0], m), dtype=table.dtype)
    for i in range(ids.shape[0]):
        row = ids[i]
        for k in range(d):
            a = table[row, k]
            for j in range(m):
                out[i, j] += a * w[k, j]
    return out


def matmul_loops(a, b):
    n, kk = a.shape
    m = b.shape[1]
    out = np.zeros((n, m), dtype=a.dtype)
    for i in range(n):
        for k in range(kk):
            av = a[i, k]
            for j in range(m):
                out[i, j] += av * b[k, j]
    return out


# kernel name: (explicit-loop variant, helper functions it calls).  NMS has none: the
# kernel itself is already the explicit loop.
LOOPS = {
    "relu": (relu_loops, ()),
    "gelu_tanh": (gelu_tanh_loops, ()),
    "softmax": (softmax_loops, ("lane_sum",)),
    "layernorm": (layernorm_loops, ("lane_sum", "lane_sum_sq")),
    "bilateral_filter": (bilateral_filter_loops, ()),
    "adaptive_avg_pool": (adaptive_avg_pool_loops, ()),
    "sq_error_loss": (sq_error_loss_loops, ()),
    "conv2d": (conv2d_loops, ()),
    "embedding_matmul": (embedding_matmul_loops, ()),
    "matmul": (matmul_loops, ()),
}


def variants(name: str, fastmath: bool = False) -> dict[str, Callable[[], Callable]]:
    """Factories of the Numba variants of kernel ``name``: label -> () -> jitted function.

    Each factory makes a fresh dispatcher, so its first call includes Numba's compile time.
    """
    import numba

    def jit(fn, helpers=()):
        def compile_():
            njit = numba.njit(fastmath=fastmath)
            return njit(kernels.rebind(fn, njit, helpers) if helpers else fn)

        return compile_

    found = {"numba same code": jit(getattr(kernels, name), kernels.CALLEES.get(name, ()))}
    if name in LOOPS:
        found["numba loops"] = jit(*LOOPS[name])
    return found
