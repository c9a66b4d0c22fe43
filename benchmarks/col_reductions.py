"""ascend-sim counters of reductions over leading axes (issue 19: column reductions).

    python benchmarks/col_reductions.py [--shapes 4097x33,300x300,33x4097]
                                        [--dtypes float32,float16]
                                        [--nchw 8x64x28x28,2x3x5x4097]
                                        [--middle 8x128x96,4x33x17,2x3x40x9]
                                        [--only middle|split]

Batch-norm statistics (``x.mean(axis=0)``, ``x.var(axis=0)``), ``x.sum(axis=0)``,
``np.max(x, axis=0)``, softmax over axis 0, per-channel sums of ``(N, C, 7)``
(``axis=(0, 2)``) and an int16 whole-array max run on ``target="ascend-sim"``
(``dynamic_shape=True``: one build each); batch-norm forward written the numpy way on
NCHW (``--nchw``, ``gamma``/``beta`` of shape ``(C, 1, 1)``) static and dynamic;
reductions over the middle axis (``--middle``: ``x.mean(axis=1)``, ``x.var(axis=1)``,
``x.sum(axis=1)`` of ``(B, N, D)`` or ``(B, N, H, W)``).  ``--only middle`` runs just
those, ``--only split`` just mean/var/sum over axis 0 of ``--shapes``.
Prints a markdown table per call (every kernel launched): GM->UB and UB->GM bytes
against the minimum (each input read once, each result written once), the scalar
unit's GM element accesses (``GetValue``/``SetValue``: what a scalar kernel does per
element), the vector calls, and the max error against numpy (float16: against the
float32 computation).
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


def batchnorm_nchw(x, gamma, beta):
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def whole_max(x):
    return x.max()


def mean1(x):
    return x.mean(axis=1)


def var1(x):
    return x.var(axis=1)


def sum1(x):
    return x.sum(axis=1)


def _args(fn, shape: tuple[int, int], dtype: np.dtype, rng: np.random.Generator):
    if fn is whole_max:
        return rng.integers(-30000, 30000, shape[0] * shape[1]).astype(np.int16)
    if fn is channel_sum:
        shape = (*shape, 7)
    return (rng.standard_normal(shape) * 2).astype(dtype)


_SIMS: dict = {}   # one build per function and dtype (run-time shapes)


def _row(fn, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator,
         dynamic: bool = True) -> str:
    if fn is batchnorm_nchw:
        cs = (shape[1], 1, 1)
        args = tuple((rng.standard_normal(s) * 2).astype(dtype) for s in (shape, cs, cs))
    else:
        args = (_args(fn, shape, dtype, rng),)
    x = args[0]
    sim = _SIMS.setdefault((fn, dynamic), hybrid(fn, target="ascend-sim",
                                                 dynamic_shape=dynamic))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = sim(*args)
        c = sim.kernel(*args).last_counters
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    err = float(np.max(np.abs(np.asarray(got, np.float64) - fn(*wide))))
    out = np.asarray(got).nbytes
    gin, gout = c["gm_to_ub_bytes"], c["ub_to_gm_bytes"]
    scalar = (c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]) // x.itemsize
    name = fn.__name__ + ("" if dynamic else " (static)")
    return (f"| {name} | {x.dtype.name} | {'x'.join(map(str, x.shape))} | "
            f"{gin:,} ({gin / x.nbytes:.2f}x) | {gout:,} ({gout / out:.2f}x) | {scalar:,} | "
            f"{c['vec_calls']:,} | {c['blocks']} | {err:.3g} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="4097x33,300x300,33x4097")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--nchw", default="8x64x28x28,2x3x5x4097")
    ap.add_argument("--middle", default="8x128x96,4x33x17,2x3x40x9")
    ap.add_argument("--only", choices=["middle", "split"], default=None)
    opts = ap.parse_args()
    rng = np.random.default_rng(19)
    print("| kernel | dtype | shape | GM->UB bytes (x min) | UB->GM bytes (x min) | "
          "scalar GM accesses | vector calls | blocks | max abs err |")
    print("|---|---|---|---|---|---|---|---|---|")
    shapes = [tuple(int(d) for d in s.split("x")) for s in opts.shapes.split(",")]
    if opts.only == "middle":
        for fn in (mean1, var1, sum1):
            for dtype in opts.dtypes.split(","):
                for shape in [tuple(int(d) for d in s.split("x"))
                              for s in opts.middle.split(",")]:
                    print(_row(fn, shape, np.dtype(dtype), rng), flush=True)
        return
    if opts.only == "split":
        for fn in (mean0, var0, sum0):
            for dtype in opts.dtypes.split(","):
                for shape in shapes:
                    print(_row(fn, shape, np.dtype(dtype), rng), flush=True)
        return
    for fn in (sum0, mean0, var0, max0, softmax0, channel_sum):
        for dtype in opts.dtypes.split(","):
            for shape in shapes:
                print(_row(fn, shape, np.dtype(dtype), rng), flush=True)
    print(_row(whole_max, shapes[0], np.dtype("int16"), rng), flush=True)
    for dynamic in (False, True):
        for dtype in opts.dtypes.split(","):
            for shape in [tuple(int(d) for d in s.split("x")) for s in opts.nchw.split(",")]:
                print(_row(batchnorm_nchw, shape, np.dtype(dtype), rng, dynamic), flush=True)


if __name__ == "__main__":
    main()
