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
twice (ping-pong).

**L1 residency.**  A core's unit of work is ``singleCoreM x singleCoreN`` of C, walked
M block by M block and, inside, N block by N block.  When K is small enough, L1 keeps
what the next blocks read again instead of streaming it twice:

* ``a_resident``: the current M block's A rows over all of K (``baseM x K``) stay in L1
  while the unit's N blocks use them: A is read once per unit, not once per N block;
* ``b_resident``: the unit's B columns over all of K (``K x singleCoreN``) stay in L1
  across its M blocks: B is read once per unit.

Per batch index the reads are then ``K * (M * (units along N if a_resident else N
blocks) + N * (units along M if b_resident else M blocks))`` elements
(:func:`read_elems`).  The planner (``cube_plan``) takes the shape, split and residency
with the best estimate of ``cube_cost``.
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

    def k_steps(self, k: int) -> int:
        """Steps of the K loop."""
        return -(-k // self.base_k)


@dataclass(frozen=True)
class Split:
    """Units over the cube cores, and what L1 keeps across a unit's blocks."""

    sm: int                   # blocks per unit along M
    sn: int                   # blocks per unit along N
    bm: int                   # units along M
    bn: int                   # units along N
    block_dim: int
    a_resident: bool = False
    b_resident: bool = False


def read_elems(tile: TileShape, split: Split, m: int, n: int, k: int) -> int:
    """GM -> L1 elements of one ``m x n x k`` product (module docstring)."""
    mt, nt = tile.tiles(m, n)
    a = m * (split.bn if split.a_resident else nt)
    b = n * (split.bm if split.b_resident else mt)
    return (a + b) * k


def l1_bytes(tile: TileShape, split: Split, k: int, itemsize: int) -> int:
    """L1 a kernel uses: the A region, then the B region (two slices when streamed)."""
    steps = tile.k_steps(k)
    a = (steps if split.a_resident else 2) * tile.base_m * tile.base_k
    b = (steps * split.sn if split.b_resident else 2) * tile.base_k * tile.base_n
    return (a + b) * itemsize


def with_residency(tile: TileShape, split: Split, m: int, n: int, k: int,
                   itemsize: int, cube: CubeUnit) -> Split:
    """``split`` with the L1 residency that fits ``cube``'s L1 and reads the least
    (a panel that no other block reads again is not kept)."""
    best = split
    for a_res in (False, True):
        for b_res in (False, True):
            if (a_res and split.sn == 1) or (b_res and split.sm == 1):
                continue
            s = Split(split.sm, split.sn, split.bm, split.bn, split.block_dim, a_res, b_res)
            if l1_bytes(tile, s, k, itemsize) <= cube.l1_usable_bytes and \
                    read_elems(tile, s, m, n, k) < read_elems(tile, best, m, n, k):
                best = s
    return best


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


def splits(mt: int, nt: int, cores: int, batch: int = 1) -> list[Split]:
    """Every split of ``mt x nt`` blocks per batch index into units over ``cores`` (one
    per distinct unit count along each axis), without residency."""
    out = []
    for sm in _part_sizes(mt, cores):
        for sn in _part_sizes(nt, cores):
            bm, bn = -(-mt // sm), -(-nt // sn)
            out.append(Split(sm, sn, bm, bn, min(batch * bm * bn, cores)))
    return out


__all__ = ["BASE", "L0AB_SLICE_BYTES", "Split", "TileShape", "l1_bytes", "read_elems", "splits",
           "tile_shapes", "with_residency"]
