"""A focal loss with a run-time ``gamma`` on ascend-sim: kernels, GM traffic, vector calls.

    python benchmarks/focal_sim.py [--repeat 5]

Two programs: the elementwise term ``-((1 - p) ** gamma) * log(p)`` and the example's
``focal_loss`` (``examples/custom_loss.py``: a sigmoid, both terms, a whole-array sum),
float32, ``gamma`` a run-time argument (2.0).  For each: the kinds of the kernels that ran
(V vector, S scalar), GM bytes (DataCopy both ways plus the scalar unit's GetValue/SetValue),
vector API calls, scalar GM accesses and UB scalar accesses the sim counted, the max
relative error vs numpy, and the median wall / CPU-thread time of a sim call (the host
model's time, not a device's).  Compare two checkouts by running this with each one's
directory on ``PYTHONPATH``.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from custom_loss import focal_loss  # noqa: E402
from pyasc import hybrid  # noqa: E402

KINDS = {"VectorKernel": "V", "ScalarKernel": "S", "StencilKernel": "T", "PoolKernel": "P"}


def focal_term(p, gamma):
    return -((1 - p) ** gamma) * np.log(p)


def _cases() -> list[tuple[str, object, tuple]]:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.99, 64 * 1024).astype(np.float32)
    logits = rng.standard_normal(64 * 1024).astype(np.float32)
    labels = (rng.random(64 * 1024) < 0.3).astype(np.float32)
    return [("focal term, 65536 f32", focal_term, (p, 2.0)),
            ("example focal_loss, 65536 f32", focal_loss.__wrapped__, (logits, labels, 2.0))]


def _measure(fn, args: tuple, repeat: int) -> dict:  # noqa: ANN001
    compiled = hybrid(fn, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(*args)
    want = fn(*args)
    err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.thread_time()
        compiled(*args)
        walls.append(time.perf_counter() - w)
        cpus.append(time.thread_time() - c)
    k = compiled.kernel(*args)
    c = k.last_counters
    scalar = c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]
    kinds = {x.name: KINDS[type(x).__name__] for x in k.ascend.kernels}
    return {"kinds": "+".join(kinds[n] for n, _ in k.last_kernels),
            "gm": c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + scalar,
            "vec": c["vec_calls"], "scalar": scalar // 4, "ub_scalar": c["ub_scalar_accesses"],
            "err": err, "wall": statistics.median(walls), "cpu": statistics.median(cpus)}


def main() -> None:
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    print(f"{'program':32} {'kernels':>8} {'GM bytes':>10} {'vector calls':>12} "
          f"{'scalar GM acc.':>14} {'UB scalar acc.':>14} {'max rel err':>11} "
          f"{'sim wall':>9} {'sim CPU':>9}")
    for name, fn, args in _cases():
        r = _measure(fn, args, repeat)
        print(f"{name:32} {r['kinds']:>8} {r['gm']:>10} {r['vec']:>12} {r['scalar']:>14} "
              f"{r['ub_scalar']:>14} {r['err']:>11.2e} {r['wall']:>8.3f}s {r['cpu']:>8.3f}s")


if __name__ == "__main__":
    main()
