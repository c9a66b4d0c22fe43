"""Compiled kernels run without the GIL, so calls from several threads run in parallel.

While one thread is inside a long kernel call (a few hundred milliseconds), another
thread keeps running Python code: it records the time of each step, and steps must land
well inside the call (away from its first and last 50 ms, where a thread switch before
the kernel starts or after it ends could explain them).  With the GIL held for the
whole call no step can.  Both ways into a kernel are checked: the native entry
(``fn(x, reps)``) and the ctypes caller (``fn.kernel(...)([...])``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from pyasc import hybrid

MARGIN = 0.05


@hybrid(target="cpu")
def heavy(x, reps):
    acc = 0.0
    for i in range(reps):
        acc += np.sum(np.sin(x + i))
    return acc


X = np.linspace(0, 1, 1 << 16)


def steps_inside(call: Callable[[], object]) -> tuple[int, float]:
    """(steps another thread made well inside ``call()``, the call's duration)."""
    window: list[float] = []
    steps: list[float] = []
    finished = threading.Event()

    def run() -> None:
        window.append(time.perf_counter())
        call()
        window.append(time.perf_counter())
        finished.set()

    runner = threading.Thread(target=run)
    runner.start()
    while not finished.is_set():
        steps.append(time.perf_counter())
        time.sleep(0.001)
    runner.join()
    start, end = window
    inside = [t for t in steps if start + MARGIN < t < end - MARGIN]
    return len(inside), end - start


def _reps_for(seconds: float) -> int:
    heavy(X, 1)
    t0 = time.perf_counter()
    heavy(X, 20)
    per_rep = (time.perf_counter() - t0) / 20
    return max(20, int(seconds / per_rep))


@pytest.mark.parametrize("way", ["native entry", "ctypes caller"])
def test_other_threads_run_python_while_a_kernel_runs(way):
    reps = _reps_for(0.4)
    kernel = heavy.kernel(X, reps)
    call = (lambda: heavy(X, reps)) if way == "native entry" else \
        (lambda: kernel([X, reps]))
    if way == "native entry":
        assert heavy._fast is not None  # the call above went through the native entry
    inside, duration = steps_inside(call)
    assert duration > 3 * MARGIN, "the kernel was too short to tell"
    assert inside >= 3, f"no Python ran during a {duration:.3f} s kernel call"
