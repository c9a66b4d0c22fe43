"""The forms of the newest loop lowerings, written as users write them, and a seeded
draw of their arguments (``test_window_properties`` runs them on ``cpu`` and
``ascend-sim`` against the Python function).

The forms: window loops whose size is a run-time dimension (``k = wt.shape[1]``, one
kernel per window size under ``dynamic_shape``, ``jit/window_cap.py``), with strides and
dilations; window-slice convolutions (``x[c, i:i+3, j:j+3] * w[c]``,
``x[:, i:i+3, j:j+3] * w[o]``, strided, dilated, zero-padded, accumulated per input
plane, in a batch loop over images); windows cut short at the edges (``x[i:i+3]`` past
the end, ``x[i-1:i+2]`` at ``i = 0``: empty in numpy); device transposes
(``np.ascontiguousarray(x.T)``, ``.transpose(0, 2, 1).copy()``); ``pyasc.ops.conv2d``
with stride, padding and dilation.  Values are small integers (exact in float16 sums
of a few hundred terms) unless float32 draws reals, so a mismatch is a wrong result,
not rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pyasc import ops


def depthwise_loops(x, wt):
    c, h, wd = x.shape
    k = wt.shape[1]
    out = np.zeros((c, h - k + 1, wd - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(wd - k + 1):
                acc = x.dtype.type(0)
                for di in range(k):
                    for dj in range(k):
                        acc += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = acc
    return out


def strided_loops(x, wt, s):
    c, h, wd = x.shape
    k = wt.shape[1]
    out = np.zeros((c, (h - k) // s + 1, (wd - k) // s + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range((h - k) // s + 1):
            for j in range((wd - k) // s + 1):
                acc = x.dtype.type(0)
                for di in range(k):
                    for dj in range(k):
                        acc += x[ch, s * i + di, s * j + dj] * wt[ch, di, dj]
                out[ch, i, j] = acc
    return out


def dilated_loops(x, wt):
    c, h, wd = x.shape
    k = wt.shape[1]
    span = 2 * (k - 1)
    out = np.zeros((c, h - span, wd - span), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - span):
            for j in range(wd - span):
                acc = x.dtype.type(0)
                for di in range(k):
                    for dj in range(k):
                        acc += x[ch, i + 2 * di, j + 2 * dj] * wt[ch, di, dj]
                out[ch, i, j] = acc
    return out


def depthwise_slices(x, w):
    c, h, wd = x.shape
    out = np.zeros((c, h - 2, wd - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3] * w[ch])
    return out


def conv_slices(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])
    return out


def strided_slices(x, w):
    c, h, wd = x.shape
    oh, ow = (h - 3) // 2 + 1, (wd - 3) // 2 + 1
    out = np.zeros((w.shape[0], oh, ow), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(oh):
            for j in range(ow):
                out[o, i, j] = np.sum(x[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[o])
    return out


def dilated_slices(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 4, wd - 4), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 4):
            for j in range(wd - 4):
                out[o, i, j] = np.sum(x[:, i:i + 5:2, j:j + 5:2] * w[o])
    return out


def padded_slices(x, w):
    c, h, wd = x.shape
    xp = np.zeros((c, h + 2, wd + 2), dtype=x.dtype)
    xp[:, 1:h + 1, 1:wd + 1] = x
    out = np.zeros((w.shape[0], h, wd), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h):
            for j in range(wd):
                out[o, i, j] = np.sum(xp[:, i:i + 3, j:j + 3] * w[o])
    return out


def plane_sums(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for ch in range(c):
            for i in range(h - 2):
                for j in range(wd - 2):
                    out[o, i, j] += np.sum(x[ch, i:i + 3, j:j + 3] * w[o, ch])
    return out


def batch_conv(x, w):
    n, c, h, wd = x.shape
    out = np.zeros((n, w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for b in range(n):
        for o in range(w.shape[0]):
            for i in range(h - 2):
                for j in range(wd - 2):
                    acc = x.dtype.type(0)
                    for ch in range(c):
                        for di in range(3):
                            for dj in range(3):
                                acc += x[b, ch, i + di, j + dj] * w[o, ch, di, dj]
                    out[b, o, i, j] = acc
    return out


def edge_windows(x):
    c, h, wd = x.shape
    out = np.zeros((c, h, wd), dtype=x.dtype)
    for ch in range(c):
        for i in range(h):
            for j in range(wd):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3]) - np.sum(x[ch, i - 1:i + 2, j])
    return out


def transposed(x):
    return np.ascontiguousarray(x.T) * 2


def transposed_last(x):
    return x.transpose(0, 2, 1).copy() + 1


def conv2d_s2p1(x, w):
    return ops.conv2d(x, w, stride=2, padding=1)


def conv2d_p2d2(x, w):
    return ops.conv2d(x, w, padding=2, dilation=2)


@dataclass
class Case:
    """One drawn form: the function, its argument tuples (called in turn on one
    compiled function), ``dynamic_shape``, and the comparison tolerance."""

    fn: Callable
    calls: list[tuple]
    dynamic: bool
    tol: tuple[float, float]


DTYPES = (np.float32, np.float16, np.int32)


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: type,
           real: bool) -> np.ndarray:
    """Small integers in ``dtype`` (exact sums), or reals in [-1, 1) when ``real``."""
    if real:
        return (rng.random(shape) * 2 - 1).astype(dtype)
    return rng.integers(-2, 3, shape).astype(dtype)


def as_view(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """``x`` itself, or the same values as a strided, Fortran-ordered or reversed view."""
    kind = rng.integers(4)
    if kind == 1:  # every other element of a wider array
        wide = np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if kind == 2:
        return np.asfortranarray(x)
    if kind == 3:
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    return x


def _size(rng: np.random.Generator, least: int, spread: int) -> int:
    """A size from ``least``, often ``least`` itself or odd."""
    return int(least + rng.choice([0, 1, rng.integers(0, spread + 1)]))


def _window_calls(rng, dtype, real, sizes, extra=lambda k: ()) -> list[tuple]:
    calls = []
    for k in sizes:
        c = int(rng.integers(1, 4))
        reach = 2 * (k - 1) + 1
        x = values(rng, (c, _size(rng, reach, 9), _size(rng, reach, 20)), dtype, real)
        calls.append((as_view(rng, x), values(rng, (c, k, k), dtype, real), *extra(k)))
    return calls


def _conv_calls(rng, dtype, real, reach: int, count: int) -> list[tuple]:
    calls = []
    for _ in range(count):
        c, o = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        x = values(rng, (c, _size(rng, reach, 10), _size(rng, reach, 30)), dtype, real)
        calls.append((as_view(rng, x), values(rng, (o, c, 3, 3), dtype, real)))
    return calls


WINDOW_LOOPS = (depthwise_loops, strided_loops, dilated_loops)
SLICES = (depthwise_slices, conv_slices, strided_slices, dilated_slices, padded_slices,
          plane_sums)
OTHERS = (batch_conv, edge_windows, transposed, transposed_last, conv2d_s2p1, conv2d_p2d2)
FORMS = WINDOW_LOOPS + SLICES + OTHERS


def draw(seed: int, fn: Callable | None = None, window_sizes: int = 3) -> Case:
    """The case of ``seed``: a form (``fn`` if given), a dtype, static or run-time
    shapes, and 2-3 argument tuples (``window_sizes`` window sizes for the window loops,
    drawn from 1-9)."""
    rng = np.random.default_rng(seed)
    fn = FORMS[rng.integers(len(FORMS))] if fn is None else fn
    dtype = DTYPES[rng.integers(len(DTYPES))]
    real = dtype == np.float32 and bool(rng.integers(2))
    dynamic = bool(rng.integers(2))
    tol = (1e-5, 1e-5) if real else (0.0, 0.0)
    if fn in WINDOW_LOOPS:
        dynamic = dynamic or window_sizes > 3
        sizes = [int(k) for k in rng.integers(1, 10, window_sizes)]
        extra = (lambda k: (int(rng.integers(1, 4)),)) if fn is strided_loops else (lambda k: ())
        return Case(fn, _window_calls(rng, dtype, real, sizes, extra), dynamic, tol)
    if fn is depthwise_slices:  # one 3x3 weight plane per input plane
        calls = [(x, values(rng, (x.shape[0], 3, 3), dtype, real))
                 for x, _ in _conv_calls(rng, dtype, real, 3, 2)]
        return Case(fn, calls, dynamic, tol)
    if fn in SLICES:
        return Case(fn, _conv_calls(rng, dtype, real, 5 if fn is dilated_slices else 3, 2),
                    dynamic, tol)
    return _other(rng, fn, dtype, real, dynamic, tol)


def _other(rng, fn, dtype, real, dynamic, tol) -> Case:
    if fn is batch_conv:
        calls = [(values(rng, (int(rng.integers(1, 3)), *x.shape), dtype, real), w)
                 for x, w in _conv_calls(rng, dtype, real, 3, 2)]
        return Case(fn, calls, dynamic, tol)
    if fn is edge_windows:
        calls = [(as_view(rng, values(rng, (int(rng.integers(1, 3)), _size(rng, 1, 8),
                                             _size(rng, 1, 20)), dtype, real)),)
                 for _ in range(2)]
        return Case(fn, calls, dynamic, tol)
    if fn in (transposed, transposed_last):
        rank = 2 if fn is transposed else 3
        calls = [(as_view(rng, values(rng, tuple(int(rng.choice([1, 3, 17, 64, 130]))
                                                 for _ in range(rank)), dtype, real)),)
                 for _ in range(2)]
        return Case(fn, calls, dynamic, tol)
    # pyasc.ops.conv2d: float only (the cube's operands), float32 reals
    dtype = np.float32 if dtype == np.int32 else dtype
    real = dtype == np.float32
    calls = []
    for _ in range(2):
        n, c, o = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 20))
        k = int(rng.choice([1, 3]))
        x = values(rng, (n, c, _size(rng, 1, 12), _size(rng, 1, 12)), dtype, real)
        calls.append((x, values(rng, (o, c, k, k), dtype, real)))
    return Case(fn, calls, dynamic, (1e-4, 1e-4) if real else (0.0, 0.0))
