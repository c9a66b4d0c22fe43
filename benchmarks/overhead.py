"""Per-call dispatch overhead, and import / compile / disk-cache times in fresh processes.

    python benchmarks/overhead.py [--runs 5] [--markdown]

Dispatch: a call with two small float32 arrays returning a new array, through pyasc (its
native entry; its recent native entries when calls alternate between two
specializations; its per-signature table when they cycle through more; keyword
arguments; the kernel's ctypes entry alone), a numpy ufunc, Numba and ctypes (bare and
with the two array pointers): the median over 15 timeit repetitions of an autoranged
number of calls, and the best repetition.

Fresh processes: an interpreter imports numpy, then the tool, wraps ``kernels.relu`` and
calls it on 1024 floats, once with an empty disk cache (cold compile) and once more with
the cache the first run filled (a disk-cache hit).  "pyasc, compiler preloaded" imports
the frontend compiler, passes, code generator and LLVM before the clock starts, so its
first call is the compilation alone; "compiler and thread pool preloaded" also loads
the thread pool's object code first (compiled once per machine and pyasc version and
kept in the disk cache, so only the very first kernel compiled on a machine pays for
it), leaving the compilation of relu itself.  Wall and CPU (process) times are reported: on a
shared machine the CPU time is the steadier figure.  pyasc and Numba parts print why
they were skipped when the tool is unavailable.
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
PYCACHE = str(Path(tempfile.gettempdir()) / "pyasc-bench-pycache")
"""Bytecode caches of the fresh interpreters (kept out of the source tree)."""
REPEATS = 15
CYCLE = (np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8)
"""dtypes of the specializations the dispatch rows call in turn."""


def add(x, y):
    """The kernel whose dispatch is measured."""
    return x + y


def per_call(fn: Callable[[], object]) -> tuple[float, float]:
    """(median, best) seconds per call of ``fn()`` over ``REPEATS`` timeit repetitions."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    times = [t / number for t in timer.repeat(repeat=REPEATS, number=number)]
    return statistics.median(times), min(times)


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


def _pyasc_candidates(pyasc, x, y) -> list[tuple[str, Callable[[], object]]]:
    """The ways pyasc dispatches a call, fastest first."""
    f = pyasc.hybrid(add)
    pairs = [(x.astype(t), y.astype(t)) for t in CYCLE]
    for a, b in pairs:
        f(a, b)

    def alternate() -> None:  # each call misses the native entry of the previous one
        f(*pairs[0])
        f(*pairs[1])

    def cycle() -> None:  # more specializations than recent native entries
        for a, b in pairs:
            f(a, b)

    kernel = f.kernel(x, y)
    return [
        ("pyasc hybrid add(x, y)  [native entry]", lambda: f(x, y)),
        ("pyasc alternating f32/f64 calls, per call  [recent native entries]", alternate),
        (f"pyasc cycling {len(CYCLE)} dtypes, per call  [signature table]", cycle),
        ("pyasc add(x=x, y=y)  [keywords placed for the native entry]",
         lambda: f(x=x, y=y)),
        ("pyasc kernel([x, y])  [ctypes entry, no dispatch]", lambda: kernel([x, y])),
    ]


def dispatch_rows(tmp: str) -> list[list[str]]:
    """One row per way of calling ``add`` on two float32[SMALL] arrays."""
    x = np.arange(SMALL, dtype=np.float32)
    y = np.ones(SMALL, dtype=np.float32)
    rows = [["call", "median per call", "best"]]
    calls = _candidates(x, y, tmp)
    pyasc, reason = pyasc_impl.load()
    if pyasc is None:
        rows.append(["pyasc hybrid add(x, y)", reason or "unavailable", "-"])
    else:
        try:
            calls += _pyasc_candidates(pyasc, x, y)
        except Exception as exc:  # pyasc may be unfinished: report, do not crash
            rows.append(["pyasc hybrid add(x, y)",
                         f"{type(exc).__name__}: {str(exc).splitlines()[0]}", "-"])
    for label, call in calls:
        median, best = per_call(call)
        calls_per_run = 2 if "alternating" in label else len(CYCLE) if "cycling" in label \
            else 1
        median, best = median / calls_per_run, best / calls_per_run
        rows.append([label, report.fmt_time(median), report.fmt_time(best)])
    return rows


_CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
w0, c0 = time.perf_counter(), time.process_time()
import numpy as np
import kernels
w1, c1 = time.perf_counter(), time.process_time()
{import_tool}
w2, c2 = time.perf_counter(), time.process_time()
fn = {wrap}(kernels.relu)
x = np.linspace(-1, 1, 1024, dtype=np.float32)
w3, c3 = time.perf_counter(), time.process_time()
fn(x)
w4, c4 = time.perf_counter(), time.process_time()
fn(x)
w5 = time.perf_counter()
print(json.dumps({{"numpy": w1 - w0, "import": w2 - w1, "import_cpu": c2 - c1,
                  "first": w4 - w3, "first_cpu": c4 - c3, "steady": w5 - w4}}))
"""

_PRELOAD = ("from pyasc import hybrid\n"
            "import pyasc.frontend.compiler, pyasc.ir.passes, pyasc.backend.llvm.generate\n"
            "from pyasc.backend.llvm import jit\n"
            "jit.initialize()")

_PRELOAD_POOL = _PRELOAD + "\nfrom pyasc.runtime import threads\nthreads.pool()"

TOOLS = {
    "pyasc": ("from pyasc import hybrid", "hybrid", "PYASC_CACHE_DIR"),
    "pyasc, compiler preloaded": (_PRELOAD, "hybrid", "PYASC_CACHE_DIR"),
    "pyasc, compiler and thread pool preloaded": (_PRELOAD_POOL, "hybrid", "PYASC_CACHE_DIR"),
    "numba": ("import numba", "numba.njit(cache=True)", "NUMBA_CACHE_DIR"),
}


class ChildFailed(Exception):
    """The fresh interpreter failed; the message is the last line of its stderr."""


def child_run(tool: str, cache_dir: str) -> dict[str, float]:
    """Time one fresh interpreter compiling (or loading) relu with ``tool``."""
    import_tool, wrap, cache_var = TOOLS[tool]
    code = _CHILD.format(here=str(HERE), import_tool=import_tool, wrap=wrap)
    env = dict(os.environ, **{cache_var: cache_dir}, PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with bytecode caches, as installed
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)]
        raise ChildFailed(lines[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_row(tool: str, runs: int) -> list[str]:
    """Medians over ``runs`` fresh processes: imports, cold first call, cache-hit first
    call (wall / CPU), steady call."""
    cold, hit = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="pyasc-bench-warmup-") as cache:
            child_run(tool, cache)  # fills the bytecode caches
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix=f"pyasc-bench-{tool[:5]}-cache-") as cache:
                cold.append(child_run(tool, cache))
                hit.append(child_run(tool, cache))
    except ChildFailed as exc:  # the tool is missing or broken: say so in the row
        return [tool, str(exc), "-", "-", "-", "-"]  # as many cells as the headers

    def med(samples: list[dict[str, float]], key: str) -> str:
        return report.fmt_time(statistics.median(s[key] for s in samples))

    def both(samples: list[dict[str, float]], key: str) -> str:
        return f"{med(samples, key)} / {med(samples, key + '_cpu')}"

    return [tool, med(cold, "numpy"), both(cold, "import"), both(cold, "first"),
            both(hit, "first"), med(hit, "steady")]


def main(argv: list[str] | None = None) -> None:
    """Print the dispatch and compile tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyasc-bench-noop-") as tmp:
        dispatch = dispatch_rows(tmp)
    compile_table = [["tool", "import numpy", "import tool (wall / CPU)",
                      "cold 1st call: compile (wall / CPU)",
                      "disk-cache hit 1st call (wall / CPU)", "2nd call"]]
    compile_table += [compile_row(tool, args.runs) for tool in TOOLS]
    heading = "## " if args.markdown else ""
    print(f"{heading}Per-call overhead, two float32[{SMALL}] arrays -> new array "
          f"(median and best of {REPEATS})\n")
    print(report.render(dispatch, args.markdown))
    print(f"\n{heading}relu in a fresh process, 1024 floats (median of {args.runs})\n")
    print(report.render(compile_table, args.markdown))


if __name__ == "__main__":
    main()
