"""Time ``pyasc.ops.erf`` and ``pyasc.ops.gelu`` (the erf form) on 4096x1024 float32,
single-threaded, against numpy and torch baselines.

    python benchmarks/erf_perf.py [--repeat 11] [--calls 5]

numpy has no ``erf``: its column is Abramowitz and Stegun 7.1.26 written in numpy
(``bench_autodiff.np_erf``, |error| < 1.5e-7, so a cheaper and less accurate formula than
pyasc's 2-ulp bound); gelu's numpy column is ``0.5 x (1 + that erf(x/sqrt 2))``.  torch
(``torch.special.erf``, ``torch.nn.functional.gelu``) runs with ``torch.set_num_threads(1)``
if it imports.  Inputs: normal(0, 3), seed 0.  Reported: the median over ``--repeat``
round-robin rounds of the **per-thread CPU time** per call (``time.thread_time``; the
figure to quote on a shared machine) and the median wall time beside it.  Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ["PYASC_NUM_THREADS"] = "1"  # read at every call; set before pyasc starts a pool

import numpy as np  # noqa: E402

from bench_autodiff import np_erf  # noqa: E402

SHAPE = (4096, 1024)
INV_SQRT2 = np.float32(0.7071067811865476)


def _variants(x: np.ndarray) -> dict[str, Callable[[], object]]:
    import pyasc
    from pyasc import ops

    @pyasc.hybrid
    def erf(x):
        return ops.erf(x)

    @pyasc.hybrid
    def gelu(x):
        return ops.gelu(x)

    out: dict[str, Callable[[], object]] = {
        "pyasc erf": lambda: erf(x), "pyasc gelu": lambda: gelu(x),
        "numpy erf (A&S 7.1.26)": lambda: np_erf(x),
        "numpy gelu (A&S 7.1.26)": lambda: 0.5 * x * (1.0 + np_erf(x * INV_SQRT2)),
    }
    try:
        import torch
    except ImportError:  # an optional column
        return out
    torch.set_num_threads(1)
    tx = torch.from_numpy(x)
    out["torch erf"] = lambda: torch.special.erf(tx)
    out["torch gelu"] = lambda: torch.nn.functional.gelu(tx)
    return out


def _check(x: np.ndarray, variants: dict[str, Callable[[], object]]) -> None:
    """pyasc's erf against float64 math.erf on a sample (within 2 float32 ulps)."""
    import math

    got = np.asarray(variants["pyasc erf"]()).reshape(-1)[::997]
    ref = np.array([math.erf(float(v)) for v in x.reshape(-1)[::997]])
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - ref) <= 2 * ulp), "erf outside its bound"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    x = (np.random.default_rng(0).standard_normal(SHAPE) * 3).astype(np.float32)
    variants = _variants(x)
    _check(x, variants)
    for fn in variants.values():
        fn()  # compile / warm up
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    wall: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.repeat):
        for k, fn in variants.items():
            c0, w0 = time.thread_time(), time.perf_counter()
            for _ in range(args.calls):
                fn()
            cpu[k].append((time.thread_time() - c0) / args.calls)
            wall[k].append((time.perf_counter() - w0) / args.calls)
    print(f"{SHAPE[0]}x{SHAPE[1]} float32, 1 thread, load {os.getloadavg()[0]:.1f}")
    print(f"{'':26s} {'CPU ms':>8s} {'wall ms':>8s}")
    for k in variants:
        print(f"{k:26s} {1e3 * statistics.median(cpu[k]):8.2f} "
              f"{1e3 * statistics.median(wall[k]):8.2f}")


if __name__ == "__main__":
    main()
