"""C++ text of a long-rows kernel (``vec_longrows``): rows streamed in column tiles.

``Process`` walks the block's rows one at a time.  Per row: ``LoadCols`` reads the
row's column inputs (one element each) into ``TBuf`` s; then the stages run in order, a
``row`` stage once (``Stage<i>()``: accumulator set-up, finishing reductions, column
ops), a ``chunk`` stage once per column tile (``CopyIn<i>`` -> ``Stage<i>(len)``, plus
``CopyOut`` in the output pass), the tiles ``TILE`` elements wide with a shorter tail;
``StoreCols`` writes the row's column results.  Column buffers moved by the MTE pipes
outside queues are ordered by explicit ``SetFlag``/``WaitFlag`` pairs.  Inside a tile
the tile program is the row-wise one with a single row of ``len`` columns.
"""

from __future__ import annotations

import re

from pyasc.backend.ascendc.analysis import COL, FULL, ROW
from pyasc.backend.ascendc.emit_tile import emit_instructions, reduce_tmp_views, render
from pyasc.backend.ascendc.emit_vector import VectorEmitter, _t, _where, class_name
from pyasc.backend.ascendc.tiles import Buf, Instr, Ref, storage_type
from pyasc.backend.ascendc.vec_alloc import colcap, reduce_tmp_elems
from pyasc.backend.ascendc.vec_longrows import LongPlan, Stage

_PAD = "DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0))"


class LongRowsEmitter(VectorEmitter):
    """Writes one long-rows :class:`VectorKernel`."""

    def __init__(self, w, k) -> None:  # noqa: ANN001
        super().__init__(w, k)
        self.rows = True  # GM slices of whole rows (VectorEmitter._bind)

    @property
    def plan(self) -> LongPlan:
        assert self.k.long is not None
        return self.k.long

    def emit(self) -> None:
        k, w = self.k, self.w
        w.raw(f"// {k.name}: the fused {k.group.attributes['kind']} group at "
              f"{_where(k.group.loc)} as one vector kernel (longrows schedule: each row "
              f"streamed {self.plan.reads} time(s) in tiles of {k.tile} elements)")
        with w.block(f"class {class_name(k.name)}", tail="};"):
            w.raw(" public:")
            self._init()
            self._process()
            w.raw("")
            w.raw(" private:")
            self._constants()
            self._load_cols()
            self._store_cols()
            for i, st in enumerate(self.plan.stages):
                self._stage(i, st)
            if any(o.kind == FULL for o in k.written):
                self._copy_out_tile()
            self._members()
        self._entry()
        w.raw("")

    # ---------------------------------------------------------------- buffers
    def _instrs(self, st: Stage) -> list[Instr]:
        return self.k.prog.instrs[st.start:st.end]

    def _col_inputs(self) -> list[Buf]:
        return [i.vv.buf for i in self.k.array_inputs if i.vv.cls == COL]  # type: ignore[misc]

    def _col_outputs(self) -> list[Buf]:
        return [o.buf for o in self.k.written if o.kind == COL]  # type: ignore[misc]

    def _full_outputs(self) -> list[Buf]:
        return [o.buf for o in self.k.written if o.kind == FULL]  # type: ignore[misc]

    def _streamed_inputs(self, st: Stage) -> list[Buf]:
        """The full and row inputs a tile stage reads (each copied in per tile)."""
        read = {id(b) for ins in self._instrs(st) for b in ins.reads()}
        return [i.vv.buf for i in self.k.array_inputs  # type: ignore[misc]
                if i.vv.cls in (FULL, ROW) and id(i.vv.buf) in read]

    # ---------------------------------------------------------------- Init / Process
    def _init(self) -> None:
        k, w = self.k, self.w
        with w.block(f"__aicore__ inline void Init({self._params()})"):
            w.line("cols_ = cols;")
            w.line("const int64_t first = GetBlockIdx() * rowsPerBlock;")
            w.line("blockRows_ = rows - first < rowsPerBlock ? rows - first : rowsPerBlock;")
            for i in k.scalar_inputs:
                w.line(f"{i.vv.expr} = {i.vv.expr.rstrip('_')};")
            for i in k.array_inputs:
                assert i.vv.buf is not None
                self._bind(i.vv.buf, i.vv.cls, i.vv.buf.name)
            for o in k.written:
                self._bind_output(o)
            for p in k.phys:
                w.line(self._init_buffer(p))

    def _process(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void Process()"):
            with w.block("for (int64_t row = 0; row < blockRows_; ++row)"):
                if self._col_inputs():
                    w.line("LoadCols(row);")
                for i, st in enumerate(self.plan.stages):
                    if st.start == st.end and not st.final:
                        continue
                    if st.kind == "row":
                        w.line(f"Stage{i}();")
                        continue
                    with w.block("for (int64_t c = 0; c < cols_; c += TILE)"):
                        w.line("const int32_t len = static_cast<int32_t>(cols_ - c < TILE ? "
                               "cols_ - c : TILE);")
                        if self._streamed_inputs(st):
                            w.line(f"CopyIn{i}(row, c, len);")
                        w.line(f"Stage{i}(len);")
                        if st.final and self._full_outputs():
                            w.line("CopyOut(row, c, len);")
                if self._col_outputs():
                    w.line("StoreCols(row);")

    def _constants(self) -> None:
        k, w = self.k, self.w
        w.line(f"static constexpr int32_t TILE = {k.tile};  // elements per column tile")
        if any(p.kind in ("col", "colmask") for p in k.phys):
            w.line(f"static constexpr int32_t COL_CAP = {colcap(k.tile, k.unit, 1)};")
        if any(p.kind == "rtmp" for p in k.phys):
            w.line(f"static constexpr int32_t REDUCE_TMP = {reduce_tmp_elems(k.tile, 4)};  "
                   "// ReduceMax docs formula")

    # ---------------------------------------------------------------- copies
    def _load_cols(self) -> None:
        bufs = self._col_inputs()
        if not bufs:
            return
        w = self.w
        with w.block("__aicore__ inline void LoadCols(int64_t row)"):
            w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // the last row's reads are done")
            w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);")
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")
                w.line(f"DataCopyPad({b.name}, {b.name}Gm_[row], DataCopyExtParams(1, "
                       f"sizeof({t}), 0, 0, 0), {_PAD.format(t=t)});", self.loc)
            w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
            w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _store_cols(self) -> None:
        bufs = self._col_outputs()
        if not bufs:
            return
        w = self.w
        with w.block("__aicore__ inline void StoreCols(int64_t row)"):
            w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")
                w.line(f"DataCopyPad({b.name}Gm_[row], {b.name}, DataCopyExtParams(1, "
                       f"sizeof({t}), 0, 0, 0));", self.loc)
            w.line("SetFlag<HardEvent::MTE3_V>(EVENT_ID0);  // before the next row rewrites them")
            w.line("WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);")

    def _tile_copy(self, buf: Buf, cls: str, to_gm: bool) -> None:
        """One tile of a row (``len`` elements from column ``c``) between GM and UB."""
        w, t, name = self.w, _t(buf), buf.name
        gm = f"{name}Gm_[c]" if cls == ROW else f"{name}Gm_[row * cols_ + c]"
        dst, src = (gm, name) if to_gm else (name, gm)
        pad = "" if to_gm else f", {_PAD.format(t=t)}"
        with w.block(f"if (len * sizeof({t}) % 32 == 0)"):
            w.line(f"DataCopy({dst}, {src}, static_cast<uint32_t>(len));", self.loc)
        with w.block("else"):
            w.line(f"DataCopyPad({dst}, {src}, DataCopyExtParams(1, static_cast<uint32_t>"
                   f"(len * sizeof({t})), 0, 0, 0){pad});", self.loc)

    def _copy_in_tile(self, i: int, bufs: list[Buf]) -> None:
        w = self.w
        cls = {id(x.vv.buf): x.vv.cls for x in self.k.array_inputs}
        with w.block(f"__aicore__ inline void CopyIn{i}(int64_t row, int64_t c, int32_t len)"):
            for b in bufs:
                t = _t(b)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.AllocTensor<{t}>();")
                self._tile_copy(b, cls[id(b)], to_gm=False)
                w.line(f"{b.phys}.EnQue({b.name});")

    def _copy_out_tile(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void CopyOut(int64_t row, int64_t c, int32_t len)"):
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
        with w.block(f"__aicore__ inline void Stage{i}({'int32_t len' if chunk else ''})"):
            w.line("const int32_t rows = 1;  // one row at a time")
            if chunk:
                u = self.k.unit
                w.line("const int32_t cols = len;")
                w.line(f"const int32_t pitch = (len + {u - 1}) / {u} * {u};")
                w.line("const int32_t n = pitch;")
            self._stage_views(instrs, inputs, outputs)
            if any(x.api.startswith("Reduce") for x in instrs):
                reduce_tmp_views(w, self.k)
            for decl, _name, loc in self._scalars(instrs):
                w.line(decl, loc)
            emit_instructions(w, instrs)
            for b in outputs:
                w.line(f"{b.phys}.EnQue({b.name});")
            for b in inputs:
                w.line(f"{b.phys}.FreeTensor({b.name});")

    def _stage_views(self, instrs: list[Instr], inputs: list[Buf], outputs: list[Buf]) -> None:
        w = self.w
        used = {id(x.dst.buf) for x in instrs if isinstance(x.dst, Ref)}
        used.update(id(b) for x in instrs for b in x.reads())
        for b in inputs:
            t = storage_type(b.dtype)
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.DeQue<{t}>();")
        for b in outputs:
            t = storage_type(b.dtype)
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.AllocTensor<{t}>();")
        special = {id(b) for b in inputs + outputs}
        for b in self.k.prog.buffers:
            if id(b) in used and id(b) not in special:
                t = storage_type(b.dtype)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")

    def _scalars(self, instrs: list[Instr]) -> list[tuple[str, str, object]]:
        """The scalar declarations a stage uses (directly or through other ones)."""
        text = " ".join(render(x) for x in instrs)
        keep: list[tuple[str, str, object]] = []
        for decl, name, loc in reversed(self.k.prog.scalars):
            if re.search(rf"\b{re.escape(name)}\b", text):
                keep.append((decl, name, loc))
                text += " " + decl
        return keep[::-1]


__all__ = ["LongRowsEmitter"]
