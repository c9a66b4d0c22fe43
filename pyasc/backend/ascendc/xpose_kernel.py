"""A device transpose: the last two axes of a contiguous ``(B, R, C)`` array on the vector
cores (``TransposeKernel``), for the data movement a host program would otherwise do in
numpy between kernels (conv2d's NCHW -> NHWC and back, a b32 matmul operand the cube's
LoadData cannot transpose).  On an NPU those arrays live in device memory, so a host
transpose is a device -> host -> device round trip outside every kernel's counters.

The work is tiles of ``TR x TC`` input elements (``b, r0:r0+TR, c0:c0+TC``); block ``k``
takes the tiles ``k, k + GetBlockNum(), ...``.  Per tile: ``DataCopyPad`` GM -> UB
(``TR`` runs of ``TC`` elements, each run padded to 32 bytes in UB, or one run when the
tile holds whole rows: ``TC == C``), one ``Gather`` UB -> UB that writes the transposed
tile (element ``(j, i)`` of the output tile reads byte ``(i * IP + j) * size`` of the
input tile: an offset table), then ``DataCopyPad`` UB -> GM (``TC`` runs of ``TR``
elements, or one run when ``TR == R``).  Why ``Gather``: it reads any element-aligned
byte offset of a UB buffer (asc-devkit ``dav_c220/kernel_operator_vec_gather_impl.h``,
already the stencil and pool kernels' in-UB shift and modeled by ascend-sim), so odd
``R``/``C`` (3, 17) and tails need no special case; the hardware ``Transpose`` /
``TransDataTo5HD`` take fixed 16 x 16 b16 blocks or NCHW->NC1HWC0 layouts whose
semantics the reference does not give, so they are not used [I].

The offset table depends only on the tile's UB pitches, so it is built once per block,
on the vector unit: ``p`` (``CreateVecIndex``, float), ``j = floor((p + 0.5) / OP)``
(``Cast`` ``CAST_FLOOR``), ``i = p - j * OP``, offset ``(i * IP + j) * size`` (exact in
float: every value is below 2**24).  Two UB tiles of each side alternate (ping-pong) with
explicit flags: ``MTE2_V`` / ``V_MTE3`` forward, ``V_MTE2`` (the input tile is free) and
``MTE3_V`` (the output tile is free) backward, pre-armed and drained.  Each element is
read from GM once and written once: the kernel moves ``2 * B * R * C * size`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.core import Location
from pyasc.ir.types import ScalarType

# elements of one tile (both UB pitches included); Gather's count form issues
# count / (256 / size) repeats as a uint8_t (asc-devkit kernel_operator_vec_gather_intf_impl.h
# :215 [V]), so one Gather takes at most 255 * 64 b32 elements
TILE_ELEMS = 8192
ROW_CAP = 64        # tile rows when the rows are not whole (R > ROW_CAP)


@dataclass
class TransposeKernel:
    """``out[b, c, r] = in[b, r, c]`` for a ``(batch, rows, cols)`` array (docstring)."""

    core: ClassVar[str] = VECTOR
    name: str
    loc: Location
    dtype: ScalarType
    batch: int
    rows: int          # R
    cols: int          # C
    tr: int            # tile rows (input rows per tile)
    tc: int            # tile columns
    block_dim: int = 1

    @property
    def ctype(self) -> str:
        return ctype(self.dtype)

    @property
    def in_pitch(self) -> int:
        """UB elements between the rows of an input tile (IP)."""
        return self.cols if self.tc == self.cols else self.tc

    @property
    def out_pitch(self) -> int:
        """UB elements between the rows of an output tile (OP)."""
        return self.rows if self.tr == self.rows else self.tr

    @property
    def items(self) -> int:
        """Tiles of the launch: the units the blocks share."""
        return self.batch * -(-self.rows // self.tr) * -(-self.cols // self.tc)

    @property
    def gm_bytes(self) -> int:
        """GM bytes one launch reads plus writes: each element once each way."""
        return 2 * self.batch * self.rows * self.cols * self.dtype.itemsize

    @property
    def ub_bytes(self) -> int:
        """UB the kernel's one buffer takes: the offset table, two tiles each side."""
        size = self.dtype.itemsize
        return (_up32(self.tc * self.out_pitch * 4) + 2 * _up32(self.tr * self.in_pitch * size)
                + 2 * _up32(self.tc * self.out_pitch * size))


def _up32(n: int) -> int:
    return -(-n // 32) * 32


def transposable(dtype: ScalarType, soc: SoC) -> bool:
    """Whether ``soc``'s vector unit transposes ``dtype`` arrays (Gather takes it, and
    the offset table's float/int32 APIs exist)."""
    return (soc.supports("gather", dtype.name) and soc.supports("arith", "f32")
            and soc.supports_cast("f32", "i32", "CAST_FLOOR")
            and soc.supports_cast("i32", "f32", "CAST_NONE"))


def plan_transpose(batch: int, rows: int, cols: int, dtype: ScalarType, soc: SoC, name: str,
                   loc: Location) -> TransposeKernel:
    """The tiling of a ``(batch, rows, cols)`` transpose: tiles of at most
    :data:`TILE_ELEMS` elements; whole rows (one DMA run per tile side) where they fit,
    else pitches that are 32-byte multiples (every UB row of a tile starts aligned)."""
    align = 32 // dtype.itemsize
    tr = min(rows, ROW_CAP)
    tc = min(cols, max(align, TILE_ELEMS // tr // align * align))
    if tc == cols:  # whole input rows: as many of them as fit
        tr = min(rows, max(1, TILE_ELEMS // cols))
        if tr < rows:
            tr = max(align, tr // align * align)
    k = TransposeKernel(name, loc, dtype, batch, rows, cols, tr, tc)
    k.block_dim = max(1, min(k.items, soc.vector_blocks))
    assert k.ub_bytes <= soc.init_buffer_bytes, (k.ub_bytes, k)
    assert k.tc * k.out_pitch <= 255 * (256 // max(2, dtype.itemsize)), k  # one Gather
    return k


class TransposeEmitter:
    """Writes one :class:`TransposeKernel`."""

    def __init__(self, w: CWriter, k: TransposeKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        w.raw(f"// {k.name}: transpose of the last two axes of a {k.batch} x {k.rows} x "
              f"{k.cols} {k.ctype} array (tiles of {k.tr} x {k.tc}: DataCopyPad GM -> UB, "
              "Gather, DataCopyPad UB -> GM on the vector cores)")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}(GM_ADDR src, GM_ADDR dst)')
        w.raw("{")
        w.depth += 1
        self._prologue()
        self._table()
        with w.block("for (int64_t item = GetBlockIdx(); item < ITEMS; item += GetBlockNum())"):
            self._item()
        for p in (0, 1):
            w.line(f"WaitFlag<HardEvent::V_MTE2>({p});", k.loc)
            w.line(f"WaitFlag<HardEvent::MTE3_V>({p});", k.loc)
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def _prologue(self) -> None:
        k, w, t = self.k, self.w, self.k.ctype
        size = k.dtype.itemsize
        n = k.tc * k.out_pitch
        w.line(f"constexpr int64_t B = {k.batch}, R = {k.rows}, C = {k.cols}, TR = {k.tr}, "
               f"TC = {k.tc}, IP = {k.in_pitch}, OP = {k.out_pitch};")
        w.line(f"constexpr int64_t NR = {-(-k.rows // k.tr)}, NC = {-(-k.cols // k.tc)}, "
               f"ITEMS = {k.items};")
        w.line(f"constexpr int64_t IDX_BYTES = {_up32(n * 4)}, IN_BYTES = "
               f"{_up32(k.tr * k.in_pitch * size)}, OUT_BYTES = {_up32(n * size)};")
        w.line(f"using T = {t};")
        w.line(f"GlobalTensor<{t}> srcGm, dstGm;")
        w.line(f"srcGm.SetGlobalBuffer((__gm__ {t}*)src, B * R * C);", k.loc)
        w.line(f"dstGm.SetGlobalBuffer((__gm__ {t}*)dst, B * R * C);", k.loc)
        w.line("TPipe pipe;")
        w.line("TBuf<TPosition::VECCALC> idxBuf, inBuf, outBuf;")
        for buf, size in (("idxBuf", "IDX_BYTES"), ("inBuf", "2 * IN_BYTES"),
                          ("outBuf", "2 * OUT_BYTES")):
            w.line(f"pipe.InitBuffer({buf}, {size});", k.loc)
        w.line("LocalTensor<int32_t> idx = idxBuf.Get<int32_t>();")
        w.line(f"LocalTensor<{t}> in = inBuf.Get<{t}>(), out = outBuf.Get<{t}>();")

    def _table(self) -> None:
        """The byte offsets of the output tile's elements in the input tile, built in
        float on the tiles' space (not yet used) and kept in ``idx``."""
        k, w = self.k, self.w
        n = k.tc * k.out_pitch
        w.line("// offset table: element p = j * OP + i of an output tile reads input "
               "element i * IP + j")
        # scratch: each side's two tiles hold 2 * n * size >= 4 * n bytes (size >= 2)
        w.line("LocalTensor<float> pf = inBuf.Get<float>(), qf = outBuf.Get<float>();")
        steps = [
            f"CreateVecIndex(pf, 0.0f, {n});                                   // p",
            f"Adds(qf, pf, 0.5f, {n});",
            f"Muls(qf, qf, {1.0 / k.out_pitch!r}f, {n});",
            f"Cast(idx, qf, RoundMode::CAST_FLOOR, {n});                       // j",
            f"Cast(qf, idx, RoundMode::CAST_NONE, {n});",
            f"Muls(qf, qf, -{float(k.out_pitch)!r}f, {n});",
            f"Add(pf, pf, qf, {n});                                            // i",
            f"Cast(qf, idx, RoundMode::CAST_NONE, {n});",
            f"Muls(pf, pf, {float(k.in_pitch)!r}f, {n});",
            f"Add(pf, pf, qf, {n});                                            // i * IP + j",
            f"Muls(pf, pf, {float(k.dtype.itemsize)!r}f, {n});",
            f"Cast(idx, pf, RoundMode::CAST_RINT, {n});                        // bytes",
        ]
        for s in steps:
            w.line(s, k.loc)
        w.line("LocalTensor<uint32_t> offs = idx.ReinterpretCast<uint32_t>();")
        # the V pipe runs in order: the Gathers follow the table; MTE2 overwrites the
        # scratch only after the pre-armed V_MTE2 flags, issued after the table
        for p in (0, 1):
            w.line(f"SetFlag<HardEvent::V_MTE2>({p});", k.loc)
            w.line(f"SetFlag<HardEvent::MTE3_V>({p});", k.loc)
        w.line("int32_t step = 0;  // ping-pong counter of the UB tiles")

    def _item(self) -> None:
        """One tile: its place, GM -> UB, the Gather, UB -> GM."""
        k, w, t = self.k, self.w, self.k.ctype
        w.line("const int64_t cb = item % NC, rb = (item / NC) % NR, b = item / (NC * NR);")
        w.line("const int64_t r0 = rb * TR, c0 = cb * TC;")
        w.line("const int64_t tr = R - r0 < TR ? R - r0 : TR, tc = C - c0 < TC ? C - c0 : TC;")
        w.line("const int32_t p = step & 1;")
        w.line("LocalTensor<T> inP = in[p * (IN_BYTES / sizeof(T))], "
               "outP = out[p * (OUT_BYTES / sizeof(T))];")
        w.line("WaitFlag<HardEvent::V_MTE2>(p);", k.loc)
        if k.tc == k.cols:  # whole rows: one contiguous run
            params = f"DataCopyExtParams(1, static_cast<uint32_t>(tr * C * sizeof({t})), 0, 0, 0)"
        else:
            params = (f"DataCopyExtParams(static_cast<uint16_t>(tr), static_cast<uint32_t>(tc * "
                      f"sizeof({t})), static_cast<uint32_t>((C - tc) * sizeof({t})), "
                      f"static_cast<uint32_t>((IP * sizeof({t}) - (tc * sizeof({t}) + 31) / 32 * "
                      "32) / 32), 0)")
        w.line(f"DataCopyPad(inP, srcGm[(b * R + r0) * C + c0], {params}, "
               f"DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0)));", k.loc)
        w.line("SetFlag<HardEvent::MTE2_V>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE2_V>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE3_V>(p);", k.loc)
        w.line("Gather(outP, inP, offs, 0, static_cast<uint32_t>(tc * OP));", k.loc)
        w.line("SetFlag<HardEvent::V_MTE2>(p);", k.loc)
        w.line("SetFlag<HardEvent::V_MTE3>(p);", k.loc)
        w.line("WaitFlag<HardEvent::V_MTE3>(p);", k.loc)
        if k.tr == k.rows:
            params = f"DataCopyExtParams(1, static_cast<uint32_t>(tc * R * sizeof({t})), 0, 0, 0)"
        else:
            params = (f"DataCopyExtParams(static_cast<uint16_t>(tc), static_cast<uint32_t>(tr * "
                      f"sizeof({t})), static_cast<uint32_t>((OP * sizeof({t}) - (tr * sizeof({t}) "
                      f"+ 31) / 32 * 32) / 32), static_cast<uint32_t>((R - tr) * sizeof({t})), 0)")
        w.line(f"DataCopyPad(dstGm[(b * C + c0) * R + r0], outP, {params});", k.loc)
        w.line("SetFlag<HardEvent::MTE3_V>(p);", k.loc)
        w.line("++step;")


def transpose_source(k: TransposeKernel) -> str:
    """The whole source of ``k`` alone (tests compile it without a program)."""
    w = CWriter(f"{k.name}.cpp")
    w.raw('#include "kernel_operator.h"')
    w.raw("using namespace AscendC;")
    w.raw("")
    TransposeEmitter(w, k).emit()
    return w.text()


__all__ = ["TransposeEmitter", "TransposeKernel", "plan_transpose", "transposable",
           "transpose_source"]
