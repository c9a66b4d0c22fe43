"""Per-call dispatch overhead, and compile / disk-cache times of relu in fresh processes.

    python benchmarks/overhead.py [--runs 3] [--markdown]

Dispatch: a call with two small float32 arrays through pyasc, a numpy ufunc, Numba and
ctypes (bare and with the two array pointers), best of 5 timeit repetitions.  Compile: a
fresh interpreter imports the tool, wraps ``kernels.relu`` and calls it on 1024 floats, once
with an empty disk cache (cold compile) and once more with the cache the first run filled
(a disk-cache hit); Numba is measured the same way with ``cache=True``.  pyasc and Numba
parts print why they were skipped when the tool is unavailable.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

import numba_impl
import pyasc_impl
import report
from c_impl import C_DIR, compile_shared

HERE = Path(__file__).resolve().parent
SMALL = 16  # elements per array in the dispatch measurement


def add(x, y):
    """The kernel whose dispatch is measured."""
    return x + y


def per_call(fn: Callable[[], object]) -> float:
    """Best seconds per call of ``fn()`` over 5 timeit repetitions of an autoranged count."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number


def _candidates(x, y, tmp: str) -> list[tuple[str, Callable[[], object]]]:
    """(label, zero-argument call) for numpy, ctypes and (if installed) Numba."""
    z = np.empty_like(x)
    lib_path = Path(tmp) / "libnoop.so"
    compile_shared([C_DIR / "noop.c"], lib_path, ())
    lib = ctypes.CDLL(str(lib_path))
    lib.noop2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    found = [
        ("numpy ufunc np.add(x, y)", lambda: np.add(x, y)),
        ("numpy ufunc np.add(x, y, out=z)", lambda: np.add(x, y, out=z)),
        ("ctypes bare call noop()", lib.noop),
        ("ctypes noop2(x.ctypes.data, y.ctypes.data)",
         lambda: lib.noop2(x.ctypes.data, y.ctypes.data)),
    ]
    if numba_impl.available() is None:
        import numba

        found.append(("Numba njit add(x, y)", _compiled(numba.njit(add), x, y)))
    return found


def _compiled(fn: Callable, x, y) -> Callable[[], object]:
    fn(x, y)  # compile outside the timed calls
    return lambda: fn(x, y)


def dispatch_rows(tmp: str) -> list[list[str]]:
    """One row per way of calling ``add`` on two float32[SMALL] arrays."""
    x = np.arange(SMALL, dtype=np.float32)
    y = np.ones(SMALL, dtype=np.float32)
    rows = [["call", "time per call"]]
    for label, call in _candidates(x, y, tmp):
        rows.append([label, report.fmt_time(per_call(call))])
    label = "pyasc hybrid add(x, y)"
    pyasc, reason = pyasc_impl.load()
    if pyasc is None:
        return rows + [[label, reason or "unavailable"]]
    try:
        rows.append([label, report.fmt_time(per_call(_compiled(pyasc.hybrid(add), x, y)))])
    except Exception as exc:  # pyasc may be unfinished: report, do not crash
        rows.append([label, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"])
    return rows


_CHILD = """
import json, sys, time
import numpy as np
sys.path.insert(0, {here!r})
import kernels
t0 = time.perf_counter()
{import_tool}
t1 = time.perf_counter()
fn = {wrap}(kernels.relu)
x = np.linspace(-1, 1, 1024, dtype=np.float32)
t2 = time.perf_counter(); fn(x); t3 = time.perf_counter(); fn(x); t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "steady": t4 - t3}}))
"""

TOOLS = {
    "pyasc": ("from pyasc import hybrid", "hybrid", "PYASC_CACHE_DIR"),
    "numba": ("import numba", "numba.njit(cache=True)", "NUMBA_CACHE_DIR"),
}


class ChildFailed(Exception):
    """The fresh interpreter failed; the message is the last line of its stderr."""


def child_run(tool: str, cache_dir: str) -> dict[str, float]:
    """Time one fresh interpreter compiling (or loading) relu with ``tool``."""
    import_tool, wrap, cache_var = TOOLS[tool]
    code = _CHILD.format(here=str(HERE), import_tool=import_tool, wrap=wrap)
    env = dict(os.environ, **{cache_var: cache_dir})
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)]
        raise ChildFailed(lines[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_row(tool: str, runs: int) -> list[str]:
    """Median over ``runs`` of: import time, cold first call, cache-hit first call, steady."""
    cold, hit = [], []
    try:
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix=f"pyasc-bench-{tool}-cache-") as cache:
                cold.append(child_run(tool, cache))
                hit.append(child_run(tool, cache))
    except ChildFailed as exc:  # the tool is missing or broken: say so in the row
        return [tool, str(exc), "-", "-", "-"]

    def med(samples, key):
        return report.fmt_time(statistics.median(s[key] for s in samples))

    return [tool, med(cold, "import"), med(cold, "first"), med(hit, "first"), med(hit, "steady")]


def main(argv: list[str] | None = None) -> None:
    """Print the dispatch and compile tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per measurement")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyasc-bench-noop-") as tmp:
        dispatch = dispatch_rows(tmp)
    compile_table = [["tool", "import", "cold 1st call (compile)", "disk-cache hit 1st call",
                      "2nd call"]]
    compile_table += [compile_row(tool, args.runs) for tool in TOOLS]
    heading = "## " if args.markdown else ""
    print(f"{heading}Per-call overhead, two float32[{SMALL}] arrays (best of 5)\n")
    print(report.render(dispatch, args.markdown))
    print(f"\n{heading}relu in a fresh process, 1024 floats (median of {args.runs})\n")
    print(report.render(compile_table, args.markdown))


if __name__ == "__main__":
    main()
