"""ascend-sim counters of reductions over leading axes (issue 19: column reductions).

    python benchmarks/col_reductions.py [--shapes 4097x33,300x300,33x4097]
                                        [--dtypes float32,float16]

Batch-norm statistics (``x.mean(axis=0)``, ``x.var(axis=0)``), ``x.sum(axis=0)``,
``np.max(x, axis=0)``, softmax over axis 0, per-channel sums of ``(N, C, 7)``
(``axis=(0, 2)``) and an int16 whole-array max run on ``target="ascend-sim"``
(``dynamic_shape=True``: one build each).  Prints a markdown table per call (every
kernel launched): GM->UB and UB->GM bytes against the minimum (each input read once,
each result written once), the scalar unit's GM element accesses (``GetValue``/
``SetValue``: what a scalar kernel does per element), the vector calls, and the max
error against numpy (float16: against the float32 computation).
Run it once more with ``PYTHONPATH`` on an older checkout for the "before" rows.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning


def sum0(x):
    return x.sum(axis=0)


def mean0(x):
    return x.mean(axis=0)


def var0(x):
    return x.var(axis=0)


def max0(x):
    return np.max(x, axis=0)


def softmax0(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def channel_sum(x):
    return x.sum(axis=(0, 2))


def whole_max(x):
    return x.max()


def _args(fn, shape: tuple[int, int], dtype: np.dtype, rng: np.random.Generator):
    if fn is whole_max:
        return rng.integers(-30000, 30000, shape[0] * shape[1]).astype(np.int16)
    if fn is channel_sum:
        shape = (*shape, 7)
    return (rng.standard_normal(shape) * 2).astype(dtype)


_SIMS: dict = {}   # one build per function and dtype (run-time shapes)


def _row(fn, shape: tuple[int, int], dtype: np.dtype, rng: np.random.Generator) -> str:
    x = _args(fn, shape, dtype, rng)
    sim = _SIMS.setdefault(fn, hybrid(fn, target="ascend-sim", dynamic_shape=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = sim(x)
        c = sim.kernel(x).last_counters
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    err = float(np.max(np.abs(np.asarray(got, np.float64) - fn(wide))))
    out = np.asarray(got).nbytes
    gin, gout = c["gm_to_ub_bytes"], c["ub_to_gm_bytes"]
    scalar = (c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]) // x.itemsize
    return (f"| {fn.__name__} | {x.dtype.name} | {'x'.join(map(str, x.shape))} | "
            f"{gin:,} ({gin / x.nbytes:.2f}x) | {gout:,} ({gout / out:.2f}x) | {scalar:,} | "
            f"{c['vec_calls']:,} | {c['blocks']} | {err:.3g} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="4097x33,300x300,33x4097")
    ap.add_argument("--dtypes", default="float32,float16")
    opts = ap.parse_args()
    rng = np.random.default_rng(19)
    print("| kernel | dtype | shape | GM->UB bytes (x min) | UB->GM bytes (x min) | "
          "scalar GM accesses | vector calls | blocks | max abs err |")
    print("|---|---|---|---|---|---|---|---|---|")
    shapes = [tuple(int(d) for d in s.split("x")) for s in opts.shapes.split(",")]
    for fn in (sum0, mean0, var0, max0, softmax0, channel_sum):
        for dtype in opts.dtypes.split(","):
            for shape in shapes:
                print(_row(fn, shape, np.dtype(dtype), rng), flush=True)
    print(_row(whole_max, shapes[0], np.dtype("int16"), rng), flush=True)


if __name__ == "__main__":
    main()
