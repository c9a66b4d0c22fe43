"""A conv2d whose im2col is built in L1 and its fused epilogue: one MIX kernel.

The cube core runs the conv kernel (``emit_conv``) unchanged but for where a finished
L0C tile goes: ``Fixpipe`` writes its ``m x nCur`` (pixels x output channels) into
workspace slot ``tile % 2`` of its core (row pitch ``baseN``) and hands it to the
core's two vector cores with ``CrossCoreSetFlag``, as a matmul's MIX kernel does
(``mix_plan``).  The epilogue is the fusion group planned as for a matmul: in the
matmul's NCHW space (``(N, 1, O, OH*OW)``, ``cube_reshape``), rows = the ``N * O``
channel planes, columns = the pixels; so the (O, 1, 1) bias is a per-row column, a
residual a whole array.  Each vector core takes half of the tile's channels, reads
them *transposed* from the slot (one ``DataCopyPad`` of the ``m`` pixel rows' channel
runs into a scratch tile, then one ``Gather`` through an offset table, as the transpose
kernels do: ``xpose_kernel``), runs the group's tile program on its rows and writes
them to NCHW directly: the result needs no transpose kernel.

``conv_mix_counts`` are the bytes the launch moves (the sim's counters equal them).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import ClassVar

from pyasc.backend.ascendc.analysis import COL, FULL, ROW
from pyasc.backend.ascendc.conv_plan import ConvL1Plan, conv_l1_counts
from pyasc.backend.ascendc.cores import MIX
from pyasc.backend.ascendc.emit_conv import ConvKernel
from pyasc.backend.ascendc.mix_plan import SLOTS
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_alloc import MAX_TILE_ROWS, PhysBuf, choose_tile
from pyasc.backend.ascendc.vec_kernel import VectorKernel
from pyasc.ir.types import element_type

XPOSE_BUFS = ("cScr_", "cOffs_", "cIdxP_", "cIdxQ_")
"""The vector part's extra UB tiles: the slot's channel runs (C's dtype), the Gather
offset table (uint32) and two float tiles its construction uses."""


@dataclass
class ConvMixKernel:
    """A conv kernel (``conv``, Fixpipe to the workspace) and its epilogue ``vec``."""

    core: ClassVar[str] = MIX
    name: str
    conv: ConvKernel
    vec: VectorKernel
    c_arg: int                 # the position of the conv result among vec's inputs
    dynamic: ClassVar[bool] = False

    @property
    def plan(self) -> ConvL1Plan:
        """The conv kernel's plan."""
        return self.conv.plan

    @property
    def block_dim(self) -> int:
        """Cube cores launched, each with its two vector cores."""
        return self.conv.plan.blocks

    @property
    def rows(self) -> int:
        """C's rows in the epilogue's space: the N * O channel planes."""
        return self.plan.geo.n * self.plan.geo.o

    @property
    def cols(self) -> int:
        """C's row length in the epilogue's space: the pixels."""
        return self.plan.geo.oh * self.plan.geo.ow

    @property
    def workspace_elems(self) -> int:
        """Elements of the workspace: two ``baseM x baseN`` slots per cube core."""
        return self.block_dim * SLOTS * self.plan.base_m * self.plan.base_n


def plan_conv_mix(plan: ConvL1Plan, vec: VectorKernel, c_arg: int, soc: SoC,
                  name: str) -> ConvMixKernel:
    """``plan``'s conv kernel writing the workspace and a copy of ``vec`` retiled for
    half of a tile's channels at a time: a UB tile holds at least one 32-byte block of
    channel rows of the longest pixel row (so a scratch tile of channel runs fits it),
    at most half a tile.  Raises ``OutOfMemoryError`` when UB cannot."""
    c_dtype = element_type(vec.inputs[c_arg].arg.type)
    out = c_dtype.name
    v = copy.copy(vec)
    v.name = name
    cu = 32 // c_dtype.itemsize  # C elements per 32-byte block
    v.phys = [*vec.phys, PhysBuf(XPOSE_BUFS[0], "tile", c_dtype.itemsize, "calc"),
              *(PhysBuf(b, "tile", 4, "calc") for b in XPOSE_BUFS[1:])]
    pitch = -(-min(plan.base_m, plan.band_rows * plan.geo.ow) // v.unit) * v.unit
    half = -(-min(plan.geo.o, plan.base_n) // 2)
    what = f"the epilogue of the MIX kernel {name}"
    v.tile = choose_tile(v.phys, soc.init_buffer_bytes, v.unit, pitch * cu,
                         pitch * -(-half // cu) * cu, vec.group.loc, what, soc.name,
                         max_rows=MAX_TILE_ROWS)
    return ConvMixKernel(name, ConvKernel(name, plan, out), v, c_arg)


@dataclass(frozen=True)
class ConvMixCounts:
    """GM bytes of one launch: the cube's reads (``gm_to_l1``) and its workspace
    writes (``l0c_to_gm``), the vector cores' reads (workspace and operands) and
    writes (the results)."""

    gm_to_l1: int
    l0c_to_gm: int
    gm_to_ub: int
    ub_to_gm: int


def _m_tiles(p: ConvL1Plan) -> list[int]:
    """The pixels of each M tile of one image, in order."""
    g, out = p.geo, []
    for r in range(p.bands):
        pixels = (min(g.oh, (r + 1) * p.band_rows) - r * p.band_rows) * g.ow
        out += [min(p.base_m, pixels - m0) for m0 in range(0, pixels, p.base_m)]
    return out


def conv_mix_counts(k: ConvMixKernel) -> ConvMixCounts:
    """What kernel ``k`` moves: the conv kernel's GM reads, C once through the
    workspace (written by Fixpipe, read by the vector cores), each whole operand and
    result once, a per-channel column once per M tile, a per-pixel row once per
    (M tile, N block, vector core with channels)."""
    p, g = k.plan, k.plan.geo
    c_size = element_type(k.vec.inputs[k.c_arg].arg.type).itemsize
    conv = conv_l1_counts(p, c_size)
    tiles = _m_tiles(p)
    halves = []
    for n0 in range(0, g.o, p.base_n):
        n_cur = min(p.base_n, g.o - n0)
        half = -(-n_cur // 2)
        halves.append((n_cur > half) + 1)
    reads = conv.gm_written
    for j, i in enumerate(k.vec.inputs):
        size = element_type(i.arg.type).itemsize
        if j == k.c_arg:
            continue
        if i.vv.cls == FULL:
            reads += g.n * g.o * g.oh * g.ow * size
        elif i.vv.cls == COL:
            reads += g.n * len(tiles) * g.o * size
        elif i.vv.cls == ROW:
            reads += g.n * sum(tiles) * sum(halves) * size
    results = k.vec.group.result_values
    writes = sum(g.n * g.o * g.oh * g.ow * element_type(results[o.index].type).itemsize
                 for o in k.vec.written)
    return ConvMixCounts(conv.gm_read, conv.gm_written, reads, writes)


__all__ = ["XPOSE_BUFS", "ConvMixCounts", "ConvMixKernel", "conv_mix_counts", "plan_conv_mix"]
