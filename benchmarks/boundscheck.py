"""What bounds checks cost: every benchmark kernel with ``boundscheck`` on (the default)
and off, side by side in one process.

    python benchmarks/boundscheck.py [--size small|full] [--only nms,conv2d] [--repeat 15]
                                     [--markdown]

Both variants of a kernel are compiled (checked against the kernel as written), then
timed in alternating rounds (on, off, off, on, ...) so that drifting machine load hits
both alike; times are this thread's CPU time per call (the kernels run on the calling
thread), the cost is the median over rounds of ``on / off - 1`` and, less sensitive to
other processes, the ratio of the best rounds.  "LLVM IR vs
unchecked" says whether the optimized LLVM IR is the same as with ``boundscheck=False``
(then the machine code is too, and the cost is 0 by construction).  "checks in loops"
counts the ``func.assert``\\ s left inside loops on the fast path of the optimized
loop-level IR (``pyasc.ir.passes.hoist_checks.hot_checks``): 0 means every check was
proven, deduplicated or hoisted out of the loops (only data-dependent indices keep one
per access).  Threads are pinned to 1 (``PYASC_NUM_THREADS``...) unless ``--threads``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS", "PYASC_NUM_THREADS")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--only", help="comma-separated kernel names (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15, help="timed rounds (>= 5)")
    parser.add_argument("--min-time", type=float, default=0.05,
                        help="seconds per timed round and variant")
    parser.add_argument("--markdown", action="store_true", help="print a RESULTS.md section")
    args = parser.parse_args(argv)
    if args.repeat < 5:
        parser.error("--repeat must be at least 5")
    return args


def compiled(pyasc, name: str, boundscheck: bool) -> Callable:
    """``hybrid(boundscheck=...)`` of kernel ``name`` (its callees wrapped alike)."""
    import kernels

    def wrap(fn):
        return pyasc.hybrid(boundscheck=boundscheck)(fn)

    fn = getattr(kernels, name)
    callees = kernels.CALLEES.get(name, ())
    return wrap(kernels.rebind(fn, wrap, callees) if callees else fn)


def hot_check_lines(fn, args: tuple) -> list[int]:
    """Source lines of the checks left in loops on the fast path of ``fn``'s kernel."""
    from pyasc.ir import parse_module
    from pyasc.ir.passes.hoist_checks import hot_checks

    module = parse_module(fn.kernel(*args).loop_ir)
    return sorted({op.loc.line for op in hot_checks(module)})


def calibrate(fns: list[Callable], args: tuple, min_time: float) -> int:
    """Calls per round so that the slowest variant runs at least ``min_time``."""
    slowest = 0.0
    for fn in fns:
        start = time.perf_counter()
        fn(*args)
        slowest = max(slowest, time.perf_counter() - start)
    return max(1, int(min_time / max(slowest, 1e-9)))


def time_pair(on: Callable, off: Callable, args: tuple, calls: int, rounds: int
              ) -> tuple[list[float], list[float]]:
    """CPU seconds of this thread per call, for each variant in each round (alternating
    which goes first).  Thread CPU time, not wall time: on a shared machine the wall
    clock also counts the time other processes hold the core (kernels run on the
    calling thread with one thread)."""
    times: dict[Callable, list[float]] = {on: [], off: []}
    for k in range(rounds):
        for fn in ((on, off) if k % 2 == 0 else (off, on)):
            start = time.thread_time()
            for _ in range(calls):
                fn(*args)
            times[fn].append((time.thread_time() - start) / calls)
    return times[on], times[off]


def measure(pyasc, case, size: str, args_ns: argparse.Namespace) -> list[str]:
    """One table row for ``case`` (errors become cells)."""
    import harness
    import kernels

    name = case.kernel
    args = kernels.make_inputs(name, size)
    reference = getattr(kernels, name)(*args)
    on, off = compiled(pyasc, name, True), compiled(pyasc, name, False)
    for fn in (on, off):
        problem = harness.check(fn(*args), reference, case.rtol, case.atol)
        if problem:
            return [name, kernels.describe_size(name, size), problem, "", "", "", "", "", ""]
    lines = hot_check_lines(on, args)
    same = on.kernel(*args).llvm_ir == off.kernel(*args).llvm_ir
    calls = calibrate([on, off], args, args_ns.min_time)
    t_on, t_off = time_pair(on, off, args, calls, args_ns.repeat)
    cost = statistics.median(a / b - 1 for a, b in zip(t_on, t_off, strict=True))
    best = min(t_on) / min(t_off) - 1
    return [name, kernels.describe_size(name, size), _ms(statistics.median(t_on)),
            _ms(statistics.median(t_off)), f"{cost * 100:+.1f}%", f"{best * 100:+.1f}%",
            "identical" if same else "differs", str(len(lines)),
            ", ".join(f"kernels.py:{n}" for n in lines) or "-"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


HEADER = ["kernel", "size", "boundscheck=True (default)", "boundscheck=False",
          "cost (median of rounds)", "cost (best rounds)", "LLVM IR vs unchecked",
          "checks in loops", "where (data-dependent indices)"]


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    args = parse_args(argv)
    for var in THREAD_VARIABLES:
        os.environ[var] = str(args.threads)
    with tempfile.TemporaryDirectory(prefix="pyasc-bounds-cache-") as tmp:
        os.environ["PYASC_CACHE_DIR"] = tmp
        import pyasc

        import cases  # imports numpy: after the thread variables are set
        import report

        selected = cases.select(args.only.split(",") if args.only else None)
        rows = []
        for case in selected:
            print(f"... {case.kernel}", file=sys.stderr, flush=True)
            rows.append(measure(pyasc, case, args.size, args))
    load = os.getloadavg()
    if args.markdown:
        print("## Cost of bounds checks (boundscheck=True vs False)\n")
        print(f"- CPU: {report._cpu_model()}, {os.cpu_count()} cores; threads: "
              f"{args.threads}; size={args.size}; {args.repeat} alternating rounds of at "
              f"least {args.min_time * 1e3:.0f} ms; thread CPU time; load average after: "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print("- command: `python benchmarks/boundscheck.py "
              f"{' '.join(sys.argv[1:])}`\n")
    print(report.render([HEADER, *rows], args.markdown))


if __name__ == "__main__":
    main()
