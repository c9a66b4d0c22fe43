"""Other spellings of issue 19's loops run as vector kernels on ascend-sim, equal to numpy.

Found by ``benchmarks/loop_spellings.py`` (the audit of many user spellings): each form
here was a scalar kernel (or an internal error) before; each must now launch vector
kernels only, with no scalar GM access, static and ``dynamic_shape=True``, float32 and
float16.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(1919)


def _launched(k) -> list[str]:  # noqa: ANN001
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _assert_vector(k) -> None:  # noqa: ANN001
    assert set(_launched(k)) <= {"VectorKernel", "StencilKernel"}, _launched(k)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0


# ---- a batch loop around a per-row loop: the row view x[b, i] --------------------------

def softmax_batch_rows(x):
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            e = np.exp(x[b, i] - x[b, i].max())
            out[b, i] = e / e.sum()
    return out


def layernorm_batch_rows_two_outputs(x):
    out = np.empty_like(x)
    mu = np.empty(x.shape[:2], dtype=x.dtype)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            m = x[b, i].mean()
            mu[b, i] = m
            d = x[b, i] - m
            out[b, i] = d / np.sqrt((d * d).mean() + 1e-5)
    return out, mu


def rmsnorm_batch_rows_offset(x, g):
    # a part of the rows (i from 1): the rows view is strided across the batch axis
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        for i in range(1, x.shape[1]):
            row = x[b, i, :]
            out[b, i, :] = row / np.sqrt(np.mean(row * row) + 1e-6) * g
    return out


def pixel_dot(x, w):
    # a reduction of an array made from a pixel's value: the batched sum reduces the
    # per-pixel axes (after the two batch axes), not the second batch axis
    out = np.zeros(x.shape, dtype=x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = np.sum(w * x[i, j]) + x[i, j]
    return out


CASES = [
    (softmax_batch_rows, lambda: (RNG.standard_normal((3, 7, 45)),)),
    (layernorm_batch_rows_two_outputs, lambda: (RNG.standard_normal((2, 9, 40)),)),
    (rmsnorm_batch_rows_offset, lambda: (RNG.standard_normal((3, 6, 33)),
                                         RNG.standard_normal(33))),
    (pixel_dot, lambda: (RNG.standard_normal((6, 7)), RNG.standard_normal((3, 4)))),
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn,make", CASES, ids=[f.__name__ for f, _ in CASES])
def test_nested_row_loops_are_vector_kernels(fn, make, dynamic, dtype):
    args = tuple(a.astype(dtype) for a in make())
    tol = 2e-3 if dtype == "float16" else 1e-5
    k = check(hybrid(fn, dynamic_shape=dynamic), *args, rtol=tol, atol=tol)
    _assert_vector(k)
