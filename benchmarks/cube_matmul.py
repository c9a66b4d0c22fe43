"""Cube matmul kernels (issue 14): counts and a stated time estimate per kernel.

    python benchmarks/cube_matmul.py [--soc Ascend910B1] [--sim-macs 1e9] [--markdown]

Each shape is compiled for ``target="ascend-sim"``; its cube kernel's plan gives the counts
and the time estimate of ``pyasc/backend/ascendc/cube_cost.py`` (MACs; GM -> L1 bytes
against the compulsory minimum, each stored operand element read once, and against
``schedule_bound_read_bytes``, the least a tile schedule with the SoC's L1 and L0C can
read; the plan's block shape and what L1 keeps resident; a roofline
estimate: the busiest core's padded MACs at 16 x 16 x C0 MACs per cycle and 1.8 GHz,
against all GM bytes at 1.6 TB/s HBM with no L2 credit).  Nothing is measured on an NPU.
Shapes of at most ``--sim-macs`` MACs are also run in the sim, which checks the result
against numpy and the counted bytes and MACs against the model ("sim" column).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
from pyasc import hybrid
from pyasc.backend.ascendc.cube_cost import cube_cost, schedule_bound_read_bytes
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.soc import get_soc


def matmul(a, b):
    return a @ b


# name -> (A shape, B shape)
SHAPES = {
    "512^3": ((512, 512), (512, 512)),
    "4096^3": ((4096, 4096), (4096, 4096)),
    "batched 8x1024x1024x64": ((8, 1024, 64), (8, 64, 1024)),
    "attention 8x128x64 @ 8x64x128": ((8, 128, 64), (8, 64, 128)),
    "GEMV 1x4096x4096": ((1, 4096), (4096, 4096)),
}


def _row(name: str, sa: tuple, sb: tuple, soc_name: str, sim_macs: float) -> list[str]:
    soc = get_soc(soc_name)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(np.float16)
    b = rng.standard_normal(sb).astype(np.float16)
    fn = hybrid(matmul, target="ascend-sim", device_type=[soc.name])
    kernel = fn.kernel(a, b)
    (k,) = [x for x in kernel.ascend.kernels if isinstance(x, CubeKernel)]
    cost = cube_cost(k, soc)
    sim = "-"
    if cost.macs <= sim_macs:
        got = fn(a, b).astype(np.float32)
        want = a.astype(np.float32) @ b.astype(np.float32)
        c = kernel.last_counters
        same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
            (cost.macs, cost.gm_read_bytes, cost.gm_write_bytes)
        close = np.allclose(got, want, rtol=2e-2, atol=2e-1)
        sim = "counts match, result ok" if same and close else "MISMATCH"
    bound = schedule_bound_read_bytes(k, soc)
    resident = "+".join(x for x, r in (("A", k.a_resident), ("B", k.b_resident)) if r) or "-"
    return [name, f"{k.m}x{k.n}x{k.k}" + (f" x{k.batch}" if k.batch > 1 else ""),
            f"{k.tile.base_m}x{k.tile.base_n}/{k.tile.c_bufs}, {resident}",
            f"{k.block_dim}/{soc.cube.cores}", f"{cost.macs / 1e9:.3g} G",
            f"{cost.gm_read_bytes / 2**20:.4g}", f"{cost.min_read_bytes / 2**20:.4g}",
            f"{bound / 2**20:.4g}", f"{cost.gm_read_bytes / bound:.2f}",
            f"{cost.compute_s * 1e6:.4g}", f"{cost.memory_s * 1e6:.4g}",
            f"{cost.estimate_s * 1e6:.4g} ({cost.bound})", f"{cost.peak_s * 1e6:.4g}",
            f"{cost.estimate_s / cost.peak_s:.2f}", sim]


HEADER = ["shape", "kernel M x N x K", "block/L0C bufs, L1-resident", "blocks", "MACs",
          "GM->L1 MiB", "min MiB", "bound MiB", "read/bound", "compute us", "memory us",
          "estimate us", "peak us", "est/peak", "sim"]


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit status 1 if a sim run disagrees with the model or numpy."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--soc", default="Ascend910B1")
    p.add_argument("--sim-macs", type=float, default=1e9)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a scalar fallback would be a failure here
        for name, (sa, sb) in SHAPES.items():
            rows.append(_row(name, sa, sb, args.soc, args.sim_macs))
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
        for r in [HEADER, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 1 if any(r[-1] == "MISMATCH" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
