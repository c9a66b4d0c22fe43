"""Parallel loops on the thread pool: @hybrid kernels give bit-identical results (and
the same errors) for every thread count, split or not."""

from __future__ import annotations

import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.runtime import threads

COUNTS = (1, 2, 3, 7)
ROOT = Path(__file__).resolve().parents[3]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"par_example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@hybrid
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


@hybrid
def relu(x):
    return np.maximum(x, 0)


@hybrid
def total(x):
    return np.sum(x)


@hybrid(boundscheck=True)
def pick(a, b, ia, ib):
    out = np.zeros(ia.shape[0], np.float32)
    for i in range(ia.shape[0]):
        out[i] = a[ia[i]] * b[ib[i]]
    return out


@pytest.fixture
def split_all():
    """Split every parallel loop, however small (the default threshold would keep the
    test sizes single-threaded)."""
    with threads.minimum_work(0):
        yield


def _bits(results) -> list[bytes]:
    items = results if isinstance(results, tuple) else (results,)
    return [np.ascontiguousarray(r).tobytes() for r in items]


def run_counts(monkeypatch, fn, *args) -> dict[int, tuple[list[bytes], int]]:
    """``{threads: (result bytes, loops split during the call)}``."""
    out = {}
    for n in COUNTS:
        monkeypatch.setenv("PYASC_NUM_THREADS", str(n))
        before = threads.stats().splits
        result = fn(*args)
        out[n] = (_bits(result), threads.stats().splits - before)
    return out


def assert_identical_and_split(found: dict) -> None:
    reference = found[1][0]
    for n, (bits, splits) in found.items():
        assert bits == reference, f"{n} threads differ from 1 thread"
        assert (splits > 0) == (n > 1), (n, splits)


def _gelu_reference(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("fn, reference", [(relu, lambda x: np.maximum(x, 0)),
                                           (gelu, _gelu_reference)])
def test_elementwise_identical_for_every_thread_count(monkeypatch, split_all, fn,
                                                      reference):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_003).astype(np.float32) * 4
    x[::997] = np.nan
    found = run_counts(monkeypatch, fn, x)
    assert_identical_and_split(found)
    np.testing.assert_allclose(np.frombuffer(found[7][0][0], np.float32), reference(x),
                               rtol=1e-5, atol=1e-6)


def test_rowwise_softmax_and_layernorm(monkeypatch, split_all):
    ex = _example("softmax")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((257, 131)).astype(np.float32)
    g, b = rng.random(131).astype(np.float32), rng.random(131).astype(np.float32)
    found = run_counts(monkeypatch, ex.softmax, x)
    assert_identical_and_split(found)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.frombuffer(found[3][0][0], np.float32).reshape(x.shape),
                               e / e.sum(-1, keepdims=True), rtol=1e-5)
    assert_identical_and_split(run_counts(monkeypatch, ex.layernorm, x, g, b))


def test_bilateral_filter_user_loop_is_split(monkeypatch, split_all):
    bf = _example("bilateral_filter").bilateral_filter
    img = np.random.default_rng(2).random((41, 37)).astype(np.float32)
    assert bf.kernel(img).llvm_ir.count("call i32 @pyasc.rt.parallel_for(") == 3
    found = run_counts(monkeypatch, bf, img)
    assert_identical_and_split(found)
    out = np.frombuffer(found[2][0][0], np.float32).reshape(img.shape)
    assert np.all(out[5:-5, 5:-5] > 0) and np.all(out[:5] == 0)


@pytest.mark.parametrize("bad", [(900, 50), (50, 900), (999, 0), (0, 999), (3, 3)])
def test_first_failing_iteration_wins(monkeypatch, split_all, bad):
    a, b = np.arange(10, dtype=np.float32), np.arange(20, dtype=np.float32)
    ia, ib = np.zeros(1000, np.int64), np.zeros(1000, np.int64)
    ia[bad[0]], ib[bad[1]] = 10, -25
    # a[...] or b[...] fails first; its values reach the message, whichever thread and
    # chunk failed (the error record keeps the first failing iteration's)
    text, column = ("index 10 is out of bounds for axis 0 with size 10 (array 'a')", 18) \
        if bad[0] <= bad[1] else \
        ("index -25 is out of bounds for axis 0 with size 20 (array 'b')", 29)
    messages = set()
    for n in COUNTS:
        monkeypatch.setenv("PYASC_NUM_THREADS", str(n))
        with pytest.raises(IndexError) as info:
            pick(a, b, ia, ib)
        messages.add(str(info.value))
    assert len(messages) == 1
    message = messages.pop()
    assert text in message and f":{column}\n" in message


def test_trip_counts_below_the_thread_count(monkeypatch, split_all):
    ex = _example("softmax")
    for n in (1, 2, 3, 5, 6):
        x = np.linspace(-3, 3, n, dtype=np.float32)
        found = run_counts(monkeypatch, gelu, x)
        assert all(bits == found[1][0] for bits, _ in found.values())
        rows = np.linspace(-1, 1, n * 9, dtype=np.float32).reshape(n, 9)
        found = run_counts(monkeypatch, ex.softmax, rows)
        assert all(bits == found[1][0] for bits, _ in found.values())


def test_reductions_are_not_split_and_stay_identical(monkeypatch, split_all):
    x = np.random.default_rng(3).standard_normal(300_001).astype(np.float32)
    found = run_counts(monkeypatch, total, x)
    assert all(bits == found[1][0] for bits, _ in found.values())


def test_small_kernels_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "2")
    assert threads.stats().min_work == threads.DEFAULT_MIN_WORK
    before = threads.stats().splits
    relu(np.ones(1000, np.float32))
    assert threads.stats().splits == before
    relu(np.ones(1 << 20, np.float32))
    assert threads.stats().splits == before + 1


def test_concurrent_calls_from_python_threads(monkeypatch, split_all):
    monkeypatch.setenv("PYASC_NUM_THREADS", "3")
    ex = _example("softmax")
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((64, 33)).astype(np.float32) for _ in range(8)]
    expected = [(ex.softmax(x), gelu(x)) for x in inputs]
    start = threading.Barrier(4)

    def worker(k: int) -> bool:
        start.wait()
        ok = True
        for r in range(60):
            i = (k + r) % len(inputs)
            s, g = ex.softmax(inputs[i]), gelu(inputs[i])
            ok &= s.tobytes() == expected[i][0].tobytes()
            ok &= g.tobytes() == expected[i][1].tobytes()
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(worker, range(4)))
