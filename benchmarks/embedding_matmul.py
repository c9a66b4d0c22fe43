"""The seed's fusion case on the CPU: ``@fusion_group`` over an embedding lookup and a
matmul against the same two ``@hybrid`` calls made one after the other, single-threaded.

    python benchmarks/embedding_matmul.py [--repeat 41] [--vocab 50000] [--dim 256]
                                          [--out 256] [--ids 4096]

Both are checked against numpy first, then timed in alternating rounds (drifting machine
load hits both alike).  Times are the median and the minimum of this thread's CPU time
per call (one thread: every kernel runs on the calling thread) and the median wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def embedding(ids, table):
    """The lookup: one table row per id."""
    return table[ids]


def matmul(a, b):
    """The projection."""
    return a @ b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("repeat", 41), ("vocab", 50000), ("dim", 256), ("out", 256),
                          ("ids", 4096)):
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args(argv)
    if "numpy" in sys.modules:
        raise RuntimeError("numpy was imported before the thread variables were set")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYASC_NUM_THREADS"):
        os.environ[var] = "1"
    import numpy as np
    from pyasc import fusion_group, hybrid

    lookup, project = hybrid(embedding), hybrid(matmul)

    @fusion_group
    def fused(ids, table, w):
        return project(lookup(ids, table), w)

    def unfused(ids, table, w):
        return project(lookup(ids, table), w)

    rng = np.random.default_rng(0)
    table = rng.standard_normal((args.vocab, args.dim)).astype(np.float32)
    w = rng.standard_normal((args.dim, args.out)).astype(np.float32)
    ids = rng.integers(0, args.vocab, args.ids)
    for fn in (fused, unfused):
        np.testing.assert_allclose(fn(ids, table, w), table[ids] @ w, rtol=1e-4, atol=1e-3)
    cpu: dict[str, list[float]] = {"fused": [], "unfused": []}
    wall: dict[str, list[float]] = {"fused": [], "unfused": []}
    for r in range(args.repeat):
        order = (("fused", fused), ("unfused", unfused))
        for label, fn in order if r % 2 == 0 else order[::-1]:
            c0, t0 = time.thread_time(), time.perf_counter()
            fn(ids, table, w)
            cpu[label].append(time.thread_time() - c0)
            wall[label].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
    print(f"embedding_matmul, {args.ids} ids, table ({args.vocab}, {args.dim}), w "
          f"({args.dim}, {args.out}), one thread, {args.repeat} alternating rounds")
    for k in cpu:
        print(f"{k}: CPU median {med[k]:.2f} ms, min {min(cpu[k]) * 1e3:.2f} ms; "
              f"wall median {statistics.median(wall[k]) * 1e3:.2f} ms")
    print(f"unfused / fused (CPU medians) = {med['unfused'] / med['fused']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
