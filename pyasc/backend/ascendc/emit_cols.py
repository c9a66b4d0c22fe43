"""C++ text of a column-reduction kernel (``vec_cols``): a block's columns in row tiles.

``Init`` gives the block its column range (``c0``: block ``GetBlockIdx() % colBlocks``
of ``colsPerBlock`` columns, ``width_`` columns, the last block's range shorter), its
row range (block ``rb = GetBlockIdx() / colBlocks`` of ``rowsPerBlock`` rows: the host
splits the rows only for a ``split_rows`` kernel, whose row results are then partial
rows, row ``rb`` of a ``(row blocks, cols)`` buffer) and its UB row ``pitch_``
(``width_`` rounded up to 32 bytes).  ``Process`` loads the row inputs of the range once
(``LoadRows``), runs the stages in order: a ``row`` stage once (``Stage<i>()``:
accumulator set-up, finishing the reductions, the ops on per-column values), a
``chunk`` stage once per tile of ``tileRows_`` rows (``CopyIn<i>`` -> ``Stage<i>(n)``,
plus ``CopyOut`` in the output pass), and writes the per-column results once
(``StoreRows``).  A tile moves with one ``DataCopyPad`` of ``n`` rows of ``width_``
elements, ``cols_`` apart in GM and ``pitch_`` apart in UB (``PyascRowsAt``), or one
``DataCopy`` when the block owns every column and a row is whole 32-byte blocks.
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import FULL, ROW
from pyasc.backend.ascendc.emit_longrows import _PAD, LongRowsEmitter
from pyasc.backend.ascendc.emit_tile import emit_instructions
from pyasc.backend.ascendc.emit_vector import _t, _where, class_name
from pyasc.backend.ascendc.tiles import Buf
from pyasc.backend.ascendc.vec_kernel import KernelOutput
from pyasc.backend.ascendc.vec_longrows import Stage


class ColsEmitter(LongRowsEmitter):
    """Writes one ``cols`` :class:`VectorKernel`."""

    def emit(self) -> None:
        k, w = self.k, self.w
        w.raw(f"// {k.name}: the fused {k.group.attributes['kind']} group at "
              f"{_where(k.group.loc)} as one vector kernel (cols schedule: each block's "
              f"columns streamed {self.plan.reads} time(s) in row tiles of {k.tile} "
              "elements)")
        with w.block(f"class {class_name(k.name)}", tail="};"):
            w.raw(" public:")
            self._init()
            self._process()
            w.raw("")
            w.raw(" private:")
            self._constants()
            self._load_rows()
            self._store_rows()
            for i, st in enumerate(self.plan.stages):
                self._stage(i, st)
            if any(o.kind == FULL for o in k.written):
                self._copy_out_tile()
            self._members()
        self._entry()
        w.raw("")

    # ---------------------------------------------------------------- buffers
    def _row_inputs(self) -> list[Buf]:
        return [i.vv.buf for i in self.k.array_inputs if i.vv.cls == ROW]  # type: ignore[misc]

    def _row_outputs(self) -> list[Buf]:
        return [o.buf for o in self.k.written if o.kind == ROW]  # type: ignore[misc]

    def _streamed_inputs(self, st: Stage) -> list[Buf]:
        read = {id(b) for ins in self._instrs(st) for b in ins.reads()}
        return [i.vv.buf for i in self.k.array_inputs  # type: ignore[misc]
                if i.vv.cls == FULL and id(i.vv.buf) in read]

    def _bind(self, buf: Buf, cls: str, param: str, out: bool = False) -> None:
        """GM views from the unit's first element in its plane: its columns of row
        ``r0`` (a row input: column ``c0``; a row result: its partial row ``rb``, row 0
        unless the host split the rows)."""
        t = _t(buf)
        if cls == ROW:
            start = "(plane * rowBlocks_ + rb) * cols_ + c0" if out else "plane * cols_ + c0"
        else:
            start = "(plane * rowsAll_ + r0) * cols_ + c0"
        size = "width_" if cls == ROW else "(rowsAll_ - r0) * cols_ - c0"
        self.w.line(f"{buf.name}Gm_.SetGlobalBuffer((__gm__ {t}*){param}Addr_ + {start}, "
                    f"{size});", self.loc)

    def _bind_output(self, o: KernelOutput) -> None:
        assert o.buf is not None
        self._bind(o.buf, o.kind, o.buf.name, out=True)

    def _gm_params(self) -> list[str]:
        n = len(self.k.array_inputs) + len(self.k.written)
        return self.k.param_names()[:n]

    # ---------------------------------------------------------------- Init / Process
    def _init(self) -> None:
        """The work split: units (plane, row range ``rb``, column range) in that order,
        ``units_`` in all; a block takes units ``GetBlockNum()`` apart (``Unit``)."""
        k, w = self.k, self.w
        with w.block(f"__aicore__ inline void Init({self._params()})"):
            w.line("cols_ = cols;")
            w.line("rowsAll_ = rows;")
            w.line("colsPerBlock_ = colsPerBlock;")
            w.line("rowsPerBlock_ = rowsPerBlock;")
            w.line("colBlocks_ = cols > colsPerBlock ? "
                   "(cols + colsPerBlock - 1) / colsPerBlock : 1;")
            w.line("rowBlocks_ = rows > rowsPerBlock ? "
                   "(rows + rowsPerBlock - 1) / rowsPerBlock : 1;")
            w.line("units_ = planes * colBlocks_ * rowBlocks_;")
            for p in self._gm_params():
                w.line(f"{p}Addr_ = {p};")
            for i in k.scalar_inputs:
                w.line(f"{i.vv.expr} = {i.vv.expr.rstrip('_')};")
            for p in k.phys:
                w.line(self._init_buffer(p))
        self._unit()

    def _unit(self) -> None:
        k, w, u = self.k, self.w, self.k.unit
        with w.block("__aicore__ inline void Unit(int64_t unit)"):
            w.line("const int64_t plane = unit / (colBlocks_ * rowBlocks_);")
            w.line("const int64_t rb = unit / colBlocks_ % rowBlocks_;  // the unit's row range")
            w.line("const int64_t r0 = rb * rowsPerBlock_;")
            w.line("const int64_t c0 = unit % colBlocks_ * colsPerBlock_;")
            w.line("rows_ = rowsAll_ - r0 < rowsPerBlock_ ? rowsAll_ - r0 : rowsPerBlock_;")
            w.line("rows_ = rows_ < 0 ? 0 : rows_;")
            w.line("width_ = cols_ - c0 < colsPerBlock_ ? cols_ - c0 : colsPerBlock_;")
            w.line(f"pitch_ = (width_ + {u - 1}) / {u} * {u};  // UB row stride: whole "
                   "32-byte blocks")
            w.line("tileRows_ = TILE / pitch_ < MAX_TILE_ROWS ? TILE / pitch_ : MAX_TILE_ROWS;")
            for i in k.array_inputs:
                assert i.vv.buf is not None
                self._bind(i.vv.buf, i.vv.cls, i.vv.buf.name)
            for o in k.written:
                self._bind_output(o)

    def _process(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void Process()"), \
                w.block("for (int64_t unit = GetBlockIdx(); unit < units_; unit += GetBlockNum())"):
            w.line("Unit(unit);")
            if self._row_inputs():
                w.line("LoadRows();")
            for i, st in enumerate(self.plan.stages):
                if st.start == st.end and not st.final:
                    continue
                if st.kind == "row":
                    w.line(f"Stage{i}();")
                    continue
                with w.block("for (int64_t row = 0; row < rows_; row += tileRows_)"):
                    w.line("const int32_t n = static_cast<int32_t>(rows_ - row < tileRows_ ? "
                           "rows_ - row : tileRows_);")
                    if self._streamed_inputs(st):
                        w.line(f"CopyIn{i}(row, n);")
                    w.line(f"Stage{i}(n);")
                    if st.final and self._full_outputs():
                        w.line("CopyOut(row, n);")
            if self._row_outputs():
                w.line("StoreRows();")

    def _constants(self) -> None:
        w = self.w
        w.line(f"static constexpr int32_t TILE = {self.k.tile};  // elements per row tile")
        w.line(f"static constexpr int64_t MAX_TILE_ROWS = {self.k.max_tile_rows()};")

    def _members(self) -> None:
        super()._members()
        self.w.line("int64_t rows_, width_, rowsAll_, colsPerBlock_, rowsPerBlock_;")
        self.w.line("int64_t colBlocks_, rowBlocks_, units_;")
        for p in self._gm_params():
            self.w.line(f"GM_ADDR {p}Addr_;")

    # ---------------------------------------------------------------- copies
    def _load_rows(self) -> None:
        bufs = self._row_inputs()
        if not bufs:
            return
        w = self.w
        with w.block("__aicore__ inline void LoadRows()"):
            w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // the last unit's reads are done")
            w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);")
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")
                w.line(f"DataCopyPad({b.name}, {b.name}Gm_, DataCopyExtParams(1, "
                       f"static_cast<uint32_t>(width_ * sizeof({t})), 0, 0, 0), "
                       f"{_PAD.format(t=t)});", self.loc)
            w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
            w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _store_rows(self) -> None:
        bufs = self._row_outputs()
        if not bufs:
            return
        w = self.w
        with w.block("__aicore__ inline void StoreRows()"):
            w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")
                w.line(f"DataCopyPad({b.name}Gm_, {b.name}, DataCopyExtParams(1, "
                       f"static_cast<uint32_t>(width_ * sizeof({t})), 0, 0, 0));", self.loc)
            w.line("SetFlag<HardEvent::MTE3_V>(EVENT_ID0);  // the next unit's set-up")
            w.line("WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);")

    def _tile_copy(self, buf: Buf, cls: str, to_gm: bool) -> None:
        """``n`` rows of the block's columns from row ``row`` between GM and UB."""
        w, t, name = self.w, _t(buf), buf.name
        gm = f"{name}Gm_[row * cols_]"
        dst, src = (gm, name) if to_gm else (name, gm)
        pad = "" if to_gm else f", {_PAD.format(t=t)}"
        with w.block("if (pitch_ == cols_)"):  # every column, whole 32-byte blocks
            w.line(f"DataCopy({dst}, {src}, static_cast<uint32_t>(n * cols_));", self.loc)
        with w.block("else"):
            params = f"PyascRowsAt<{t}>(n, width_, pitch_, cols_, {'true' if to_gm else 'false'})"
            w.line(f"DataCopyPad({dst}, {src}, {params}{pad});", self.loc)

    def _copy_in_tile(self, i: int, bufs: list[Buf]) -> None:
        w = self.w
        with w.block(f"__aicore__ inline void CopyIn{i}(int64_t row, int32_t n)"):
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.AllocTensor<{t}>();")
                self._tile_copy(b, FULL, to_gm=False)
                w.line(f"{b.phys}.EnQue({b.name});")

    def _copy_out_tile(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void CopyOut(int64_t row, int32_t n)"):
            for b in self._full_outputs():
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.DeQue<{t}>();")
                self._tile_copy(b, FULL, to_gm=True)
                w.line(f"{b.phys}.FreeTensor({b.name});")

    # ---------------------------------------------------------------- stages
    def _stage(self, i: int, st: Stage) -> None:
        if st.start == st.end and not st.final:
            return
        instrs = self._instrs(st)
        chunk = st.kind == "chunk"
        inputs = self._streamed_inputs(st) if chunk else []
        outputs = self._full_outputs() if st.final else []
        if inputs:
            self._copy_in_tile(i, inputs)
        w = self.w
        with w.block(f"__aicore__ inline void Stage{i}({'int32_t tileRows' if chunk else ''})"):
            w.line(f"const int32_t rows = {'tileRows' if chunk else '1'};")
            w.line("const int32_t cols = static_cast<int32_t>(width_);")
            w.line("const int32_t pitch = static_cast<int32_t>(pitch_);")
            w.line("const int32_t n = rows * pitch;")
            self._stage_views(instrs, inputs, outputs)
            for decl, _name, loc in self._scalars(instrs):
                w.line(decl, loc)
            emit_instructions(w, instrs)
            for b in outputs:
                w.line(f"{b.phys}.EnQue({b.name});")
            for b in inputs:
                w.line(f"{b.phys}.FreeTensor({b.name});")


__all__ = ["ColsEmitter"]
