"""Compiled ``a @ b`` (the tiled nest of ``lower_matmul_tiled`` at its real block sizes):
numpy's results for odd sizes, strides, dtypes and batches; every float element is the
plain sequential sum over k, bit for bit, whatever the thread count."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.runtime import threads

RNG = np.random.default_rng(11)


@hybrid
def mm(a, b):
    return a @ b


def rand(shape, dtype=np.float32):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    return RNG.integers(-30, 31, shape).astype(dt)


def sequential(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
    for k in range(a.shape[-1]):
        out = out + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("n", [1, 3, 17, 65])
def test_square_odd_sizes(n, dtype):
    a, b = rand((n, n), dtype), rand((n, n), dtype)
    got = mm(a, b)
    assert got.dtype == dtype and got.shape == (n, n)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_array_equal(got, sequential(a, b))
    else:
        np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("m,k,n", [(70, 600, 45), (13, 257, 1100), (6, 1, 16)])
def test_blocks_and_tails_are_the_sequential_sum(m, k, n):
    a, b = rand((m, k)), rand((k, n))
    np.testing.assert_array_equal(mm(a, b), sequential(a, b))


def test_transposed_and_strided_operands():
    a, b = rand((300, 70)), rand((90, 300))
    for x, y in [(a.T[:, ::2], b.T[::2]), (np.asfortranarray(a[:40]), b[:70, ::-3])]:
        np.testing.assert_array_equal(mm(x, y), sequential(x, y))


@pytest.mark.parametrize("sa,sb", [((3, 20, 33), (33, 40)), ((2, 1, 19, 7), (3, 7, 18))])
def test_batched(sa, sb):
    a, b = rand(sa), rand(sb)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_identical_for_every_thread_count(monkeypatch):
    a, b = rand((131, 300)), rand((300, 77))
    found = set()
    with threads.minimum_work(0):
        for count in (1, 2, 3):
            monkeypatch.setenv("PYASC_NUM_THREADS", str(count))
            found.add(mm(a, b).tobytes())
    assert len(found) == 1
