"""``pyasc.ops.conv2d`` on the CPU against the im2col + numpy matmul (OpenBLAS)
formulation of the same convolution, single-threaded.

    python benchmarks/conv2d.py [--repeat 15] [--threads 1] [--dtype float32]

Each layer is checked first (pyasc against numpy), then both are timed in alternating
rounds so that drifting machine load hits both alike.  Times are medians of this
thread's CPU time per call and of wall time, and the minimum CPU time (on a shared,
loaded machine the call least disturbed by other processes' use of the caches); the
ratio is pyasc / numpy (below 1: pyasc is faster).  The thread variables
(OPENBLAS/OMP/MKL/PYASC_NUM_THREADS) are set before numpy is imported; with one thread
every kernel runs on the calling thread, so its CPU time is the whole cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "PYASC_NUM_THREADS")
LAYERS = {  # name: (x shape, w shape, stride, padding, groups)
    "resnet 3x3 64ch 56x56": ((1, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1),
    "resnet stem 7x7/2": ((1, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1),
    "3x3 32->64 batch 8": ((8, 32, 32, 32), (64, 32, 3, 3), 1, 1, 1),
    "1x1 256->64 28x28": ((1, 256, 28, 28), (64, 256, 1, 1), 1, 0, 1),
    "grouped 3x3 g=4": ((2, 64, 28, 28), (64, 16, 3, 3), 1, 1, 4),
}


def im2col_numpy(np, x, w, stride, padding, groups):
    """Pad, gather every window into a column matrix (one copy), one batched matmul."""
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]  # (n, c, oh, ow, kh, kw)
    n, _, oh, ow = win.shape[:4]
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(0, 1, 2, 5, 6, 3, 4)
    cols = np.ascontiguousarray(cols).reshape(n, groups, cg * kh * kw, oh * ow)
    y = np.matmul(w.reshape(groups, o // groups, cg * kh * kw), cols)
    return y.reshape(n, o, oh, ow)


def measure(fn, repeat: int) -> tuple[list[float], list[float]]:
    """``repeat`` (thread CPU seconds, wall seconds) of one call each."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - t0)
    return cpu, wall


def run_layer(np, conv2d, name, spec, dtype, repeat) -> str:
    xs, ws, stride, padding, groups = spec
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    ours = lambda: conv2d(x, w, stride=stride, padding=padding, groups=groups)  # noqa: E731
    theirs = lambda: im2col_numpy(np, x, w, stride, padding, groups)  # noqa: E731
    np.testing.assert_allclose(ours(), theirs(), rtol=1e-3, atol=1e-3 * ws[1] * ws[2] * ws[3])
    cpu = {"pyasc": [], "numpy": []}
    wall = {"pyasc": [], "numpy": []}
    for r in range(repeat):  # alternate: pyasc, numpy, numpy, pyasc, ...
        order = (("pyasc", ours), ("numpy", theirs))
        for label, fn in (order if r % 2 == 0 else order[::-1]):
            c, t = measure(fn, 1)
            cpu[label] += c
            wall[label] += t
    med = {k: statistics.median(v) for k, v in cpu.items()}
    low = {k: min(v) for k, v in cpu.items()}
    medw = {k: statistics.median(v) for k, v in wall.items()}
    return (f"| {name} | {med['pyasc'] * 1e3:.2f} | {med['numpy'] * 1e3:.2f} | "
            f"{med['pyasc'] / med['numpy']:.2f} | {low['pyasc'] * 1e3:.2f} | "
            f"{low['numpy'] * 1e3:.2f} | {low['pyasc'] / low['numpy']:.2f} | "
            f"{medw['pyasc'] * 1e3:.2f} | {medw['numpy'] * 1e3:.2f} | "
            f"{medw['pyasc'] / medw['numpy']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--only", help="a substring of the layer names to run")
    args = parser.parse_args(argv)
    if "numpy" in sys.modules:
        raise RuntimeError("numpy was imported before the thread variables were set")
    for var in THREAD_VARIABLES:
        os.environ[var] = str(args.threads)
    import numpy as np
    from pyasc.ops import conv2d

    os.environ.setdefault("PYASC_TARGET", "cpu")
    print(f"conv2d, {args.dtype}, threads={args.threads}, median of {args.repeat} "
          f"alternating rounds; ratio = pyasc / numpy\n")
    print("| layer | pyasc CPU ms | numpy CPU ms | ratio | pyasc min CPU ms | numpy min CPU ms "
          "| ratio | pyasc wall ms | numpy wall ms | ratio |\n" + "|---" * 10 + "|")
    for name, spec in LAYERS.items():
        if args.only is None or args.only in name:
            print(run_layer(np, conv2d, name, spec, args.dtype, args.repeat), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
