"""Counts and a first-order time estimate of a cube kernel, from its plan alone.

The counts are what the kernel moves and computes (equal to the ascend-sim counters of
a run, which tests check): MACs, GM -> L1 bytes (every base tile reads its A rows and
B columns over all of K), L0C -> GM bytes.  ``min_read_bytes`` is the compulsory
minimum, every element of the stored operands read once.

The time is an **estimate**, not a measurement: a roofline of

* compute: the busiest core's units, each a padded ``singleCoreM x singleCoreN x K``
  block (16-row/column and C0 granules, so a GEMV pays 16 rows), at
  ``soc.cube.macs_per_cycle(dtype)`` per cycle and ``soc.cube.clock_hz``;
* memory: all GM bytes read and written at ``soc.cube.hbm_bytes_per_s``, with no credit
  for the L2 cache, so re-reads count as HBM traffic (pessimistic);

``estimate_s = max(compute_s, memory_s)``.  ``peak_s`` is the MACs at every cube core's
peak rate, the bound no schedule beats.  The numbers and their sources are in
``soc.CubeUnit``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc.cube_plan import BASE_MN, CubeKernel
from pyasc.backend.ascendc.soc import SoC


@dataclass(frozen=True)
class CubeCost:
    """What one cube kernel launch moves and computes, and how long it may take."""

    macs: int
    gm_read_bytes: int      # GM -> L1
    gm_write_bytes: int     # L0C -> GM
    min_read_bytes: int     # every stored operand element once
    compute_s: float
    memory_s: float
    peak_s: float

    @property
    def estimate_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _operand_elems(k: CubeKernel, matrix: int, stride_of: str) -> int:
    """Elements of a stored operand: one matrix per batch index it moves along."""
    n = matrix
    for g in k.groups:
        if getattr(g, stride_of):
            n *= g.extent
    return n


def cube_cost(k: CubeKernel, soc: SoC) -> CubeCost:
    """The counts and time estimate of ``k`` on ``soc`` (module docstring)."""
    cube = soc.cube
    assert cube is not None
    size = k.dtype.itemsize
    mt, nt = -(-k.m // BASE_MN), -(-k.n // BASE_MN)
    macs = k.batch * k.m * k.n * k.k
    read = k.batch * (nt * k.m + mt * k.n) * k.k * size
    a = _operand_elems(k, k.m * k.k, "a_stride")
    b = _operand_elems(k, k.k * k.n, "b_stride")
    write = k.batch * k.m * k.n * k.out.itemsize
    unit = _up(min(k.m, k.single_m), 16) * _up(min(k.n, k.single_n), 16) * _up(k.k, k.c0)
    rate = cube.macs_per_cycle(k.dtype.name) * cube.clock_hz
    busiest = -(-k.units // k.block_dim) * unit
    return CubeCost(macs, read, write, (a + b) * size, busiest / rate,
                    (read + write) / cube.hbm_bytes_per_s, macs / (rate * cube.cores))


__all__ = ["CubeCost", "cube_cost"]
