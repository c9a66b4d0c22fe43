"""Tile shapes of a cube kernel and the split of its tiles over the cube cores.

A cube kernel keeps one *block* of C live in L0C while it runs the whole K loop for it:
``baseM x baseN`` fp32/int32 accumulators, fed per K step by an A slice (``baseM x
baseK``) and a B slice (``baseK x baseN``) that go GM -> L1 -> L0A/L0B, both
double-buffered in L1 and in L0A/L0B.  Every block reads its A rows and B columns over
all of K once, so per matrix product the GM -> L1 traffic is

    K * (ceil(N / baseN) * M + ceil(M / baseM) * N) elements,

about ``M N K (1 / baseN + 1 / baseM)``: the larger the live block, the less is re-read.
The block is bounded by L0C (128 KB on dav-c220, reference section 1.2): Mmad accumulates
nowhere else (the bias table is a row broadcast, ``cmatrixSource``).  The shapes offered:

* 128 x 128 with two L0C buffers (64 KB each): FIX drains one block while M fills the
  other;
* 128 x 256 and 256 x 128 with one L0C buffer (all 128 KB): a third less traffic than
  128 x 128 for large M and N, at the price of M waiting for FIX between blocks (one
  Fixpipe per K loop).

``baseK`` makes the larger of the two L0A/L0B slices 32 KB, half of L0A/L0B, so both fit
twice (ping-pong).  The planner (``cube_plan``) takes the shape with the best estimate of
``cube_cost``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc.soc import CubeUnit

BASE = 128                    # the smaller side of every block shape
L0AB_SLICE_BYTES = 32 * 1024  # half of L0A / L0B: one ping-pong buffer
SHAPES = ((BASE, BASE), (BASE, 2 * BASE), (2 * BASE, BASE))


@dataclass(frozen=True)
class TileShape:
    """One block of C live in L0C and the K step feeding it."""

    base_m: int
    base_n: int
    base_k: int
    c_bufs: int               # L0C buffers of baseM x baseN accumulators (1 or 2)

    def tiles(self, m: int, n: int) -> tuple[int, int]:
        """Blocks along M and N of an ``m x n`` C."""
        return -(-m // self.base_m), -(-n // self.base_n)

    def read_elems(self, m: int, n: int, k: int) -> int:
        """GM -> L1 elements of one ``m x n x k`` product (module docstring)."""
        mt, nt = self.tiles(m, n)
        return (nt * m + mt * n) * k


def tile_shapes(cube: CubeUnit, itemsize: int, acc_bytes: int) -> list[TileShape]:
    """The block shapes a kernel of ``itemsize``-byte operands may use on ``cube``."""
    shapes = []
    for bm, bn in SHAPES:
        block = bm * bn * acc_bytes
        if block > cube.l0c_bytes:
            continue
        base_k = L0AB_SLICE_BYTES // (max(bm, bn) * itemsize)
        shapes.append(TileShape(bm, bn, base_k, 2 if 2 * block <= cube.l0c_bytes else 1))
    return shapes


def _part_sizes(tiles: int, cores: int) -> list[int]:
    """Candidate blocks per unit along one axis: one per distinct unit count up to
    ``cores`` (more units than cores only pay with parts of one block)."""
    return sorted({-(-tiles // parts) for parts in range(1, min(tiles, cores) + 1)} | {1})


def split_cores(mt: int, nt: int, cores: int,
                batch: int = 1) -> tuple[int, int, int, int, int]:
    """Units over ``cores`` for ``mt x nt`` blocks per batch index: (blocks per unit
    along M, along N, units along M, along N, block_dim)."""
    best: tuple[tuple[int, int], tuple[int, int, int, int, int]] | None = None
    for sm in _part_sizes(mt, cores):
        for sn in _part_sizes(nt, cores):
            bm, bn = -(-mt // sm), -(-nt // sn)
            units = batch * bm * bn
            # every block reads its A and B panels, so the split does not change the GM
            # traffic: the busiest core's blocks, then the fewest units
            key = (-(-units // cores) * sm * sn, units)
            if best is None or key < best[0]:
                best = (key, (sm, sn, bm, bn, min(units, cores)))
    assert best is not None
    return best[1]


__all__ = ["BASE", "L0AB_SLICE_BYTES", "TileShape", "split_cores", "tile_shapes"]
