"""What polling for Ctrl-C costs: every benchmark kernel compiled with and without the
``interrupt-poll`` pass, timed side by side, single thread.

    python benchmarks/interrupt_cost.py [--size small|full] [--only relu,softmax]
                                        [--repeat 15] [--markdown]

For each kernel of ``kernels.py`` (the ``run.py`` inputs, ``fastmath=False``): the median
CPU time per call of the build with polls, the build without, and that second build
loaded once more (the same machine code at other addresses: how far apart two equal
builds land is the noise floor of the comparison).  CPU time of the calling thread, which
the time slices a shared machine gives other processes do not inflate; repetitions
interleaved in rotating order, each averaging calls for at least 50 ms.  Then the
number of poll sites in the optimized LLVM IR and whether the vector instructions of the
two builds are the same: polls sit in loops around loops, in while loops and between
strips, never in a vectorized loop.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable

from run import configure_environment

DISABLE = "PYASC_DISABLE_PASSES"
MIN_TIME = 0.05


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--only", help="comma-separated kernel names (default: all)")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    args.threads, args.keep_cache = 1, False
    return args


def build(name: str, polls: bool) -> tuple[Callable, str]:
    """A freshly compiled ``pyasc hybrid`` variant of kernel ``name`` (its first call
    compiles, with or without the pass) and its optimized LLVM IR."""
    import pyasc

    import kernels
    import pyasc_impl

    os.environ[DISABLE] = "" if polls else "interrupt-poll"
    try:
        fn = pyasc_impl.variants(pyasc, name)["pyasc hybrid"]()
        args = kernels.make_inputs(name, ARGS.size)
        fn(*args)
        return fn, fn.llvm_ir(*args)
    finally:
        os.environ.pop(DISABLE, None)


def vector_code(text: str) -> Counter:
    """The vector instructions on numbers of a module (not the SLP-paired loads of
    argument pointers), SSA names, metadata numbers and ``tail`` markers erased (a
    function whose stack slot escapes to ``poll`` loses them)."""
    lines = [line.split(";")[0].strip().replace("tail call", "call")
             for line in text.splitlines()
             if re.search(r"<\d+ x (float|double|half|i\d+)>", line) and "=" in line
             and "x ptr>" not in line]
    return Counter(re.sub(r"%[\w.\-]+|!\d+", "%", line) for line in lines)


def per_call(fn: Callable, args: tuple, calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        fn(*args)
    return (time.thread_time() - start) / calls


def measure(name: str) -> list[str]:
    """One table row for kernel ``name``."""
    import numpy as np

    import kernels

    polled, polled_ir = build(name, polls=True)
    plain, plain_ir = build(name, polls=False)
    twin, _ = build(name, polls=False)  # the same code again: the noise floor
    args = kernels.make_inputs(name, ARGS.size)
    same = np.array_equal(np.asarray(polled(*args)), np.asarray(plain(*args)), equal_nan=True)
    calls = max(1, int(MIN_TIME / max(per_call(polled, args, 1), 1e-9)))
    times: list[list[float]] = [[], [], []]
    builds = (polled, plain, twin)
    for k in range(ARGS.repeat):  # interleaved, rotating: drifts hit every build
        for j in range(3):
            at = (j + k) % 3
            times[at].append(per_call(builds[at], args, calls))
    a, b, c = (statistics.median(t) for t in times)
    sites = len(re.findall(r"call (?:\w+ )?i32 @pyasc\.poll\(", polled_ir))
    vectors = "same" if vector_code(polled_ir) == vector_code(plain_ir) else "DIFFERENT"
    return [name, kernels.describe_size(name, ARGS.size), _time(a), _time(b),
            f"{100 * (a / b - 1):+.1f}%", f"{100 * (c / b - 1):+.1f}%", str(sites), vectors,
            "yes" if same else "NO"]


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


HEADER = ["kernel", "size", "with polls", "without", "cost", "same code twice", "poll sites",
          "vector code", "same result"]


def render(rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(r[k]) for r in rows + [HEADER]) for k in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
                     for r in [HEADER] + rows)


def main(argv: list[str] | None = None) -> None:
    global ARGS
    ARGS = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyasc-bench-cache-") as tmp:
        configure_environment(ARGS, tmp)
        import cases

        try:
            selected = cases.select(ARGS.only.split(",") if ARGS.only else None)
        except ValueError as exc:
            sys.exit(f"interrupt_cost.py: {exc}")
        rows = [measure(case.kernel) for case in selected]
    print(render(rows, ARGS.markdown))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nCPU time of the calling thread, median of {ARGS.repeat} interleaved "
          f"repetitions; load average {load:.1f} at the end.")


ARGS = argparse.Namespace()

if __name__ == "__main__":
    main()
