"""The cost of the profiler hook on the fastest call, no profile active.

Run it under two checkouts, alternating, and compare the minima (the hook's cost is
below the noise of one run on a shared machine)::

    for i in 1 2 3; do
        PYTHONPATH=<checkout before> python benchmarks/profiler_overhead.py before
        PYTHONPATH=<checkout after> python benchmarks/profiler_overhead.py after
    done

It also times ``with Profile()`` active, which takes the recorded path.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from pyasc import hybrid


def per_call_ns(fn, a, b, calls: int = 20000, samples: int = 15) -> list[float]:
    """``samples`` measurements of ``calls`` calls each, in ns per call."""
    out = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(a, b)
        out.append((time.perf_counter_ns() - t0) / calls)
    return out


def main() -> None:
    @hybrid(target="cpu")
    def add(a, b):
        return a + b

    a = b = np.ones(8, np.float32)
    for _ in range(1000):
        add(a, b)
    label = sys.argv[1] if len(sys.argv) > 1 else "this checkout"
    times = per_call_ns(add, a, b)
    print(f"{label}: median {statistics.median(times):.0f} ns/call, min {min(times):.0f}")
    try:
        from pyasc import profiler
    except ImportError:
        return
    with profiler.Profile():
        times = per_call_ns(add, a, b, calls=2000, samples=5)
    print(f"{label}, profile active: median {statistics.median(times):.0f} ns/call")


if __name__ == "__main__":
    main()
