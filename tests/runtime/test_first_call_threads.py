"""First calls from many threads at once (issue 15): every thread gets the right result.

Sixteen threads start together and each makes the first call of twenty fresh ``@hybrid``
functions, with mixed dtypes and by-value arguments (``axis=``, ``keepdims=``), then
keeps calling them with other variants (the fast path under contention); every result
is compared with the plain Python function (numpy).  The default test runs a cold round
(everything compiled) and warm rounds (fresh functions whose kernels and by-value facts
come from the disk cache); the ``slow`` variant runs many cold rounds with more variants:

    .venv/bin/python -m pytest -m slow tests/runtime/test_first_call_threads.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.jit.decorator import HybridFunction

THREADS = 16
HERE = Path(__file__).resolve().parent
FRESH_PROCESS = """
import sys
sys.path.insert(0, sys.argv[1])
import test_first_call_threads as t  # imports pyasc, not its compiler: threads load it
failures = t.stress_round(t.make_functions(5.0)[:8], n_variants=2, steady_calls=5)
print(len(failures), failures[0] if failures else "")
"""


def make_functions(k: float, target: str = "cpu") -> list[HybridFunction]:
    """Twenty fresh functions; ``k`` is captured, so a new ``k`` means new cache keys."""

    @hybrid(target=target)
    def total(x, axis=0, keepdims=False):
        return np.sum(x * k, axis=axis, keepdims=keepdims)

    @hybrid(target=target)
    def average(x, axis=0, keepdims=False):
        return np.mean(x, axis=axis, keepdims=keepdims) + k

    @hybrid(target=target)
    def largest(x, axis=0, keepdims=False):
        return np.max(x, axis=axis, keepdims=keepdims) * k

    @hybrid(target=target)
    def smallest(x, axis=0, keepdims=False):
        return x.min(axis=axis, keepdims=keepdims) - k

    @hybrid(target=target)
    def where_max(x, axis=0):
        return np.argmax(x, axis=axis) + int(k)

    @hybrid(target=target)
    def running(x, axis=0):
        return np.cumsum(x, axis=axis) * k

    @hybrid(target=target)
    def spread(x, axis=0, keepdims=False):
        return np.std(x, axis=axis, keepdims=keepdims) + k

    @hybrid(target=target)
    def variance(x, axis=0):
        return np.var(x * k, axis=axis)

    @hybrid(target=target)
    def peak_to_peak(x, axis=0):
        return np.amax(x, axis=axis) - np.amin(x, axis=axis) + k

    @hybrid(target=target)
    def weighted(x, y, axis=0):
        return np.sum(x * y, axis=axis) / k

    @hybrid(target=target)
    def joined(x, y, axis=0):
        return np.concatenate((x * k, y), axis=axis)

    @hybrid(target=target)
    def widened(x, axis=0):
        return np.expand_dims(x, axis) * k

    @hybrid(target=target)
    def any_above(x, axis=0, keepdims=False):
        return np.any(x > k, axis=axis, keepdims=keepdims)

    @hybrid(target=target)
    def sorted_along(x, axis=-1):
        return np.sort(x * k, axis=axis)

    @hybrid(target=target)
    def affine(x, y):
        return x * k + y

    @hybrid(target=target)
    def relu_scaled(x, s):
        return np.maximum(x, 0) * s + k

    @hybrid(target=target)
    def choose(x, y):
        return np.where(x > k, x, y)

    @hybrid(target=target)
    def squared_error(pred, truth):
        diff = pred - truth
        return np.sum(diff ** 2) * k

    @hybrid(target=target)
    def softmax(x, axis=-1):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True) * k

    @hybrid(target=target)
    def scaled_norm(x, axis=1):
        return x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True) + k)

    return [total, average, largest, smallest, where_max, running, spread, variance,
            peak_to_peak, weighted, joined, widened, any_above, sorted_along, affine,
            relu_scaled, choose, squared_error, softmax, scaled_norm]


DTYPES = (np.float32, np.float64, np.int32)
FLOATS = (np.float32, np.float64)
INTEGER_SAFE = {"total", "largest", "smallest", "where_max", "running", "peak_to_peak",
                "joined", "widened", "any_above", "sorted_along", "affine", "choose"}
"""Functions whose numpy result does not depend on the summation order for int32 input
(everything else gets floating-point inputs only)."""


def variants(fn: HybridFunction, count: int) -> list[tuple[tuple, dict]]:
    """``count`` argument sets for ``fn``: dtypes, axes and keepdims mixed."""
    name = fn.__name__
    params = list(fn.__signature__.parameters)
    dtypes = DTYPES if name in INTEGER_SAFE else FLOATS
    rng = np.random.default_rng(sum(map(ord, name)))  # the same in every process
    out = []
    for i in range(count):
        dtype = dtypes[i % len(dtypes)]
        x = (rng.standard_normal((5, 7)) * 4).astype(dtype)
        args: tuple = (x,)
        if params[1:2] in (["y"], ["truth"]):
            y = (rng.standard_normal((5, 7)) * 4).astype(dtypes[(i + 1) % len(dtypes)])
            args = (x, y)
        elif params[1:2] == ["s"]:
            args = (x, 1.5 + i)
        kwargs: dict = {}
        if "axis" in params:
            kwargs["axis"] = (0, 1, -1)[i % 3]
        if "keepdims" in params:
            kwargs["keepdims"] = bool(i // 2 % 2)
        out.append((args, kwargs))
    return out


def check(fn: HybridFunction, args: tuple, kwargs: dict) -> None:
    """``fn(*args, **kwargs)`` equals the plain Python function's result."""
    got = fn(*args, **kwargs)
    want = fn.__wrapped__(*args, **kwargs)
    got_array, want_array = np.asarray(got), np.asarray(want)
    assert got_array.dtype == want_array.dtype, (fn.__name__, kwargs)
    assert got_array.shape == want_array.shape, (fn.__name__, kwargs)
    np.testing.assert_allclose(got_array, want_array, rtol=2e-5, atol=1e-5,
                               err_msg=f"{fn.__name__}{kwargs}")


def run_threads(work: Callable[[int], None], count: int = THREADS) -> list[str]:
    """Run ``work(i)`` in ``count`` threads started together; the failures' tracebacks."""
    start = threading.Barrier(count)
    failures: list[str] = []

    def body(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException:  # reported by the main thread
            failures.append(traceback.format_exc())

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def stress_round(functions: list[HybridFunction], n_variants: int, steady_calls: int
                 ) -> list[str]:
    """All threads make the first calls of ``functions`` at once (groups of threads
    start on the same function), then call them with other variants."""
    calls = {fn: variants(fn, n_variants) for fn in functions}

    def work(i: int) -> None:
        order = functions[(i % 4) * 5:] + functions[:(i % 4) * 5]
        for j, fn in enumerate(order):
            check(fn, *calls[fn][(i + j) % n_variants])
        for step in range(steady_calls):
            fn = order[(step * 7 + i) % len(order)]
            check(fn, *calls[fn][(i + step) % n_variants])

    return run_threads(work)


def assert_no_failures(failures: list[str]) -> None:
    assert not failures, f"{len(failures)} threads failed; first:\n" + failures[0]


def test_first_calls_from_16_threads_on_20_functions():
    for _ in range(5):  # round 0 compiles everything; later rounds load from disk
        assert_no_failures(stress_round(make_functions(3.0), n_variants=3, steady_calls=20))


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(8))
def test_first_calls_from_16_threads_on_20_functions_cold(round_):
    functions = make_functions(1.0 + round_)  # a new k: every kernel compiled again
    assert_no_failures(stress_round(functions, n_variants=6, steady_calls=60))
    warm = make_functions(1.0 + round_)  # the same k, fresh functions: disk-cache hits
    assert_no_failures(stress_round(warm, n_variants=6, steady_calls=60))


def test_a_key_computed_before_another_thread_learns_by_value_is_retried(monkeypatch):
    @hybrid(target="cpu", cache=False)
    def total(x, axis=0):
        return np.sum(x, axis=axis)

    entered, released = threading.Event(), threading.Event()
    original = HybridFunction._compile

    def compile_(self, key, specs):
        if self is total and dict(key)["x"][1] == "float32" and not released.is_set():
            entered.set()
            released.wait(60)  # meanwhile the float64 call finds that 'axis' is by value
        return original(self, key, specs)

    monkeypatch.setattr(HybridFunction, "_compile", compile_)
    x = np.arange(12.0).reshape(3, 4)
    failures: list[str] = []

    def first() -> None:
        try:
            check(total, (x.astype(np.float32),), {"axis": 1})
        except BaseException:
            failures.append(traceback.format_exc())

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(60)
    check(total, (x,), {"axis": 0})
    released.set()
    thread.join()
    assert not failures, failures[0]


def test_threads_asking_for_one_kernel_share_one_compilation(monkeypatch):
    from pyasc.backend.llvm.backend import LLVMBackend

    built: dict[tuple, int] = {}
    compiled: dict[str, int] = {}
    build, compile_ = HybridFunction._compile, LLVMBackend.compile

    def counted_build(self, key, specs):
        built[key] = built.get(key, 0) + 1
        return build(self, key, specs)

    def counted_compile(self, program):
        compiled[program.cache_key] = compiled.get(program.cache_key, 0) + 1
        return compile_(self, program)

    monkeypatch.setattr(HybridFunction, "_compile", counted_build)
    monkeypatch.setattr(LLVMBackend, "compile", counted_compile)

    @hybrid(target="cpu", cache=False)
    def total(x, axis=0):
        return np.sum(x, axis=axis)

    x = np.arange(12.0).reshape(3, 4)
    assert_no_failures(run_threads(lambda i: check(total, (x,), {"axis": i % 2})))
    # the key with 'axis' as a run-time scalar (compiling it finds 'axis' must be by
    # value), then one key per axis value: each built once, each kernel compiled once
    assert sorted(built.values()) == [1, 1, 1]
    assert sorted(compiled.values()) == [1, 1]


def test_first_calls_on_ascend_sim_from_threads(monkeypatch):
    monkeypatch.setenv("PYASC_SIM_OPT", "-O0")  # C++ builds: keep them short

    @hybrid(target="ascend-sim")
    def affine(x, y):
        return x * 2.0 + y

    @hybrid(target="ascend-sim")
    def total(x, axis=0):
        return np.sum(x, axis=axis)

    x = np.linspace(-1, 1, 96, dtype=np.float32).reshape(8, 12)
    calls = [(affine, (x, x[::-1].copy()), {}), (total, (x,), {"axis": 1})]

    def work(i: int) -> None:
        for fn, args, kwargs in calls[i % 2:] + calls[:i % 2]:
            check(fn, args, kwargs)

    assert_no_failures(run_threads(work, count=6))


def test_fresh_processes_making_first_calls_from_threads():
    """Two fresh processes at once on one empty disk cache (their threads import the
    compiler lazily, both store the same kernels), then a third finding them all."""
    def spawn() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", FRESH_PROCESS, str(HERE)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ))

    for batch in ([spawn(), spawn()], [spawn()]):
        for p in batch:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            assert out.startswith("0 "), out
