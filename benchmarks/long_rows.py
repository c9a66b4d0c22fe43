"""ascend-sim GM traffic of rows longer than the Unified Buffer (issue 19, long rows).

    python benchmarks/long_rows.py [--rows 4] [--cols 50257,131072] [--dtypes float32,float16]

softmax, logsumexp, layernorm and cross-entropy (logsumexp minus the picked logit, as
users write it) over vocabulary-sized rows run on ``target="ascend-sim"``; each row is
streamed through UB in column tiles (the long-rows schedule).  Prints a markdown table:
GM->UB and UB->GM bytes of the call (every kernel launched) against the minimum (each
input read once, each result written once), and the max error against numpy (float16
inputs: against the float32 computation).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


def layernorm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def cross_entropy(logits, labels):
    m = np.max(logits, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    picked = np.take_along_axis(logits, labels[:, None], axis=-1)
    return (lse - picked)[:, 0]


def _inputs(fn, rows: int, cols: int, dtype: np.dtype, rng: np.random.Generator) -> tuple:
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    v = rng.standard_normal(cols).astype(dtype)
    return {softmax: (x,), logsumexp: (x,), layernorm: (x, v, v[::-1].copy()),
            cross_entropy: (x, rng.integers(0, cols, rows))}[fn]


def _row(fn, rows: int, cols: int, dtype: np.dtype, rng: np.random.Generator) -> str:
    args = _inputs(fn, rows, cols, dtype, rng)
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = sim(*args)
        counters = sim.kernel(*args).last_counters
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    err = float(np.max(np.abs(np.asarray(got, np.float64) - fn(*wide))))
    min_in = sum(a.nbytes for a in args)
    min_out = np.asarray(got).nbytes
    gin, gout = counters["gm_to_ub_bytes"], counters["ub_to_gm_bytes"]
    total = (gin + gout) / (min_in + min_out)
    return (f"| {fn.__name__} | {np.dtype(dtype).name} | {rows}x{cols} | {gin:,} "
            f"({gin / min_in:.2f}x) | {gout:,} ({gout / min_out:.2f}x) | {total:.2f}x | "
            f"{err:.3g} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", default="50257,131072")
    ap.add_argument("--dtypes", default="float32,float16")
    opts = ap.parse_args()
    rng = np.random.default_rng(19)
    print("| kernel | dtype | shape | GM->UB bytes (x min) | UB->GM bytes (x min) | "
          "GM total vs min | max abs err |")
    print("|---|---|---|---|---|---|---|")
    for fn in (softmax, logsumexp, layernorm, cross_entropy):
        for dtype in opts.dtypes.split(","):
            for cols in (int(c) for c in opts.cols.split(",")):
                print(_row(fn, opts.rows, cols, np.dtype(dtype), rng), flush=True)


if __name__ == "__main__":
    main()
