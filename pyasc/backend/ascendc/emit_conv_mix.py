"""AscendC text of a conv MIX kernel (``conv_mix.ConvMixKernel``): the L1-im2col conv
kernel on the cube core, the fused epilogue on its two vector cores writing NCHW.

The entry point is ``KERNEL_TYPE_MIX_AIC_1_2`` split by core type, as ``emit_mix``:

* **cube core**: ``emit_conv``'s body with ``y`` this core's two workspace slots; each
  finished L0C tile (``m`` pixels x ``nCur`` channels) goes there by ``Fixpipe`` (row
  pitch ``baseN``) after ``CrossCoreWaitFlag(FREE + slot)`` (from its third tile on),
  then ``CrossCoreSetFlag<2, PIPE_FIX>(READY + slot)``; after its last tile it waits
  for the slots still out;
* **vector cores**: walk the same items, M tiles and N blocks (in the cube's order:
  N blocks outside when the weights are streamed); sub-block ``s`` takes
  channels ``[s * half, ...)`` of the tile (``half = ceil(nCur / 2)``), waits
  ``READY + slot``, runs the epilogue's tile program on them as rows of NCHW (row =
  channel plane ``img * O + channel``, columns = the tile's pixels, ``OH*OW`` apart in
  GM) and sets ``FREE + slot`` on ``PIPE_MTE2``.  C's rows come transposed out of the
  slot: one ``DataCopyPad`` of the ``m`` pixel rows' runs of ``rows`` channels into a
  scratch tile (runs padded to ``rp_``, a 32-byte multiple), then ``Gather`` with the
  offset table ``(p * rp_ + r) * size`` for tile element ``r * pitch_ + p`` (built on
  the vector unit when ``pitch_`` or ``rp_`` change, as ``xpose_kernel``'s).
"""

from __future__ import annotations

from pyasc.backend.ascendc.conv_mix import XPOSE_BUFS, ConvMixKernel
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.emit_conv import CTYPES, emit_conv_body, params
from pyasc.backend.ascendc.emit_mix import _PAD, _VecPart
from pyasc.backend.ascendc.emit_vector import VectorEmitter, class_name
from pyasc.backend.ascendc.mix_plan import FREE, READY, SLOTS

_FIXPIPE_WS = f"""\
if (tile >= {SLOTS}) CrossCoreWaitFlag<2, PIPE_FIX>({FREE} + t);
Fixpipe(yGm[t * cTile], acc[t * cTile],
        FixpipeParamsV220(nCur, m, mPad, baseN, false, QuantMode_t::{{quant}}, 0, 1, 0, 0, 0));
CrossCoreSetFlag<2, PIPE_FIX>({READY} + t);"""
"""A finished tile into workspace slot ``t`` (= tile % 2), handed to the vector cores."""

_TAIL = (f"for (int32_t q = tile > {SLOTS} ? tile - {SLOTS} : 0; q < tile; ++q) "
         f"CrossCoreWaitFlag<2, PIPE_FIX>({FREE} + q % {SLOTS});")

_PROCESS = ("n", "o", "oh", "ow", "bandRows", "bands", "baseM", "baseN")
"""The conv parameters the vector cores' walk over the tiles uses."""

# the offset table: tile element q = r * pitch_ + p reads scratch element p * rp_ + r
_TABLE = """\
LocalTensor<float> pf = cIdxP_.Get<float>(), qf = cIdxQ_.Get<float>();
LocalTensor<int32_t> idx = cOffs_.Get<int32_t>();
const int32_t nq = static_cast<int32_t>(tileRows_ * pitch_);
CreateVecIndex(pf, 0.0f, nq);                                    // q
Adds(qf, pf, 0.5f, nq);
Muls(qf, qf, 1.0f / static_cast<float>(pitch_), nq);
Cast(idx, qf, RoundMode::CAST_FLOOR, nq);                        // r
Cast(qf, idx, RoundMode::CAST_NONE, nq);
Muls(qf, qf, -static_cast<float>(pitch_), nq);
Add(pf, pf, qf, nq);                                             // p
Muls(pf, pf, static_cast<float>(rp_), nq);
Cast(qf, idx, RoundMode::CAST_NONE, nq);
Add(pf, pf, qf, nq);                                             // p * rp_ + r
Muls(pf, pf, static_cast<float>(sizeof({t})), nq);
Cast(idx, pf, RoundMode::CAST_RINT, nq);                         // bytes
tabPitch_ = pitch_; tabRp_ = rp_;"""


class _ConvVecPart(_VecPart):
    """The epilogue class of a conv MIX kernel (rows: channel planes of NCHW)."""

    def __init__(self, w: CWriter, mk: ConvMixKernel) -> None:
        VectorEmitter.__init__(self, w, mk.vec)
        self.mk = mk  # type: ignore[assignment]
        self.c_buf = mk.vec.inputs[mk.c_arg].vv.buf
        assert self.c_buf is not None
        self.ct = CTYPES[mk.conv.out]
        self.rows_c, self.cols_c = "ROWS", "COLS"

    def _constants(self) -> None:
        VectorEmitter._constants(self)
        mk, p = self.mk, self.mk.plan
        if not self.rows:
            self.w.line(f"static constexpr int64_t MAX_TILE_ROWS = {self.k.max_tile_rows()};")
        self.w.line(f"static constexpr int64_t ROWS = {mk.rows}, COLS = {mk.cols};  "
                    "// C as N * O channel planes of OH * OW pixels")
        self.w.line(f"static constexpr int32_t BASE_M = {p.base_m}, BASE_N = {p.base_n};")
        self.w.line(f"static constexpr int32_t CU = {32 // (2 if self.ct == 'half' else 4)};"
                    "  // C elements per 32-byte block")
        self.w.line(f"static constexpr int32_t GATHER_MAX = {255 * 256 // self._c_size()};"
                    "  // elements of one Gather (255 repeats)")

    def _c_size(self) -> int:
        return 2 if self.ct in ("half", "bfloat16_t") else 4

    def _process_mix(self) -> None:
        w = self.w
        names = _PROCESS + ("groupN",) * self.mk.plan.stream
        sig = ", ".join(f"int32_t {p}" for p in names)
        with w.block(f"__aicore__ inline void Process({sig})"):
            stream = self.mk.plan.stream
            w.line("const int32_t nGroups = " + ("(o + groupN - 1) / groupN" if stream else "1")
                   + ", items = n * bands * nGroups, sub = GetSubBlockIdx();")
            w.line(f"int32_t tile = 0;  // tiles done: the workspace slot is tile % {SLOTS}")
            w.line("tabPitch_ = 0; tabRp_ = 0;  // no offset table yet")
            with w.block("for (int32_t item = GetBlockIdx() / GetTaskRatio(); item < items; "
                         "item += GetBlockNum())"):
                w.line("const int32_t img = item / nGroups / bands, r0 = (item / nGroups % bands)"
                       " * bandRows;")
                w.line("const int32_t r1 = r0 + bandRows < oh ? r0 + bandRows : oh;")
                w.line("const int32_t pixels = (r1 - r0) * ow;")
                m_loop = "for (int32_t m0 = 0; m0 < pixels; m0 += baseM{})"
                n_loop = "for (int32_t n0 = {}; n0 < {}; n0 += baseN{})"
                m_tile = "const int32_t m = baseM < pixels - m0 ? baseM : pixels - m0;"
                if self.mk.plan.stream:  # the cube's order: N blocks (panels) outside
                    w.line("const int32_t g0 = item % nGroups * groupN, gEnd = o < g0 + groupN"
                           " ? o : g0 + groupN;")
                    n_head, m_head = n_loop.format("g0", "gEnd", ""), m_loop.format(", ++tile")
                    with w.block(n_head), w.block(m_head):
                        w.line(m_tile)
                        self._tile_call()
                    return
                with w.block(m_loop.format("")):
                    w.line(m_tile)
                    with w.block(n_loop.format("0", "o", ", ++tile")):
                        self._tile_call()

    def _tile_call(self) -> None:
        w = self.w
        w.line("const int32_t nCur = o - n0 < baseN ? o - n0 : baseN;")
        w.line("const int32_t half = (nCur + 1) / 2, ch = sub * half;")
        w.line("const int32_t nr = nCur - ch < half ? nCur - ch : half;")
        w.line(f"const int32_t slot = tile % {SLOTS};")
        w.line(f"CrossCoreWaitFlag<2, PIPE_MTE2>({READY} + slot);", self.loc)
        w.line("if (nr > 0) Block((int64_t)img * o + n0 + ch, r0 * ow + m0, m, nr, "
               "slot * BASE_M * BASE_N + ch);")
        w.line(f"CrossCoreSetFlag<2, PIPE_MTE2>({FREE} + slot);", self.loc)

    def _block_setup(self) -> None:
        w = self.w
        w.line("// whole 32-byte blocks of channel rows: the scratch (pitch_ x rp_) fits TILE")
        w.line("if (tileRows_ >= CU) tileRows_ = tileRows_ / CU * CU;")
        w.line("rp_ = (tileRows_ + CU - 1) / CU * CU;")
        with w.block("if (pitch_ != tabPitch_ || rp_ != tabRp_)"):
            for line in _TABLE.format(t=self.ct).splitlines():
                w.line(line, self.loc)

    def _copy_c(self, name: str, t: str) -> None:
        w, loc = self.w, self.loc
        w.line(f"LocalTensor<{t}> scr = {XPOSE_BUFS[0]}.Get<{t}>();")
        w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID1);  // the last Gather has read scr")
        w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);")
        w.line(f"DataCopyPad(scr, {name}Gm_[wsOff_ + row], PyascRowsAt<{t}>(cols_, rows, rp_, "
               f"BASE_N, false), {_PAD.format(t=t)});", loc)
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")
        w.line(f"LocalTensor<uint32_t> offs = {XPOSE_BUFS[1]}.Get<uint32_t>();")
        w.line("const int32_t count = static_cast<int32_t>(rows * pitch_);")
        with w.block("for (int32_t q = 0; q < count; q += GATHER_MAX)"):
            w.line(f"Gather({name}[q], scr, offs[q], 0, static_cast<uint32_t>("
                   "count - q < GATHER_MAX ? count - q : GATHER_MAX));", loc)

    def _members_mix(self) -> None:
        super()._members_mix()
        self.w.line("int64_t rp_, tabPitch_, tabRp_;  // scratch pitch, the table's")


class ConvMixEmitter:
    """Writes one conv MIX kernel: the epilogue class, then the entry point."""

    def __init__(self, w: CWriter, k: ConvMixKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        vec = _ConvVecPart(w, k)
        vec.emit()
        sig = ", ".join(["GM_ADDR x", "GM_ADDR wt"] + [f"{t} {n}" for t, n in vec.params()]
                        + [f"int32_t {p}" for p in params(k.conv)])
        w.raw(f"// {k.name}: conv2d on the cube core (im2col in L1) into {SLOTS} GM workspace "
              "slots per core, the epilogue on its two vector cores writing NCHW")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({sig})')
        w.raw("{")
        w.depth += 1
        w.line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);")
        p = k.plan
        slot_bytes = SLOTS * p.base_m * p.base_n * vec._c_size()
        with w.block("if ASCEND_IS_AIC"):
            w.line(f"GM_ADDR y = workspace + GetBlockIdx() * {slot_bytes};  // this core's "
                   "slots")
            emit_conv_body(w, k.conv, _FIXPIPE_WS, f"{SLOTS} * baseM * baseN", _TAIL)
        with w.block("if ASCEND_IS_AIV"):
            w.line(f"{class_name(k.name)} op;")
            w.line(f"op.Init({', '.join(n for _, n in vec.params())});")
            w.line(f"op.Process({', '.join(_PROCESS + ('groupN',) * p.stream)});")
        w.depth -= 1
        w.raw("}")
        w.raw("")


__all__ = ["ConvMixEmitter"]
