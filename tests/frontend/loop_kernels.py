"""Loop kernels several frontend test files compile (one definition each)."""

from __future__ import annotations

import numpy as np

from pyasc import hybrid


@hybrid
def conv_direct(x, w):
    """A direct convolution with a scalar accumulator per output element (the
    formulation of issue 17, cause 1; benchmarks/formulation_kernels.py times it)."""
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
