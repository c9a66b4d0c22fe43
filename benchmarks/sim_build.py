"""Compile time of ascend-sim libraries: the host C++ build of small generated kernels.

    python benchmarks/sim_build.py [--kernels 6] [--opt=-O0]

Compiles ``--kernels`` different small programs for ``target="ascend-sim"`` into a fresh
disk cache (so every one is a real build; the precompiled header and the launch object
of the configuration are built by the first and reused by the others) and prints, per
build, the CPU seconds of the compiler processes (``RUSAGE_CHILDREN``, user + sys) and of
pyasc itself (``time.process_time``: lowering, code generation), then the medians of the
builds after the first.  CPU time, not wall time: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _program(i: int):
    """The i-th program: an elementwise formula and a row sum (different constants, so
    different sources and cache keys)."""
    import numpy as np
    from pyasc import hybrid

    def f(x, y):
        return np.exp(x) * (2.0 + i) + y.sum(axis=1, keepdims=True)
    return hybrid(f, target="ascend-sim")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=6)
    parser.add_argument("--opt", default="-O0", help="PYASC_SIM_OPT of the builds")
    args = parser.parse_args()
    os.environ["PYASC_CACHE_DIR"] = tempfile.mkdtemp(prefix="pyasc-simbuild-")
    os.environ["PYASC_SIM_OPT"] = args.opt
    import numpy as np

    x = np.ones((64, 64), np.float32)
    rows = []
    for i in range(args.kernels):
        fn = _program(i)
        c0, p0 = _children_cpu(), time.process_time()
        fn(x, x)
        rows.append((_children_cpu() - c0, time.process_time() - p0))
        print(f"build {i}: compiler CPU {rows[-1][0]:.2f} s, pyasc CPU {rows[-1][1]:.2f} s",
              file=sys.stderr)
    rest = rows[1:] or rows
    print(f"median of builds 2..{len(rows)}: compiler CPU "
          f"{statistics.median(r[0] for r in rest):.2f} s, pyasc CPU "
          f"{statistics.median(r[1] for r in rest):.2f} s; first build (with the "
          f"configuration's shared files) {rows[0][0]:.2f} s compiler CPU")


if __name__ == "__main__":
    main()
