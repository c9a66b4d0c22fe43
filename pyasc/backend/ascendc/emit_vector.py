"""C++ text of a vector kernel: a class in the AscendC sample style plus its entry point.

``Init`` binds the block's slice of every GM array (``GetBlockIdx() * perBlock``), sizes
the UB buffers and loads row vectors; ``Process`` walks the block's tiles running
``CopyIn`` (GM -> UB through ``TQue<VECIN, 2>``: ``DataCopy`` for whole 32-byte blocks,
``DataCopyPad`` for tails and unaligned rows), ``Compute`` (the tile program) and
``CopyOut`` (UB -> GM through ``TQue<VECOUT, 2>``); ``Finish`` writes the per-block
results of whole-array reductions.
"""

from __future__ import annotations

from contextlib import nullcontext

from pyasc.backend.ascendc.analysis import COL, FULL, PARTIAL, ROW
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.emit_tile import emit_compute, reduce_tmp_views
from pyasc.backend.ascendc.tiles import Buf, storage_type
from pyasc.backend.ascendc.vec_alloc import colcap, reduce_tmp_elems
from pyasc.backend.ascendc.vec_kernel import (
    KernelOutput,
    VectorKernel,
    out_param,
    result_slot,
)
from pyasc.backend.ascendc.vec_lower import reduce_identity
from pyasc.ir.core import Location


def class_name(kernel: str) -> str:
    return "Kernel" + "".join(p[:1].upper() + p[1:] for p in kernel.split("_"))


def _t(buf: Buf) -> str:
    return storage_type(buf.dtype)


class VectorEmitter:
    """Writes one :class:`VectorKernel` into a :class:`CWriter`."""

    def __init__(self, w: CWriter, k: VectorKernel) -> None:
        self.w, self.k = w, k
        self.rows = k.schedule == "rows"
        self.loc: Location = k.group.loc
        self.phys = {p.name: p for p in k.phys}

    def emit(self) -> None:
        k, w = self.k, self.w
        w.raw(f"// {k.name}: the fused {k.group.attributes['kind']} group at "
              f"{_where(k.group.loc)} as one vector kernel ({k.schedule} schedule, "
              f"tile of {k.tile} elements)")
        with self.w.block(f"class {class_name(k.name)}", tail="};"):
            w.raw(" public:")
            self._init()
            self._process()
            w.raw("")
            w.raw(" private:")
            self._constants()
            if k.array_inputs and any(i.vv.cls in (FULL, COL) for i in k.array_inputs):
                self._copy_in()
            self._compute()
            if any(o.kind in (FULL, COL) for o in k.written):
                self._copy_out()
            if any(o.kind == PARTIAL for o in k.written):
                self._finish()
            self._members()
        self._entry()
        w.raw("")

    # ---------------------------------------------------------------- Init / Process
    def _params(self) -> str:
        return ", ".join(f"{t} {n}" for t, n in zip(self.k.param_types(), self.k.param_names(),
                                                     strict=True))

    def _init(self) -> None:
        k, w = self.k, self.w
        with w.block(f"__aicore__ inline void Init({self._params()})"):
            if self.rows:
                w.line("cols_ = cols;")
                # rows of no columns still have row results (a sum of nothing is 0):
                # one block of pitch keeps the tiling defined, and no row data moves
                w.line(f"pitch_ = cols > 0 ? (cols + {k.unit - 1}) / {k.unit} * {k.unit} : "
                       f"{k.unit};  // UB row stride: whole 32-byte blocks")
                w.line("tileRows_ = TILE / pitch_ < MAX_TILE_ROWS ? TILE / pitch_ : MAX_TILE_ROWS;")
                w.line("const int64_t first = GetBlockIdx() * rowsPerBlock;")
                w.line("blockRows_ = rows - first < rowsPerBlock ? rows - first : rowsPerBlock;")
            else:
                w.line("const int64_t first = GetBlockIdx() * perBlock;")
                w.line("blockLen_ = n - first < perBlock ? n - first : perBlock;")
            for i in k.scalar_inputs:
                w.line(f"{i.vv.expr} = {i.vv.expr.rstrip('_')};")
            for i in k.array_inputs:
                assert i.vv.buf is not None
                self._bind(i.vv.buf, i.vv.cls, i.vv.buf.name)
            for o in k.written:
                self._bind_output(o)
            for p in k.phys:
                w.line(self._init_buffer(p))
            for i in k.array_inputs:
                if i.vv.cls == ROW:
                    assert i.vv.buf is not None
                    self._load_row(i.vv.buf)
            for o in k.written:
                if o.kind == PARTIAL:
                    self._init_acc(o)

    def _bind(self, buf: Buf, cls: str, param: str) -> None:
        t = _t(buf)
        if cls == ROW:
            base, size = f"(__gm__ {t}*){param}", "cols"
        elif cls == COL:
            base, size = f"(__gm__ {t}*){param} + first", "blockRows_"
        elif self.rows:
            base, size = f"(__gm__ {t}*){param} + first * cols", "blockRows_ * cols"
        else:
            base, size = f"(__gm__ {t}*){param} + first", "blockLen_"
        self.w.line(f"{buf.name}Gm_.SetGlobalBuffer({base}, {size});", self.loc)

    def _bind_output(self, o: KernelOutput) -> None:
        if o.kind == PARTIAL:
            assert o.partial is not None
            t, slot = _t(o.partial.acc), result_slot(o.partial)
            self.w.line(f"{out_param(o)}Gm_.SetGlobalBuffer((__gm__ {t}*){out_param(o)} + "
                        f"GetBlockIdx() * {slot}, {slot});", self.loc)
            return
        assert o.buf is not None
        self._bind(o.buf, o.kind, o.buf.name)

    def _init_buffer(self, p) -> str:  # noqa: ANN001
        size = {2: "half", 4: "float", 1: "uint8_t"}.get(p.itemsize, f"int{8 * p.itemsize}_t")
        length = {"tile": f"TILE * sizeof({size})", "row": f"TILE * sizeof({size})",
                  "acc": f"TILE * sizeof({size})", "mask": "TILE / 8",
                  "col": f"COL_CAP * sizeof({size})", "colmask": "COL_CAP / 8",
                  "rtmp": "REDUCE_TMP * sizeof(float)", "res": "32"}[p.kind]
        if p.depth > 1:
            return f"pipe_.InitBuffer({p.name}, {p.depth}, {length});"
        return f"pipe_.InitBuffer({p.name}, {length});"

    def _load_row(self, buf: Buf) -> None:
        w, t = self.w, _t(buf)
        name = buf.name + "Row"
        w.line(f"LocalTensor<{t}> {name} = {buf.phys}.Get<{t}>();")
        # a row of no columns (row results of empty rows) moves nothing: no DMA of 0 bytes
        with w.block(f"if (cols > 0 && cols * sizeof({t}) % 32 == 0)"):
            w.line(f"DataCopy({name}, {buf.name}Gm_, static_cast<uint32_t>(cols));", self.loc)
        with w.block("else if (cols > 0)"):
            w.line(f"DataCopyPad({name}, {buf.name}Gm_, DataCopyExtParams(1, static_cast<uint32_t>"
                   f"(cols * sizeof({t})), 0, 0, 0), DataCopyPadExtParams<{t}>(false, 0, 0, "
                   f"static_cast<{t}>(0)));", self.loc)
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _init_acc(self, o: KernelOutput) -> None:
        from pyasc.backend.ascendc.cexpr import literal

        assert o.partial is not None
        acc = o.partial.acc
        self.w.line(f"LocalTensor<{_t(acc)}> {acc.name} = {acc.phys}.Get<{_t(acc)}>();")
        ident = literal(reduce_identity(o.partial.kind, acc.dtype), acc.dtype)
        self.w.line(f"Duplicate({acc.name}, {ident}, TILE);", self.loc)

    def _process(self) -> None:
        w = self.w
        has_in = any(i.vv.cls in (FULL, COL) for i in self.k.array_inputs)
        has_out = any(o.kind in (FULL, COL) for o in self.k.written)
        with w.block("__aicore__ inline void Process()"):
            if self.rows:
                head = "for (int64_t row = 0; row < blockRows_; row += tileRows_)"
                size = ("const int32_t rows = static_cast<int32_t>(blockRows_ - row < tileRows_ "
                        "? blockRows_ - row : tileRows_);")
                args = "row, rows"
                narg = "rows"
            else:
                head = "for (int64_t off = 0; off < blockLen_; off += TILE)"
                size = ("const int32_t len = static_cast<int32_t>(blockLen_ - off < TILE ? "
                        "blockLen_ - off : TILE);")
                args = "off, len"
                narg = "len"
            with w.block(head):
                w.line(size)
                if has_in:
                    w.line(f"CopyIn({args});")
                w.line(f"Compute({narg});")
                if has_out:
                    w.line(f"CopyOut({args});")
            if any(o.kind == PARTIAL for o in self.k.written):
                w.line("Finish();")

    def _constants(self) -> None:
        k, w = self.k, self.w
        w.line(f"static constexpr int32_t TILE = {k.tile};  // elements per UB tile")
        if self.rows:
            w.line(f"static constexpr int64_t MAX_TILE_ROWS = {k.max_tile_rows()};")
        if any(p.kind in ("col", "colmask") for p in k.phys):
            w.line(f"static constexpr int32_t COL_CAP = {colcap(k.tile, k.unit)};")
        if any(p.kind == "rtmp" for p in k.phys):
            w.line(f"static constexpr int32_t REDUCE_TMP = {reduce_tmp_elems(k.tile, 4)};  "
                   "// ReduceMax docs formula")

    # ---------------------------------------------------------------- copies
    def _copy_in(self) -> None:
        w = self.w
        sig = "int64_t row, int32_t rows" if self.rows else "int64_t off, int32_t len"
        with w.block(f"__aicore__ inline void CopyIn({sig})"):
            for i in self.k.array_inputs:
                if i.vv.cls in (FULL, COL):
                    assert i.vv.buf is not None
                    buf, t = i.vv.buf, _t(i.vv.buf)
                    w.line(f"LocalTensor<{t}> {buf.name} = {buf.phys}.AllocTensor<{t}>();")
                    self._copy(buf, i.vv.cls, to_gm=False)
                    w.line(f"{buf.phys}.EnQue({buf.name});")

    def _copy_out(self) -> None:
        w = self.w
        sig = "int64_t row, int32_t rows" if self.rows else "int64_t off, int32_t len"
        with w.block(f"__aicore__ inline void CopyOut({sig})"):
            for o in self.k.written:
                if o.kind in (FULL, COL):
                    assert o.buf is not None
                    buf, t = o.buf, _t(o.buf)
                    w.line(f"LocalTensor<{t}> {buf.name} = {buf.phys}.DeQue<{t}>();")
                    self._copy(buf, o.kind, to_gm=True)
                    w.line(f"{buf.phys}.FreeTensor({buf.name});")

    def _copy(self, buf: Buf, cls: str, to_gm: bool) -> None:
        """``DataCopy`` when whole 32-byte blocks move, else ``DataCopyPad``."""
        w, t, name = self.w, _t(buf), buf.name
        if self.rows and cls == FULL:
            gm, cond, count = f"{name}Gm_[row * cols_]", "pitch_ == cols_", "rows * cols_"
            params = f"PyascRows<{t}>(rows, cols_, pitch_, {'true' if to_gm else 'false'})"
        else:
            n = "rows" if cls == COL else "len"
            at = "row" if cls == COL else "off"
            gm, cond, count = f"{name}Gm_[{at}]", f"{n} * sizeof({t}) % 32 == 0", n
            params = f"DataCopyExtParams(1, static_cast<uint32_t>({n} * sizeof({t})), 0, 0, 0)"
        dst, src = (gm, name) if to_gm else (name, gm)
        pad = "" if to_gm else f", DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0))"
        # rows of no columns move no row data (their row results are still written)
        empty = self.rows and cls == FULL
        with w.block("if (cols_ > 0)") if empty else nullcontext():
            with w.block(f"if ({cond})"):
                w.line(f"DataCopy({dst}, {src}, static_cast<uint32_t>({count}));", self.loc)
            with w.block("else"):
                w.line(f"DataCopyPad({dst}, {src}, {params}{pad});", self.loc)

    def _finish(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void Finish()"):
            reduce_tmp_views(self.w, self.k)
            for o in self.k.written:
                if o.kind != PARTIAL:
                    continue
                assert o.partial is not None
                acc, t = o.partial.acc, _t(o.partial.acc)
                w.line(f"LocalTensor<{t}> {acc.name} = {acc.phys}.Get<{t}>();")
                if o.partial.tree:
                    self._fold_halves(o)
                    continue
                api = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[o.partial.kind]
                w.line(f"LocalTensor<{t}> {acc.name}Res = {acc.name}Res_.Get<{t}>();")
                w.line(f"{api}({acc.name}Res, {acc.name}, reduceTmp_{acc.dtype.name}, TILE);",
                       self.loc)
                w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);")
                w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
                w.line(f"DataCopy({out_param(o)}Gm_, {acc.name}Res, {result_slot(o.partial)});",
                       self.loc)

    def _fold_halves(self, o: KernelOutput) -> None:
        """The accumulator folded onto its first 32 bytes by halves (each half a whole
        number of 32-byte blocks, the upper one never longer), which are the block's
        results: for the types ``ReduceMax/Min/Sum`` do not take."""
        assert o.partial is not None
        w, acc, slot = self.w, o.partial.acc, result_slot(o.partial)
        api = {"sum": "Add", "max": "Max", "min": "Min"}[o.partial.kind]
        with w.block(f"for (int32_t len = TILE; len > {slot};)"):
            w.line(f"const int32_t half = (len / 2 + {slot - 1}) / {slot} * {slot};")
            w.line(f"{api}({acc.name}, {acc.name}, {acc.name}[half], len - half);", self.loc)
            w.line("len = half;")
        w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);")
        w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
        w.line(f"DataCopy({out_param(o)}Gm_, {acc.name}, {slot});", self.loc)

    # ---------------------------------------------------------------- compute
    def _compute(self) -> None:
        emit_compute(self.w, self.k, self.rows)

    def _members(self) -> None:
        k, w = self.k, self.w
        w.line("TPipe pipe_;")
        for p in k.phys:
            if p.role == "in":
                w.line(f"TQue<QuePosition::VECIN, {p.depth}> {p.name};")
            elif p.role == "out":
                w.line(f"TQue<QuePosition::VECOUT, {p.depth}> {p.name};")
            else:
                w.line(f"TBuf<TPosition::VECCALC> {p.name};")
        for i in k.array_inputs:
            assert i.vv.buf is not None
            w.line(f"GlobalTensor<{_t(i.vv.buf)}> {i.vv.buf.name}Gm_;")
        for o in k.written:
            t = _t(o.partial.acc if o.partial is not None else o.buf)  # type: ignore[arg-type]
            w.line(f"GlobalTensor<{t}> {out_param(o)}Gm_;")
        for i in k.scalar_inputs:
            from pyasc.backend.ascendc.tiles import ctype

            w.line(f"{ctype(i.vv.dtype)} {i.vv.expr};")
        if self.rows:
            w.line("int64_t cols_, pitch_, tileRows_, blockRows_;")
        else:
            w.line("int64_t blockLen_;")

    def _entry(self) -> None:
        k, w = self.k, self.w
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({self._params()})')
        w.raw("{")
        w.depth += 1
        w.line(f"{class_name(k.name)} op;")
        w.line(f"op.Init({', '.join(k.param_names())});")
        w.line("op.Process();")
        w.depth -= 1
        w.raw("}")


def _where(loc: Location) -> str:
    import os

    return f"{os.path.basename(loc.file)}:{loc.line}" if loc.known else "<unknown>"


__all__ = ["VectorEmitter", "class_name"]
