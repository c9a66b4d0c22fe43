"""AscendC text and launch of a window-copy kernel (``copy_loops.CopyKernel``).

Block ``b`` takes the items ``b, b + GetBlockNum(), ...`` (an iteration of the user's
loop nest and an index over the box's outer dimensions).  Each item copies ``rows``
runs of ``run`` elements: ``DataCopyPad`` GM -> UB reads up to 4095 runs per call with
a byte gap between them (MTE2; each run padded to 32 bytes in UB), ``DataCopyPad`` UB ->
GM writes them with the destination's gap (MTE3); a run longer than one UB buffer is
cut into pieces, one row each.  Two UB buffers alternate (ping-pong), so MTE2 fills one
while MTE3 drains the other; the hand-offs are explicit flags: ``MTE2_MTE3`` (the data
is in UB) and ``MTE3_MTE2`` (the buffer is free again; pre-armed before the loop and
drained after it).  The per-iteration offsets are constant tables of the kernel.
"""

from __future__ import annotations

from pyasc.backend.ascendc.copy_loops import MAX_BLOCKS, UB_SLOT_BYTES, CopyKernel
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import Value


def chunks(k: CopyKernel) -> tuple[int, int]:
    """(elements of a run per piece, runs per ``DataCopyPad``)."""
    size = k.dtype.itemsize
    run_chunk = min(k.run, UB_SLOT_BYTES // size)
    padded = -(-run_chunk * size // 32) * 32
    gaps_ok = k.src_row >= k.run and k.dst_row >= k.run and run_chunk == k.run
    rows = min(MAX_BLOCKS, UB_SLOT_BYTES // padded, k.rows) if gaps_ok else 1
    return run_chunk, rows


class CopyEmitter:
    """Writes one copy kernel."""

    def __init__(self, w: CWriter, k: CopyKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        w.raw(f"// {k.name}: {len(k.src_offsets)} window copies of {k.rows} x {k.run} "
              f"{k.ctype} elements (DataCopyPad GM -> UB -> GM on the vector cores)")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}(GM_ADDR src, GM_ADDR dst)')
        w.raw("{")
        w.depth += 1
        self._prologue()
        with w.block("for (int64_t item = GetBlockIdx(); item < ITEMS; item += GetBlockNum())"):
            self._item()
        for p in (0, 1):
            w.line(f"WaitFlag<HardEvent::MTE3_MTE2>({p});", k.loc)
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def _prologue(self) -> None:
        k, w, t = self.k, self.w, self.k.ctype
        run_chunk, rows = chunks(k)
        outer = 1
        for e, _, _ in k.outer:
            outer *= e
        w.line(f"constexpr int64_t ITEMS = {k.items}, OUTER = {outer}, ROWS = {k.rows}, "
               f"RUN = {k.run}, SROW = {k.src_row}, DROW = {k.dst_row};")
        w.line(f"constexpr int64_t RUN_CHUNK = {run_chunk}, ROW_CHUNK = {rows}, "
               f"SLOT = {UB_SLOT_BYTES // k.dtype.itemsize};")
        for name, table in (("srcOff", k.src_offsets), ("dstOff", k.dst_offsets)):
            w.line(f"const uint64_t {name}[{len(table)}] = {{{', '.join(map(str, table))}}};")
        w.line(f"GlobalTensor<{t}> srcGm, dstGm;")
        w.line(f"srcGm.SetGlobalBuffer((__gm__ {t}*)src, {k.src_size});", k.loc)
        w.line(f"dstGm.SetGlobalBuffer((__gm__ {t}*)dst, {k.dst_size});", k.loc)
        w.line("TPipe pipe;")
        w.line("TBuf<TPosition::VECCALC> ubBuf;")
        w.line(f"pipe.InitBuffer(ubBuf, 2 * SLOT * sizeof({t}));", k.loc)
        w.line(f"LocalTensor<{t}> ub = ubBuf.Get<{t}>();", k.loc)
        for p in (0, 1):
            w.line(f"SetFlag<HardEvent::MTE3_MTE2>({p});", k.loc)
        w.line("int32_t step = 0;  // ping-pong counter of the UB buffers")

    def _item(self) -> None:
        """The item's offsets (outer dimensions innermost first), then its rows."""
        k, w = self.k, self.w
        w.line("const int64_t it = item / OUTER;")
        w.line("uint64_t s = srcOff[it], d = dstOff[it];")
        if k.outer:
            w.line("int64_t rest = item % OUTER;")
        for e, ss, ds in reversed(k.outer):
            w.line(f"s += (uint64_t)(rest % {e}) * {ss}; d += (uint64_t)(rest % {e}) * {ds}; "
                   f"rest /= {e};")
        with w.block("for (int64_t r0 = 0; r0 < ROWS; r0 += ROW_CHUNK)"):
            w.line("const uint16_t cnt = ROWS - r0 < ROW_CHUNK ? ROWS - r0 : ROW_CHUNK;")
            with w.block("for (int64_t e0 = 0; e0 < RUN; e0 += RUN_CHUNK)"):
                self._piece()

    def _piece(self) -> None:
        k, w, t = self.k, self.w, self.k.ctype
        w.line(f"const uint32_t len = (RUN - e0 < RUN_CHUNK ? RUN - e0 : RUN_CHUNK) * sizeof({t});")
        # the gaps only matter between the runs of one call (cnt > 1: then len is a run)
        w.line(f"const uint32_t sGap = cnt > 1 ? SROW * sizeof({t}) - len : 0, "
               f"dGap = cnt > 1 ? DROW * sizeof({t}) - len : 0;")
        w.line("const int32_t p = step & 1;")
        w.line("WaitFlag<HardEvent::MTE3_MTE2>(p);", k.loc)
        w.line(f"DataCopyPad(ub[p * SLOT], srcGm[s + r0 * SROW + e0], DataCopyExtParams(cnt, len, "
               f"sGap, 0, 0), DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0)));",
               k.loc)
        w.line("SetFlag<HardEvent::MTE2_MTE3>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE2_MTE3>(p);", k.loc)
        w.line("DataCopyPad(dstGm[d + r0 * DROW + e0], ub[p * SLOT], DataCopyExtParams(cnt, len, "
               "0, dGap, 0));", k.loc)
        w.line("SetFlag<HardEvent::MTE3_MTE2>(p);", k.loc)
        w.line("++step;")


def launch_copy(hb: HostBuilder, k: CopyKernel, src: Value, dst: Value, soc: SoC) -> None:
    """Launch ``k`` copying windows of ``src`` into ``dst`` (written in place)."""
    k.block_dim = max(1, min(k.items, soc.vector_blocks))
    hb.launch(k.name, hb.const(k.block_dim), [src, dst], [1])


__all__ = ["CopyEmitter", "chunks", "launch_copy"]
