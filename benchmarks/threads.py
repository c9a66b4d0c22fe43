"""Calls from several threads: compiled kernels run in parallel, first calls compile once.

    python benchmarks/threads.py [--repeats 5] [--markdown]

Parallel calls: a fixed number of calls of a compute-bound kernel (``np.sum(np.sin(x) *
np.cos(x))`` over 2**17 float64, about a millisecond) shared by 1, 2, ... threads, with
``PYASC_NUM_THREADS=1`` so each call stays on its own thread: time for all calls and the
speed-up over one thread, and the process's CPU time over the wall time (how many
threads ran at once on average), for the native entry (``fn(x)``), the ctypes caller
(``fn.kernel(x)([x])``) and, as the GIL-bound reference, the same sum written as a
CPython loop over a list.  On an idle machine the compiled calls scale with the
threads and the CPython loop cannot.  On a loaded Linux machine with autogroup
scheduling (``/proc/sys/kernel/sched_autogroup_enabled``) the process gets one share of
the CPUs however many threads it runs, so neither scales: the second table is the
measure that holds there.

Python during a kernel: while one thread makes one 0.4 s call, another thread steps
(sleeping 1 ms between steps, so it needs little CPU); its steps per second inside the
call (away from its first and last 50 ms) relative to the same without a call.  Near 1:
the call leaves the GIL to others; 0: it holds the GIL (a ``ctypes.PyDLL`` call, the
reference); a CPython loop lets the other thread in at each 5 ms switch interval.

First calls: 20 fresh functions (reductions with a by-value ``axis=``), each called
with two argument sets, on an empty disk cache: all first calls made by one thread one
after the other, versus 16 threads making all of them at once (every thread every
call).  With one compilation per specialization (the others wait for it) the 16 threads
take about as long as one thread, not 16 times as long.

Medians over ``--repeats``; the machine is named in the output (timings on a shared
machine are noisy: compare the ratios).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np

import report

N = 1 << 17
CALLS = 64
FIRST_CALL_THREADS = 16


def _sum_sin_cos(x):
    return np.sum(np.sin(x) * np.cos(x))


def _python_sum(values: list[float]) -> float:
    return sum(math.sin(v) * math.cos(v) for v in values)


def run_split(call: Callable[[], object], threads: int, calls: int = CALLS
              ) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) for ``calls`` calls of ``call`` shared by
    ``threads`` threads."""
    start = threading.Barrier(threads + 1)

    def work(n: int) -> None:
        start.wait()
        for _ in range(n):
            call()

    pool = [threading.Thread(target=work, args=(calls // threads,)) for _ in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in pool:
        t.join()
    return time.perf_counter() - t0, time.process_time() - c0


def parallel_rows(pyasc, repeats: int) -> list[list[str]]:
    """One row per way of calling, one column per thread count."""
    counts = sorted({1, 2, max(2, len(os.sched_getaffinity(0)))})
    x = np.linspace(0.1, 1.5, N)
    fn = pyasc.hybrid(_sum_sin_cos)
    assert math.isclose(fn(x), _sum_sin_cos(x), rel_tol=1e-6)
    values = x[: N // 64].tolist()  # 64x fewer elements: the CPython loop is slow
    kernel = fn.kernel(x)
    calls = [("pyasc fn(x)  [native entry]", lambda: fn(x)),
             ("pyasc fn.kernel(x)([x])  [ctypes caller]", lambda: kernel([x])),
             ("CPython loop, 1/64 of the data  [holds the GIL]", lambda: _python_sum(values))]
    rows = [["call", *(f"{t} thread{'s' if t > 1 else ''}: time (speed-up, CPU/wall)"
                       for t in counts)]]
    for label, call in calls:
        call()
        runs = {t: [run_split(call, t) for _ in range(repeats)] for t in counts}
        wall = {t: statistics.median(w for w, _ in runs[t]) for t in counts}
        busy = {t: statistics.median(c / w for w, c in runs[t]) for t in counts}
        rows.append([label, *(f"{report.fmt_time(wall[t])} ({wall[1] / wall[t]:.2f}x, "
                              f"{busy[t]:.2f})" for t in counts)])
    return rows


def _heavy(x, reps):
    acc = 0.0
    for i in range(reps):
        acc += np.sum(np.sin(x + i))
    return acc


def _step_rate(call: Callable[[], object] | None, seconds: float) -> float:
    """Steps per second of this thread (1 ms sleeps) inside one ``call()`` made by
    another thread, away from its first and last 50 ms (``None``: with no call, for
    ``seconds``)."""
    window: list[float] = []
    finished = threading.Event()

    def run() -> None:
        window.append(time.perf_counter())
        if call is None:
            time.sleep(seconds)
        else:
            call()
        window.append(time.perf_counter())
        finished.set()

    worker = threading.Thread(target=run)
    worker.start()
    steps = []
    while not finished.is_set():
        time.sleep(0.001)
        steps.append(time.perf_counter())
    worker.join()
    start, end = window[0] + 0.05, window[1] - 0.05
    return sum(start < t < end for t in steps) / max(end - start, 1e-9)


def progress_rows(pyasc, repeats: int) -> list[list[str]]:
    """Another thread's progress inside one long call, relative to no call."""
    import ctypes

    x = np.linspace(0.1, 1.5, 1 << 16)
    fn = pyasc.hybrid(_heavy)
    fn(x, 1)
    t0 = time.perf_counter()
    fn(x, 20)
    reps = max(20, int(0.4 / ((time.perf_counter() - t0) / 20)))  # ~0.4 s per call
    kernel = fn.kernel(x, reps)
    values = x.tolist()
    loops = max(1, int(0.4 / _timed(lambda: _python_sum(values))))
    held = ctypes.PyDLL(None).usleep  # a C call that keeps the GIL
    calls = [("pyasc fn(x, reps)  [native entry]", lambda: fn(x, reps)),
             ("pyasc fn.kernel(x, reps)([x, reps])  [ctypes caller]",
              lambda: kernel([x, reps])),
             ("CPython loop  [holds the GIL, switching every 5 ms]",
              lambda: [_python_sum(values) for _ in range(loops)]),
             ("ctypes.PyDLL usleep(0.4 s)  [holds the GIL]", lambda: held(400_000))]
    rows = [["one 0.4 s call in a thread", "steps of another thread / steps with no call"]]
    for label, call in calls:
        ratios = [_step_rate(call, 0.4) / _step_rate(None, 0.4) for _ in range(repeats)]
        rows.append([label, f"{statistics.median(ratios):.2f}"])
    return rows


def _timed(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def make_functions(pyasc, k: float) -> list[Callable]:
    """20 fresh functions (five bodies, four captured constants: distinct cache keys)."""
    return [f for j in range(4) for f in _five(pyasc, k + j)]


def _five(pyasc, c: float) -> list[Callable]:
    def total(x, axis=0):
        return np.sum(x * c, axis=axis)

    def largest(x, axis=0, keepdims=False):
        return np.max(x, axis=axis, keepdims=keepdims) + c

    def average(x, axis=0):
        return np.mean(x, axis=axis) * c

    def running(x, axis=0):
        return np.cumsum(x, axis=axis) - c

    def spread(x, axis=0):
        return np.std(x, axis=axis) + c

    return [pyasc.hybrid(f) for f in (total, largest, average, running, spread)]


def first_calls(pyasc, threads: int, k: float) -> float:
    """Seconds for ``threads`` threads to make every first call (empty disk cache)."""
    os.environ["PYASC_CACHE_DIR"] = tempfile.mkdtemp(prefix="pyasc-bench-threads-")
    functions = make_functions(pyasc, k)
    x = np.linspace(-1, 1, 48).reshape(6, 8)
    calls = [(f, a, kw) for f in functions
             for a, kw in (((x.astype(np.float32),), {"axis": 0}), ((x,), {"axis": 1}))]

    def call_all(i: int) -> None:
        for f, a, kw in calls[i:] + calls[:i]:
            f(*a, **kw)

    return _timed_threads(call_all, threads)


def _timed_threads(work: Callable[[int], None], threads: int) -> float:
    start = threading.Barrier(threads + 1)
    pool = [threading.Thread(target=lambda i=i: (start.wait(), work(i)))
            for i in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    return time.perf_counter() - t0


def first_call_rows(pyasc, repeats: int) -> list[list[str]]:
    """1 thread vs 16 threads making every first call, each on fresh functions."""
    one, many = [], []
    for r in range(repeats):
        one.append(first_calls(pyasc, 1, 10.0 * r))
        many.append(first_calls(pyasc, FIRST_CALL_THREADS, 10.0 * r + 5))
    m1, m16 = statistics.median(one), statistics.median(many)
    return [["first calls of 20 functions x 2 argument sets (40 kernels)", "wall time"],
            ["1 thread, one after the other", report.fmt_time(m1)],
            [f"{FIRST_CALL_THREADS} threads at once, each making every call",
             f"{report.fmt_time(m16)} ({m16 / m1:.2f}x the 1-thread time)"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    os.environ["PYASC_NUM_THREADS"] = "1"
    import pyasc

    heading = "## " if args.markdown else ""
    cpus = len(os.sched_getaffinity(0))
    print(f"{heading}Calls from threads (machine: {report._cpu_model()}, {cpus} CPUs; "
          f"load average {os.getloadavg()[0]:.1f})\n")
    print(f"Parallel calls: {CALLS} calls shared by the threads, median of {args.repeats} "
          "(speed-up over 1 thread)\n")
    print(report.render(parallel_rows(pyasc, args.repeats), args.markdown))
    print(f"\nPython in another thread during calls, median of {args.repeats}\n")
    print(report.render(progress_rows(pyasc, args.repeats), args.markdown))
    print(f"\nFirst calls on an empty disk cache, median of {args.repeats}\n")
    print(report.render(first_call_rows(pyasc, args.repeats), args.markdown))


if __name__ == "__main__":
    main()
