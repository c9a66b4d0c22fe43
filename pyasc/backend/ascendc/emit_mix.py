"""AscendC text of a MIX kernel (``mix_plan.MixKernel``): cube matmul + vector epilogue.

One entry point, ``KERNEL_TYPE_MIX_AIC_1_2`` (reference 8.1), split by core type with
``if ASCEND_IS_AIC`` / ``if ASCEND_IS_AIV`` (8.2):

* the **cube core** runs the cube kernel's schedule (``emit_cube``) unchanged except for
  where a block of C goes: ``Fixpipe`` writes it (real ``curM x curN``, row pitch
  ``baseN``) into workspace slot ``tile % 2`` of its core, then
  ``CrossCoreSetFlag<2, PIPE_FIX>(READY + slot)`` (mode 2: to its own two vector cores,
  fired after the Fixpipe [V 8.4]).  Before it overwrites a slot it waits
  ``CrossCoreWaitFlag(FREE + slot)``, which passes once both vector cores have released
  it (mode 2 [V]); after its last block it waits for the slots still out (no flag is
  left counted when the kernel ends);
* each **vector core** (``GetBlockIdx() / GetTaskRatio()`` is its cube core, 8.3) walks
  the same blocks in the same order, waits ``READY + slot``, runs the epilogue on its
  half of the block's rows (sub-block 0 the first ``ceil(curM / 2)``), and sets
  ``FREE + slot`` on ``PIPE_MTE2`` (its reads of the slot are done).  The epilogue is
  the group's own tile program (``vec_lower``), emitted by ``emit_tile.emit_compute``
  as for a vector kernel; only the copies differ: rows of a block are ``curN``
  elements apart from the next row's by the full row (``N``) in GM, by ``baseN`` in
  the workspace, and the row operands (a bias) are the block's ``curN`` columns.

With run-time shapes (``MixKernel.dynamic``) the text is the same but for C's size:
``ROWS``/``COLS`` (constants) become the members ``rowsC_``/``colsC_``, which the entry
point passes to ``Init`` from its cube arguments (``batch0 * ... * M``, ``N``).
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import COL, FULL, ROW
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.emit_cube import PARAMS, CubeEmitter, params
from pyasc.backend.ascendc.emit_tile import emit_compute
from pyasc.backend.ascendc.emit_vector import VectorEmitter, class_name
from pyasc.backend.ascendc.mix_plan import FREE, READY, SLOTS, MixKernel
from pyasc.backend.ascendc.tiles import Buf, ctype, storage_type
from pyasc.backend.ascendc.vec_kernel import out_param

_PAD = "DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0))"


def _t(buf: Buf) -> str:
    return storage_type(buf.dtype)


class _CubePart(CubeEmitter):
    """The cube kernel's body writing blocks to the workspace slots."""

    def _c_size(self) -> str:
        return f"{SLOTS} * baseM * baseN"

    def _fixpipe(self) -> None:
        k, w = self.k, self.w
        w.line(f"const int32_t slot = tile % {SLOTS};")
        w.line(f"if (tile >= {SLOTS}) CrossCoreWaitFlag<2, PIPE_FIX>({FREE} + slot);", k.loc)
        w.line(f"Fixpipe(cGM[slot * baseM * baseN], c1[cp], FixpipeParamsV220(curN, curM, "
               f"(curM + 15) / 16 * 16, baseN, false, QuantMode_t::{k.quant}, 0, 1, 0, 0, 0));",
               k.loc)
        w.line(f"CrossCoreSetFlag<2, PIPE_FIX>({READY} + slot);", k.loc)

    def body(self) -> None:
        super().body()
        self.w.line(f"for (int32_t t = tile > {SLOTS} ? tile - {SLOTS} : 0; t < tile; ++t) "
                    f"CrossCoreWaitFlag<2, PIPE_FIX>({FREE} + t % {SLOTS});", self.k.loc)


class _VecPart(VectorEmitter):
    """The epilogue as a class run by each vector core over its halves of the blocks."""

    def __init__(self, w: CWriter, mk: MixKernel) -> None:
        super().__init__(w, mk.vec)
        self.mk = mk
        self.c_buf = mk.vec.inputs[mk.c_arg].vv.buf
        # C's rows and row length: constants, or members set by Init (run-time shapes)
        self.rows_c, self.cols_c = ("rowsC_", "colsC_") if mk.dynamic else ("ROWS", "COLS")

    def params(self) -> list[tuple[str, str]]:
        """(type, name) of Init's parameters: arrays, outputs, workspace, scalars."""
        k = self.k
        out = [("GM_ADDR", "v_" + i.vv.buf.name) for i in k.array_inputs  # type: ignore
               if i.vv.buf is not self.c_buf]
        out += [("GM_ADDR", "v_" + out_param(o)) for o in k.written]
        out.append(("GM_ADDR", "workspace"))
        out += [(ctype(i.vv.dtype), "v_" + i.vv.expr.rstrip("_")) for i in k.scalar_inputs]
        return out

    def init_params(self) -> list[tuple[str, str]]:
        """Init's parameters: the kernel's (``params``), and C's size when it is known at
        run time only."""
        extra = [("int64_t", "rowsC"), ("int64_t", "colsC")] if self.mk.dynamic else []
        return self.params() + extra

    def emit(self) -> None:
        k, w = self.k, self.w
        w.raw(f"// {k.name}: the epilogue (the fused {k.group.attributes['kind']} group) on "
              f"the vector cores, {k.schedule} tile program, tile of {k.tile} elements")
        with w.block(f"class {class_name(k.name)}", tail="};"):
            w.raw(" public:")
            self._init_mix()
            self._process_mix()
            w.raw("")
            w.raw(" private:")
            self._constants()
            self._block()
            self._copy_in_mix()
            emit_compute(w, k, self.rows)
            self._copy_out_mix()
            self._members_mix()
        w.raw("")

    def _constants(self) -> None:
        super()._constants()
        mk, t = self.mk, self.mk.cube.tile
        if not self.rows:
            self.w.line(f"static constexpr int64_t MAX_TILE_ROWS = {self.k.max_tile_rows()};")
        if not mk.dynamic:
            self.w.line(f"static constexpr int64_t ROWS = {mk.rows}, COLS = {mk.cols};  "
                        "// C as rows x N")
        self.w.line(f"static constexpr int32_t BASE_M = {t.base_m}, BASE_N = {t.base_n};")

    def _init_mix(self) -> None:
        k, w = self.k, self.w
        sig = ", ".join(f"{t} {n}" for t, n in self.init_params())
        with w.block(f"__aicore__ inline void Init({sig})"):
            if self.mk.dynamic:
                w.line("rowsC_ = rowsC; colsC_ = colsC;  // C as rows x N")
            for i in k.scalar_inputs:
                w.line(f"{i.vv.expr} = v_{i.vv.expr.rstrip('_')};")
            for i in k.array_inputs:
                buf = i.vv.buf
                assert buf is not None
                if buf is self.c_buf:
                    w.line(f"{buf.name}Gm_.SetGlobalBuffer((__gm__ {_t(buf)}*)workspace + "
                           f"GetBlockIdx() / GetTaskRatio() * {SLOTS} * BASE_M * BASE_N, "
                           f"{SLOTS} * BASE_M * BASE_N);", self.loc)
                else:
                    self._bind_mix(buf, i.vv.cls, "v_" + buf.name)
            for o in k.written:
                assert o.buf is not None
                self._bind_mix(o.buf, FULL, "v_" + out_param(o))
            for p in k.phys:
                w.line(self._init_buffer(p))

    def _bind_mix(self, buf: Buf, cls: str, param: str) -> None:
        rows, cols = self.rows_c, self.cols_c
        size = {ROW: cols, COL: rows}.get(cls, f"{rows} * {cols}")
        self.w.line(f"{buf.name}Gm_.SetGlobalBuffer((__gm__ {_t(buf)}*){param}, {size});",
                    self.loc)

    def _process_mix(self) -> None:
        w = self.w
        sig = ", ".join(f"int32_t {p}" for p in PARAMS if p != "K")
        with w.block(f"__aicore__ inline void Process({sig}, int32_t units)"):
            w.line("const int32_t tiles = mBlocks * nBlocks, sub = GetSubBlockIdx();")
            w.line("int32_t tile = 0;  // blocks done: the workspace slot is tile % "
                   f"{SLOTS}")
            with w.block("for (int32_t u = GetBlockIdx() / GetTaskRatio(); u < units; "
                         "u += GetBlockNum())"):
                w.line("const int32_t part = u % tiles;")
                w.line("const int32_t m0 = part % mBlocks * singleCoreM, n0 = part / mBlocks "
                       "* singleCoreN;")
                w.line("const int32_t mEnd = M < m0 + singleCoreM ? M : m0 + singleCoreM;")
                w.line("const int32_t nEnd = N < n0 + singleCoreN ? N : n0 + singleCoreN;")
                w.line("const int64_t rowBase = (int64_t)(u / tiles) * M;")
                with w.block("for (int32_t mt = m0; mt < mEnd; mt += BASE_M)"):
                    w.line("const int32_t curM = mEnd - mt < BASE_M ? mEnd - mt : BASE_M;")
                    w.line("const int32_t half = (curM + 1) / 2, r0 = sub * half;")
                    w.line("const int32_t nr = curM - r0 < half ? curM - r0 : half;")
                    with w.block("for (int32_t nt = n0; nt < nEnd; nt += BASE_N)"):
                        self._block_call()

    def _block_call(self) -> None:
        w = self.w
        w.line("const int32_t curN = nEnd - nt < BASE_N ? nEnd - nt : BASE_N;")
        w.line(f"const int32_t slot = tile % {SLOTS};")
        w.line(f"CrossCoreWaitFlag<2, PIPE_MTE2>({READY} + slot);", self.loc)
        w.line("if (nr > 0) Block(rowBase + mt + r0, nt, curN, nr, slot * BASE_M * BASE_N + "
               "r0 * BASE_N);")
        w.line(f"CrossCoreSetFlag<2, PIPE_MTE2>({FREE} + slot);", self.loc)
        w.line("++tile;")

    def _block(self) -> None:
        k, w = self.k, self.w
        with w.block("__aicore__ inline void Block(int64_t gRow, int32_t col0, int32_t ncols, "
                     "int32_t nrows, int32_t wsOff)"):
            w.line("gRow_ = gRow; col0_ = col0; wsOff_ = wsOff; cols_ = ncols;")
            w.line(f"pitch_ = (ncols + {k.unit - 1}) / {k.unit} * {k.unit};  "
                   "// UB row stride: whole 32-byte blocks")
            w.line("tileRows_ = TILE / pitch_ < MAX_TILE_ROWS ? TILE / pitch_ : MAX_TILE_ROWS;")
            self._block_setup()
            rows_in = [i for i in k.array_inputs if i.vv.cls == ROW]
            if rows_in:  # the block's columns of each row operand; the last block's
                # Compute must be done reading them first
                w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID1);")
                w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);")
                for i in rows_in:
                    assert i.vv.buf is not None
                    buf, t = i.vv.buf, _t(i.vv.buf)
                    w.line(f"LocalTensor<{t}> {buf.name}Row = {buf.phys}.Get<{t}>();")
                    w.line(f"DataCopyPad({buf.name}Row, {buf.name}Gm_[col0_], DataCopyExtParams("
                           f"1, static_cast<uint32_t>(cols_ * sizeof({t})), 0, 0, 0), "
                           f"{_PAD.format(t=t)});", self.loc)
                w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
                w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")
            with w.block("for (int32_t row = 0; row < nrows; row += tileRows_)"):
                w.line("const int32_t rows = static_cast<int32_t>(nrows - row < tileRows_ ? "
                       "nrows - row : tileRows_);")
                w.line("CopyIn(row, rows);")
                w.line("Compute(rows);" if self.rows else
                       "Compute(rows * static_cast<int32_t>(pitch_));")
                w.line("CopyOut(row, rows);")

    def _copy_in_mix(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void CopyIn(int64_t row, int32_t rows)"):
            for i in self.k.array_inputs:
                if i.vv.cls not in (FULL, COL):
                    continue
                buf = i.vv.buf
                assert buf is not None
                t = _t(buf)
                w.line(f"LocalTensor<{t}> {buf.name} = {buf.phys}.AllocTensor<{t}>();")
                if buf is self.c_buf:
                    self._copy_c(buf.name, t)
                    w.line(f"{buf.phys}.EnQue({buf.name});")
                    continue
                if i.vv.cls == FULL:
                    src = f"{buf.name}Gm_[(gRow_ + row) * {self.cols_c} + col0_]"
                    params = f"PyascRowsAt<{t}>(rows, cols_, pitch_, {self.cols_c}, false)"
                else:
                    src = f"{buf.name}Gm_[gRow_ + row]"
                    params = (f"DataCopyExtParams(1, static_cast<uint32_t>(rows * sizeof({t})), "
                              "0, 0, 0)")
                w.line(f"DataCopyPad({buf.name}, {src}, {params}, {_PAD.format(t=t)});",
                       self.loc)
                w.line(f"{buf.phys}.EnQue({buf.name});")

    def _block_setup(self) -> None:
        """Block's statements after its pitch and rows per tile are set (none here)."""

    def _copy_c(self, name: str, t: str) -> None:
        """Rows ``[row, row + rows)`` of this half block of C from its workspace slot
        (row pitch ``baseN``) into the UB tile ``name``."""
        self.w.line(f"DataCopyPad({name}, {name}Gm_[wsOff_ + row * BASE_N], PyascRowsAt<{t}>("
                    f"rows, cols_, pitch_, BASE_N, false), {_PAD.format(t=t)});", self.loc)

    def _copy_out_mix(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void CopyOut(int64_t row, int32_t rows)"):
            for o in self.k.written:
                assert o.buf is not None
                buf, t = o.buf, _t(o.buf)
                w.line(f"LocalTensor<{t}> {buf.name} = {buf.phys}.DeQue<{t}>();")
                w.line(f"DataCopyPad({buf.name}Gm_[(gRow_ + row) * {self.cols_c} + col0_], "
                       f"{buf.name}, PyascRowsAt<{t}>(rows, cols_, pitch_, {self.cols_c}, "
                       "true));", self.loc)
                w.line(f"{buf.phys}.FreeTensor({buf.name});")

    def _members_mix(self) -> None:
        k, w = self.k, self.w
        w.line("TPipe pipe_;")
        kinds = {"in": "TQue<QuePosition::VECIN, {d}>", "out": "TQue<QuePosition::VECOUT, {d}>"}
        for p in k.phys:
            w.line(kinds.get(p.role, "TBuf<TPosition::VECCALC>").format(d=p.depth) +
                   f" {p.name};")
        for i in k.array_inputs:
            assert i.vv.buf is not None
            w.line(f"GlobalTensor<{_t(i.vv.buf)}> {i.vv.buf.name}Gm_;")
        for o in k.written:
            w.line(f"GlobalTensor<{_t(o.buf)}> {out_param(o)}Gm_;")  # type: ignore[arg-type]
        for i in k.scalar_inputs:
            w.line(f"{ctype(i.vv.dtype)} {i.vv.expr};")
        w.line("int64_t gRow_, cols_, pitch_, tileRows_, col0_, wsOff_;")
        if self.mk.dynamic:
            w.line("int64_t rowsC_, colsC_;  // C as rows x N (Init)")


class MixEmitter:
    """Writes one MIX kernel: the epilogue class, then the entry point."""

    def __init__(self, w: CWriter, k: MixKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        vec = _VecPart(w, k)
        vec.emit()
        cube = k.cube
        sig = ", ".join(["GM_ADDR a", "GM_ADDR b"] + [f"{t} {n}" for t, n in vec.params()]
                        + [f"int32_t {p}" for p in params(cube)])
        w.raw(f"// {k.name}: C = A @ B on the cube core ({cube.ctype} -> {cube.acc} in L0C "
              f"-> {cube.out_ctype}) into {SLOTS} GM workspace slots per core, the epilogue "
              "on its two vector cores")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({sig})')
        w.raw("{")
        w.depth += 1
        w.line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);")
        slot_bytes = SLOTS * cube.tile.base_m * cube.tile.base_n * cube.out.itemsize
        with w.block("if ASCEND_IS_AIC"):
            w.line(f"GM_ADDR c = workspace + GetBlockIdx() * {slot_bytes};  // this core's "
                   "slots")
            _CubePart(w, cube).body()
        with w.block("if ASCEND_IS_AIV"):
            w.line(f"{class_name(k.name)} op;")
            batch = " * ".join(f"batch{i}" for i in range(len(cube.groups))) or "1"
            names = [n for _, n in vec.params()]
            if k.dynamic:  # C's rows and row length, from the cube's arguments
                names += [f"(int64_t){batch} * M", "N"]
            w.line(f"op.Init({', '.join(names)});")
            args = ", ".join(p for p in PARAMS if p != "K")
            w.line(f"op.Process({args}, {batch} * mBlocks * nBlocks);")
        w.depth -= 1
        w.raw("}")
        w.raw("")


__all__ = ["MixEmitter"]
