"""Counts and a first-order time estimate of a MIX kernel (``mix_plan``).

GM bytes, per launch (``e`` the itemsize of C as the cube writes it):

* the cube part: its ``cube_cost`` reads (GM -> L1) and ``rows * N * e`` bytes through
  Fixpipe into the workspace;
* the hand-off: the vector cores read the same ``rows * N * e`` bytes back.  The
  workspace is ``block_dim * 2 * baseM * baseN * e`` bytes (two slots per cube core,
  e.g. 6 MiB for 24 cores of 128 x 256 float16 blocks), reused block after block,
  where the unfused pair writes and re-reads a whole ``rows x N`` array of C;
* the epilogue's own operands, as its copies read them: a same-shape array once, a
  per-row column once per N block, a row (bias) once per block and vector core with
  rows of it; and the outputs once.

So fusion moves no more GM bytes than the unfused cube + vector kernels (the same
round trip of C, through a workspace that stays small): what it saves is the second
launch, the whole-size intermediate and the serialization, as the vector cores work
on block ``i`` while the cube computes block ``i + 1``.  The estimate says so: the
unfused time is the cube kernel's estimate plus the vector kernel's (its GM bytes at
HBM bandwidth, the vector unit's arithmetic not counted), the fused time the larger
of the two parts [I: perfect overlap; the first and last blocks do not overlap].
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyasc.backend.ascendc.analysis import COL, FULL, ROW
from pyasc.backend.ascendc.cube_cost import cube_cost
from pyasc.backend.ascendc.mix_plan import MixKernel
from pyasc.backend.ascendc.soc import SoC


@dataclass
class MixCost:
    """What one MIX launch moves, and the estimates fused and unfused."""

    cube_read: int        # GM -> L1
    handoff: int          # Fixpipe -> workspace (and the same bytes read back)
    epilogue_read: int    # the vector cores' GM -> UB bytes (hand-off included)
    written: int          # the outputs (UB -> GM)
    cube_s: float
    vector_s: float

    @property
    def fused_s(self) -> float:
        return max(self.cube_s, self.vector_s)

    @property
    def unfused_s(self) -> float:
        return self.cube_s + self.vector_s

    @property
    def gm_bytes(self) -> int:
        return self.cube_read + self.handoff + self.epilogue_read + self.written


def _blocks(k: MixKernel) -> Iterator[tuple[int, int]]:
    """(curM, curN) of every block of C the kernel computes."""
    c, t = k.cube, k.cube.tile
    for _ in range(c.batch):
        for m0 in range(0, c.m, c.single_m):
            for n0 in range(0, c.n, c.single_n):
                m_end, n_end = min(c.m, m0 + c.single_m), min(c.n, n0 + c.single_n)
                for mt in range(m0, m_end, t.base_m):
                    for nt in range(n0, n_end, t.base_n):
                        yield min(t.base_m, m_end - mt), min(t.base_n, n_end - nt)


def mix_cost(k: MixKernel, soc: SoC) -> MixCost:
    """The counts and estimates of ``k`` on ``soc`` (module docstring)."""
    cube = soc.cube
    assert cube is not None
    cc = cube_cost(k.cube, soc)
    size = k.cube.out.itemsize
    handoff = k.rows * k.cols * size
    operands = 0
    for i in k.vec.array_inputs:
        if i.vv.buf is k.vec.inputs[k.c_arg].vv.buf:
            continue
        item = i.vv.dtype.itemsize
        for m, n in _blocks(k):
            halves = 2 if m >= 2 else 1
            operands += {FULL: m * n, COL: m, ROW: halves * n}[i.vv.cls] * item
    written = sum(k.rows * k.cols * o.buf.dtype.itemsize for o in k.vec.written if o.buf)
    read = handoff + operands
    return MixCost(cc.gm_read_bytes, handoff, read, written, cc.estimate_s,
                   (read + written) / cube.hbm_bytes_per_s)


__all__ = ["MixCost", "mix_cost"]
