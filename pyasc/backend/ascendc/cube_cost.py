"""Counts and a first-order time estimate of a cube kernel, from its plan alone.

The counts are what the kernel moves and computes (equal to the ascend-sim counters of
a run, which tests check): MACs, GM -> L1 bytes (every block of C live in L0C reads its
A rows and B columns over all of K once: ``cube_tiling``), L0C -> GM bytes.
``min_read_bytes`` is the compulsory minimum, every element of the stored operands read
once; :func:`schedule_bound_read_bytes` is the least any tile schedule with the SoC's L1
and L0C can read (its docstring states the formula).

The time is an **estimate**, not a measurement: a roofline of

* compute: the busiest core's units, each a padded ``singleCoreM x singleCoreN x K``
  block (16-row/column and C0 granules, so a GEMV pays 16 rows), at
  ``soc.cube.macs_per_cycle(dtype)`` per cycle and ``soc.cube.clock_hz``;
* memory: all GM bytes read and written at ``soc.cube.hbm_bytes_per_s``, with no credit
  for the L2 cache, so re-reads count as HBM traffic (pessimistic);

``estimate_s = max(compute_s, memory_s)``; plans are chosen by it (it favours fewer GM
reads, which still pays when other data competes for L2).  ``l2_memory_s`` credits the L2
cache when the kernel's data (each operand element once, plus C) fits in it: that
compulsory traffic at HBM bandwidth, then the re-reads at ``l2_read_speedup`` times it,
one after the other (no overlap assumed); otherwise it equals ``memory_s``.
``estimate_l2_s = max(compute_s, l2_memory_s)``.  ``peak_s`` is the MACs at every cube
core's peak rate, the bound no schedule beats.  The numbers and their sources are in
``soc.CubeUnit``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pyasc.backend.ascendc.cube_tiling import Split, TileShape, read_elems
from pyasc.backend.ascendc.soc import CubeUnit, SoC
from pyasc.ir.types import ScalarType

GRANULE = 32   # bytes of one fractal row: the narrowest K slice a schedule can stage


class Strides(Protocol):
    """A batch group: its extent and how far A and B move along it (0: broadcast)."""

    @property
    def extent(self) -> int: ...
    @property
    def a_stride(self) -> int: ...
    @property
    def b_stride(self) -> int: ...


class Costed(Protocol):
    """What the model reads of a cube kernel plan (``cube_plan.CubeKernel``)."""

    @property
    def dtype(self) -> ScalarType: ...
    @property
    def out(self) -> ScalarType: ...
    @property
    def m(self) -> int: ...
    @property
    def n(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def c0(self) -> int: ...
    @property
    def tile(self) -> TileShape: ...
    @property
    def single_m(self) -> int: ...
    @property
    def single_n(self) -> int: ...
    @property
    def block_dim(self) -> int: ...
    @property
    def units(self) -> int: ...
    @property
    def batch(self) -> int: ...
    @property
    def groups(self) -> Sequence[Strides]: ...
    @property
    def split(self) -> Split: ...


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
    l2_memory_s: float      # memory_s with the L2 credit (module docstring)

    @property
    def estimate_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def estimate_l2_s(self) -> float:
        return max(self.compute_s, self.l2_memory_s)

    @property
    def bound_l2(self) -> str:
        return "compute" if self.compute_s >= self.l2_memory_s else "memory"

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _operand_elems(k: Costed, matrix: int, stride_of: str) -> int:
    """Elements of a stored operand: one matrix per batch index it moves along."""
    n = matrix
    for g in k.groups:
        if getattr(g, stride_of):
            n *= g.extent
    return n


def cube_cost(k: Costed, soc: SoC) -> CubeCost:
    """The counts and time estimate of ``k`` on ``soc`` (module docstring)."""
    cube = soc.cube
    assert cube is not None
    size = k.dtype.itemsize
    macs = k.batch * k.m * k.n * k.k
    read = k.batch * read_elems(k.tile, k.split, k.m, k.n, k.k) * size
    a = _operand_elems(k, k.m * k.k, "a_stride")
    b = _operand_elems(k, k.k * k.n, "b_stride")
    write = k.batch * k.m * k.n * k.out.itemsize
    unit = _up(min(k.m, k.single_m), 16) * _up(min(k.n, k.single_n), 16) * _up(k.k, k.c0)
    rate = cube.macs_per_cycle(k.dtype.name) * cube.clock_hz
    busiest = -(-k.units // k.block_dim) * unit
    least = (a + b) * size
    memory = (read + write) / cube.hbm_bytes_per_s
    return CubeCost(macs, read, write, least, busiest / rate, memory,
                    macs / (rate * cube.cores), l2_memory_s(least, read, write, cube, memory))


def l2_memory_s(least: int, read: int, write: int, cube: CubeUnit, memory_s: float) -> float:
    """GM time with the L2 credit: ``least`` + ``write`` bytes from HBM, the other
    ``read - least`` from L2, when ``least + write`` fits in L2; else ``memory_s``."""
    if least + write > cube.l2_bytes:
        return memory_s
    hbm = cube.hbm_bytes_per_s
    return (least + write) / hbm + max(read - least, 0) / (hbm * cube.l2_read_speedup)


def _least_reads_per_output(m: int, n: int, k: int, itemsize: int, acc_bytes: int,
                            cube: CubeUnit) -> float:
    """min (1/a + 1/b) over the schedules of :func:`schedule_bound_read_bytes`."""
    l1 = cube.l1_usable_bytes
    a = np.arange(1, m + 1, dtype=np.float64)
    # (i) an a x b block of C live in L0C, its A rows and B columns streamed through L1 in
    # double-buffered K slices of one 32-byte granule
    b = np.minimum(np.minimum(n, np.floor(cube.l0c_bytes / acc_bytes / a)),
                   np.floor(l1 / (2 * GRANULE)) - a)
    ok = b >= 1
    best = float(np.min(1 / a[ok] + 1 / b[ok])) if ok.any() else math.inf
    # (ii) a whole-K panel of a rows of A (or b columns of B) kept in L1 while every
    # column of B (row of A) streams past it; 16 rows of accumulators per column in L0C
    k_bytes = _up(k, GRANULE // itemsize) * itemsize
    panel = min(l1 // k_bytes, cube.l0c_bytes // (16 * acc_bytes))
    for rows, other in ((min(m, panel), n), (min(n, panel), m)):
        if rows >= 1:
            best = min(best, 1 / rows + 1 / other)
    return best


def schedule_bound_read_bytes(k: Costed, soc: SoC) -> int:
    """The least GM -> L1 bytes of a tile schedule with ``soc``'s L1 and L0C.

    Mmad accumulates only in L0C, so a schedule that never spills partial sums to GM
    (which would add GM traffic) computes every output in one of two ways, per core:

    (i) an ``a x b`` block of C stays live in L0C over the whole K loop while its A rows
        (``a x K``) and B columns (``K x b``) stream through L1 once, in K slices that
        fit double-buffered: ``a * b * acc_bytes <= L0C`` and ``2 * 32 B * (a + b) <=
        L1``; it reads ``K * (a + b)`` elements for ``a * b`` outputs;
    (ii) a whole-K panel of ``a`` rows of A stays in L1 (``a * K * itemsize <= L1``) while
         all ``N`` columns of B stream past it (or the same with B's columns): ``K * (a +
         N)`` elements for ``a * N`` outputs.

    Each output then costs ``K * (1/a + 1/b)`` element reads, so one ``M x N x K``
    product reads at least ``M N K min(1/a + 1/b)`` elements over the feasible ``(a,
    b)`` of (i) and (ii) (tails only add reads).  The bound is that times the batch
    (no reuse across batch indices is counted) in bytes, and at least
    ``min_read_bytes``.  On Ascend910B1 (L0C 128 KB, fp32 accumulators: ``a * b <=
    32768``) and 4096^3 float16 it is (i) with ``a = b = 181``:
    ``4096^3 * 2 B * 2/181`` = 1448 MiB.
    """
    cube = soc.cube
    assert cube is not None
    acc = 4  # fp32 / int32 L0C elements on dav-c220
    per_output = _least_reads_per_output(k.m, k.n, k.k, k.dtype.itemsize, acc, cube)
    per_matrix = math.ceil(k.m * k.n * k.k * per_output - 1e-6) * k.dtype.itemsize
    return max(k.batch * per_matrix, cube_cost(k, soc).min_read_bytes)


__all__ = ["CubeCost", "cube_cost", "l2_memory_s", "schedule_bound_read_bytes"]
