"""The CPU thread pool itself (``pyasc.backend.llvm.pool`` loaded by ``runtime.threads``):
the ``PYASC_NUM_THREADS`` rule in Python and in the pool, the counters and the work
threshold, fork, shutdown and interpreter exit, concurrent callers, errors at chunk edges."""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.runtime import threads

REPO = Path(__file__).resolve().parents[2]
DEF, CAP = 3, threads.MAX_THREADS
"""The default thread count a forked child configures (so falling back to it shows),
the most threads a loop uses."""
ENV_CASES = [("2", 2), ("1", 1), ("+4", 4), (" 2", 2), ("\t\n4", 4), ("08", 8), ("0", DEF),
             ("-2", DEF), ("", DEF), ("abc", DEF), ("2x", DEF), ("2 ", DEF), ("2\n", DEF),
             ("0x10", DEF), ("1_0", DEF), ("\u0665", DEF), ("\x1c2", DEF), ("300", CAP),
             ("9" * 25, CAP), ("-" + "9" * 25, DEF)]
"""(``PYASC_NUM_THREADS``, threads of a large loop): ``strtol``'s rule -- C whitespace and
a sign before ASCII digits, nothing after -- a value < 1 ignored, capped at 256."""
X = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)


@hybrid
def relu(x):
    return np.maximum(x, 0)


@hybrid
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


@hybrid(boundscheck=True)
def pick(a, b, ia, ib):
    out = np.zeros(ia.shape[0], np.float32)
    for i in range(ia.shape[0]):
        out[i] = a[ia[i]] * b[ib[i]]
    return out


def in_child(fn, *args, timeout: float = 60.0):
    """``fn(*args)`` in a forked child process (a copy of this process's pool)."""
    with multiprocessing.get_context("fork").Pool(1) as children:
        return children.apply_async(fn, args).get(timeout)  # then kills the child


@contextmanager
def calls_in_background(fn, x):
    """A Python thread calls ``fn(x)`` until the block ends; yields its list of
    "result was right" flags."""
    expected, stop, ok = fn(x).tobytes(), threading.Event(), []

    def loop() -> None:
        while not stop.is_set():
            ok.append(fn(x).tobytes() == expected)

    runner = threading.Thread(target=loop)
    runner.start()
    try:
        yield ok
    finally:
        stop.set()
        runner.join()


def _workers_for(value: str) -> tuple[int, int, int, int]:
    """In a fresh child pool: (Python rule, workers before, workers after, splits)."""
    threads.pool().configure(default_threads=DEF)
    os.environ["PYASC_NUM_THREADS"] = value
    before = threads.stats()
    with threads.minimum_work(0):
        assert relu(X).tobytes() == np.maximum(X, 0).tobytes()
    after = threads.stats()
    return threads.num_threads(), before.workers, after.workers, after.splits - before.splits


@pytest.mark.parametrize("value, expected", ENV_CASES)
def test_pool_and_python_read_num_threads_alike(value, expected):
    relu(X)  # compiled here, once, not in every child
    rule, before, after, splits = in_child(_workers_for, value)
    assert (before, after, splits) == (0, expected - 1, int(expected > 1))
    assert rule == expected, "threads.num_threads() disagrees with the pool"


def test_default_is_the_affinity_mask(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "0")
    assert threads.num_threads() == threads.stats().default_threads == threads.default_threads()


def _follow_changes(expected: bytes) -> list[tuple[int, int]]:
    threads.pool().configure(default_threads=6)
    out = []
    with threads.minimum_work(0):
        for value in ("2", "4", "1", "bad", "3"):
            os.environ["PYASC_NUM_THREADS"] = value
            before = threads.stats().splits
            assert gelu(X).tobytes() == expected
            out.append((threads.stats().workers, threads.stats().splits - before))
    return out


def test_env_change_applies_to_the_next_call():
    # (workers, splits) per call: workers only grow, "1" splits nothing, "bad" -> default
    found = in_child(_follow_changes, gelu(X).tobytes())
    assert found == [(1, 1), (3, 1), (3, 0), (5, 1), (5, 1)]


def _loops(fn, *args) -> list[tuple[int, int]]:
    """(trip count, cost) of each pool call in ``fn``'s kernel for ``args``."""
    text = fn.kernel(*args).llvm_ir
    return [(int(n), int(c)) for n, c in
            re.findall(r"call i32 @pyasc\.rt\.parallel_for\(.*, i64 (\d+), i64 (\d+), ptr [^)]*\)",
                       text)]


def test_splits_follow_the_work_threshold(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "2")
    [(trips, cost)] = _loops(relu, X[:5000])
    assert trips == 5000
    for units, split in ((trips * cost, 1), (trips * cost + 1, 0), (0, 1)):
        before = threads.stats().splits
        with threads.minimum_work(units):
            assert threads.stats().min_work == units
            relu(X[:5000])
        assert threads.stats().splits - before == split, units
    assert threads.stats().min_work == threads.DEFAULT_MIN_WORK
    ia = np.zeros(50, np.int64)
    # the user's loop only: the zero fill is dead (every element written before any
    # read, the dead-fills pass)
    assert len(_loops(pick, X, X, ia, ia)) == 1
    with threads.minimum_work(0):
        before = threads.stats().splits
        relu(X[:1])  # one iteration: never split
        assert threads.stats().splits == before
        pick(X, X, ia, ia)
        assert threads.stats().splits == before + 1


def _after_fork(x: np.ndarray) -> tuple[int, bytes, int, int]:
    first = threads.stats()
    with threads.minimum_work(0):
        out = gelu(x).tobytes()
    after = threads.stats()
    return first.workers, out, after.workers, after.splits - first.splits


def test_fork_while_another_thread_runs_split_loops(monkeypatch):
    """The child has none of the parent's workers and inherits the pool's locks as
    they were (busy held, perhaps the mutex): it resets them, so its own loop neither
    deadlocks nor runs inline.  The parent's pool is unaffected."""
    monkeypatch.setenv("PYASC_NUM_THREADS", "2")
    expected = gelu(X).tobytes()
    with threads.minimum_work(0), calls_in_background(relu, np.tile(X, 8)) as ok:
        found = [in_child(_after_fork, X, timeout=30) for _ in range(6)]
        assert threads.stats().workers >= 1
    assert all(ok) and found == [(0, expected, 1, 1)] * 6
    assert _after_fork(X)[1:] == (expected, threads.stats().workers, 1)


def _shutdown_while_running(x: np.ndarray) -> tuple[int, int, int, bool]:
    with threads.minimum_work(0), calls_in_background(gelu, x) as ok:
        while len(ok) < 5:
            time.sleep(0.001)
        started = threads.stats().workers
        threads.pool().shutdown()  # waits for the running loop
        time.sleep(0.02)
        after, count = threads.stats(), len(ok)
        while len(ok) < count + 5:
            time.sleep(0.001)
    return started, after.workers, threads.stats().splits - after.splits, all(ok)


def test_shutdown_while_a_loop_runs_then_later_loops_run_inline(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "2")
    assert in_child(_shutdown_while_running, X, timeout=30) == (1, 0, 0, True)


EXIT_SCRIPT = """
import sys, threading
import numpy as np
from pyasc.runtime import threads
sys.path.insert(0, "examples")
from gelu import gelu

x = np.linspace(-4, 4, 1 << 18, dtype=np.float32)
if sys.argv[1] == "daemon":  # still calling split loops while the interpreter exits
    threading.Thread(target=lambda: [gelu(x) for _ in iter(int, 1)], daemon=True).start()
for _ in range(20):
    y = gelu(x)
print(threads.stats().splits, threads.stats().workers, float(y.astype(np.float64).sum()))
"""


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> str:
    """One disk cache for the exit runs: the first compiles, the others load the kernel
    and the pool's code from it."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("mode", ["plain", "plain", "plain", "daemon", "daemon"])
def test_interpreter_exit_joins_the_workers(shared_cache, mode):
    env = dict(os.environ, PYASC_NUM_THREADS="2", PYASC_CACHE_DIR=shared_cache)
    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, mode], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    splits, workers, total = done.stdout.split()
    # the default threshold splits it.  With the daemon, a loop finds the pool busy at
    # times, and on a loaded machine (CI) every one of the 20 may: the daemon thread can be
    # descheduled holding the pool, so no split is counted (seen once, splits == 0).  What
    # the daemon mode tests is the exit, and the result below.
    assert int(workers) == 1 and (int(splits) == 20 if mode == "plain" else int(splits) >= 0)
    x = np.linspace(-4, 4, 1 << 18, dtype=np.float32)
    assert float(total) == float(gelu(x).astype(np.float64).sum())


def test_concurrent_callers_with_errors_and_different_kernels(monkeypatch):
    """One thread fails and recovers, two others run other kernels at other sizes:
    whoever finds the pool busy runs inline; nobody sees another's error or data."""
    monkeypatch.setenv("PYASC_NUM_THREADS", "3")
    a, b = np.arange(10, dtype=np.float32), np.arange(20, dtype=np.float32)
    ia, ib = np.arange(2000) % 10, np.arange(2000) % 20
    bad = ia.copy()
    bad[1500] = 10
    sizes = (1, 2, 5, 4097, 1 << 16)
    refs = {n: (relu(X[:n]).tobytes(), gelu(X[:n]).tobytes()) for n in sizes}

    def failing() -> set[str]:
        messages = set()
        for _ in range(100):
            with pytest.raises(IndexError) as info:
                pick(a, b, bad, ib)
            messages.add(str(info.value))
            assert pick(a, b, ia, ib).tobytes() == (a[ia] * b[ib]).tobytes()  # no stale error
        return messages

    def computing(k: int) -> bool:
        return all(relu(X[:n]).tobytes() == refs[n][0] and gelu(X[:n]).tobytes() == refs[n][1]
                   for r in range(40) for n in sizes[(k + r) % len(sizes):])

    with threads.minimum_work(0), ThreadPoolExecutor(3) as ex:
        before = threads.stats().splits
        jobs = [ex.submit(failing), ex.submit(computing, 1), ex.submit(computing, 2)]
        messages, ok1, ok2 = (j.result(timeout=60) for j in jobs)
    message = messages.pop() if len(messages) == 1 else f"{len(messages)} messages"
    assert "index 10 is out of bounds for axis 0 with size 10 (array 'a')" in message
    assert ":18\n" in message
    assert ok1 and ok2 and threads.stats().splits > before


def _edges(n: int, count: int) -> list[int]:
    """The first iteration of every chunk but the first, by the pool's documented rule."""
    chunks = min(n, 4 * count)
    q, r = divmod(n, chunks)
    return [c * q + min(c, r) for c in range(1, chunks)]


@pytest.mark.parametrize("count", [2, 3, 7])
def test_errors_at_chunk_edges(monkeypatch, count):
    """One array fails at the last iteration of a chunk, the other at the first of the
    next: the earlier one's error wins (a gap between chunks would let the later win)."""
    monkeypatch.setenv("PYASC_NUM_THREADS", str(count))
    a, b = np.arange(10, dtype=np.float32), np.arange(20, dtype=np.float32)
    n = 1003  # not a multiple of the chunk count: chunks differ in length
    ia, ib = np.arange(n) % 10, np.arange(n) % 20
    with threads.minimum_work(0):
        before = threads.stats().splits
        for edge in _edges(n, count):
            for column in ("18", "29"):  # a[...] fails first, then b[...] first
                bad_a, bad_b = ia.copy(), ib.copy()
                early, late = (bad_a, bad_b) if column == "18" else (bad_b, bad_a)
                early[edge - 1] = late[edge] = 20
                # the earlier iteration's error wins, with its own values
                size, name = ("10", "a") if column == "18" else ("20", "b")
                with pytest.raises(IndexError) as info:
                    pick(a, b, bad_a, bad_b)
                assert f"index 20 is out of bounds for axis 0 with size {size} (array " \
                       f"'{name}')" in str(info.value)
                assert f":{column}\n" in str(info.value)
        assert pick(a, b, ia, ib).tobytes() == (a[ia] * b[ib]).tobytes()
        assert threads.stats().splits > before


def test_compile_time_work_threshold_is_the_pools_default():
    from pyasc.ir.passes.loop_cost import INLINE_WORK

    assert INLINE_WORK == threads.DEFAULT_MIN_WORK


@hybrid
def mean_square(a, b):
    return np.mean((a - b) ** 2)


def test_lane_loops_of_a_sum_are_not_dispatched_to_the_pool():
    # the 16-iteration lane loop inside the block loop of a sum is independent, but
    # splitting it would call the pool once per 16 elements: only real loops are split
    a, b = X, X[::-1].copy()
    assert "parallel_for" not in mean_square.llvm_ir(a, b)
    assert mean_square(a, b) == pytest.approx(np.mean((a - b) ** 2), rel=1e-5)
    assert "parallel_for" in relu.llvm_ir(X)


@hybrid
def total(x):
    return np.sum(x)


@hybrid(dynamic_shape=True)
def total_dynamic(x):
    return np.sum(x)


def _sums(arrays: list) -> list[bytes]:
    with threads.minimum_work(0):
        return [np.asarray(f(a)).tobytes() for a in arrays for f in (total, total_dynamic)]


@pytest.mark.parametrize("count", ["1", "2", "3"])
def test_long_sums_are_split_in_fixed_chunks(monkeypatch, count):
    # a whole-array float sum runs its 64 Ki-element chunks on the pool and absorbs the
    # chunks' compensated sums in order: the same bits for every thread count
    from pyasc.ir.passes.lower_group_reduce import SPLIT

    rng = np.random.default_rng(3)
    sizes = [SPLIT - 1, SPLIT, SPLIT + 1, 3 * SPLIT + 17]
    arrays = [rng.standard_normal(n).astype(np.float32) + 1 for n in sizes]
    arrays.append(np.concatenate([arrays[1], [np.inf]]).astype(np.float32))
    arrays.append(np.concatenate([[np.nan], arrays[2]]).astype(np.float32))
    monkeypatch.setenv("PYASC_NUM_THREADS", "1")
    expected = _sums(arrays)
    monkeypatch.setenv("PYASC_NUM_THREADS", count)
    assert _sums(arrays) == expected
    assert "parallel_for" in total.llvm_ir(arrays[3])
    for a in arrays:
        exact = np.sum(a.astype(np.float64))
        got = total(a)
        assert got == exact or np.isnan(exact) and np.isnan(got) or \
            abs(got - exact) <= 4 * np.spacing(np.float32(abs(exact)))


LOADER_SCRIPT = """
import sys
from pyasc.runtime import pool_code, threads

before = "pyasc.backend.llvm" in sys.modules
registered = pool_code._LOADER[0]
calls = []

def counting():
    calls.append(1)
    return registered()

pool_code.provide(counting)
threads.stats()
threads.stats()
print(before, len(calls), "pyasc.backend.llvm.runtime_code" in sys.modules,
      threads.runtime_symbol(threads.ENTRY) > 0)
"""


def test_the_runtime_loads_the_pool_through_the_registered_loader():
    """``runtime.threads`` imports no backend: the ``pyasc`` package registers the CPU
    backend's loader, which imports the backend only when the pool is first needed; the
    pool loads through it exactly once."""
    done = subprocess.run([sys.executable, "-c", LOADER_SCRIPT], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "1", "True", "True"]
