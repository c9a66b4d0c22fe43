"""Compile time and run time of ``a @ b`` per dtype, size and static/dynamic shape.

    python benchmarks/matmul_compile.py [--dtypes int32,float32] [--sizes 65,1024]
                                        [--modes static,dynamic] [--run-sizes 1024]
                                        [--repeat 7] [--timeout 300] [--markdown]

Every (dtype, size, mode) compiles cold in its own subprocess (``cache=False``, one
thread): ``compile s`` is the CPU time of ``fn.kernel(a, b)`` in that process (frontend,
passes, LLVM IR generation, LLVM O3, object emission), ``LLVM IR lines`` the size of the
IR handed to LLVM.  For the sizes in ``--run-sizes`` the same process then times calls:
the median over ``--repeat`` calls of wall time and of the calling thread's CPU time
(``time.thread_time``).  ``PYASC_NUM_THREADS=1`` is set for the subprocesses.  A compile
slower than ``--timeout`` seconds is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")
SIZES = (1, 17, 65, 130, 257)
MODES = ("static", "dynamic")


def measure_one(dtype: str, n: int, mode: str, repeat: int) -> dict:
    """Compile ``a @ b`` for ``(n, n)`` arrays in this process; time calls if asked."""
    import numpy as np
    from pyasc import hybrid
    from pyasc.backend.llvm import generate

    sizes: list[int] = []
    original = generate.generate

    def counted(*args, **kwargs):
        text, abi = original(*args, **kwargs)
        sizes.append(text.count("\n"))
        return text, abi
    generate.generate = counted

    def mm(a, b):
        return a @ b
    fn = hybrid(mm, cache=False, dynamic_shape=mode == "dynamic")
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 6, (n, n)).astype(dtype)
    b = rng.integers(-5, 6, (n, n)).astype(dtype)
    start = time.process_time()
    fn.kernel(a, b)
    result = {"compile": time.process_time() - start, "lines": sum(sizes)}
    if repeat:
        assert np.array_equal(fn(a, b), a @ b)
        walls, cpus = [], []
        for _ in range(repeat):
            w, c = time.perf_counter(), time.thread_time()
            fn(a, b)
            cpus.append(time.thread_time() - c)
            walls.append(time.perf_counter() - w)
        result.update(wall=statistics.median(walls), cpu=statistics.median(cpus))
    return result


def run_child(dtype: str, n: int, mode: str, repeat: int, timeout: float) -> dict:
    """``measure_one`` in a fresh interpreter (nothing cached in memory)."""
    env = {**os.environ, "PYASC_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--child", f"{dtype}:{n}:{mode}:{repeat}"]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"compile over {timeout:g} s"}
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(row: dict, key: str, fmt: str) -> str:
    return format(row[key], fmt) if key in row else "-"


def report(rows: list[tuple[str, int, str, dict]], markdown: bool) -> None:
    """One line per case (a markdown table with ``--markdown``)."""
    head = ["dtype", "n", "shape", "compile s (CPU)", "LLVM IR lines", "run ms (wall)",
            "run ms (thread CPU)"]
    lines = []
    for dtype, n, mode, r in rows:
        if "error" in r:
            lines.append([dtype, str(n), mode, r["error"], "-", "-", "-"])
            continue
        ms = {k: r[k] * 1e3 for k in ("wall", "cpu") if k in r}
        lines.append([dtype, str(n), mode, f"{r['compile']:.2f}", str(r["lines"]),
                      _cell(ms, "wall", ".2f"), _cell(ms, "cpu", ".2f")])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for cells in lines:
            print("| " + " | ".join(cells) + " |")
    else:
        for cells in [head, *lines]:
            print("  ".join(f"{c:>10}" for c in cells))


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run every case in its own process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--run-sizes", default="", help="sizes whose calls are timed too")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        dtype, n, mode, repeat = args.child.split(":")
        print(json.dumps(measure_one(dtype, int(n), mode, int(repeat))))
        return
    timed = {int(s) for s in args.run_sizes.split(",") if s}
    rows = []
    for dtype in args.dtypes.split(","):
        for n in map(int, args.sizes.split(",")):
            for mode in args.modes.split(","):
                repeat = args.repeat if n in timed else 0
                rows.append((dtype, n, mode, run_child(dtype, n, mode, repeat, args.timeout)))
                print(dtype, n, mode, rows[-1][3], file=sys.stderr, flush=True)
    report(rows, args.markdown)


if __name__ == "__main__":
    main()
