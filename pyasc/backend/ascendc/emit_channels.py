"""C++ text of a channel stencil kernel (``channel_kernel``): a stencil kernel whose
units walk a run-time count of channels, the output planes' sums kept in UB.

A unit is (image, group of output planes, row tile, column tile).  ``Process`` starts
the group's accumulators (``accBuf_``, one slice of ``ACC_STRIDE`` elements per plane)
at the fill value (``ChannelPlan.init`` "fill"), at the planes' values in GM ("planes":
``LoadInits``, one ``DataCopyPad`` of the group's values, then a ``Duplicate`` per
plane) or at the accumulator buffer's values ("acc": ``StartSums``), then for every
channel: dequeues the channel's halo rows (the next channel's copy is issued right
after, so it overlaps this channel's compute), loads the channel's weights of the
group's planes (``LoadWeights``: one ``DataCopyPad`` of a row of taps per plane), and
runs the tile program once per plane, which adds the channel's
taps to the plane's accumulator in place, in program order (multiply, then add: the
interpreter's order and rounding).  Last, the accumulators go to the accumulator
buffer in GM, each plane's rows of the tile, or, with an epilogue (``ChannelPlan.post``),
``Epilogue`` computes each plane's result from its accumulator and that goes to the
output array (of its own extents: ``outPlanes``, ``outRows``, ``outCols``); its values
per plane are loaded once per unit (``LoadPosts``), its whole arrays' rows of the tile
copied in per plane (``<name>Planes``, ``Rows``, ``Cols``: their own extents).
"""

from __future__ import annotations

from pyasc.backend.ascendc.channel_plan import PLANE, WHOLE, ChannelPlan, PostInput
from pyasc.backend.ascendc.emit_stencil import StencilEmitter
from pyasc.backend.ascendc.emit_tile import emit_instructions
from pyasc.backend.ascendc.stencil_text import byte_count, dynamic_names, row_gap
from pyasc.backend.ascendc.tiles import Instr, ctype, storage_type

OUT_DIMS = ("outPlanes", "outRows", "outCols")  # the epilogue's output's last three dims


class ChannelEmitter(StencilEmitter):
    """Writes a :class:`StencilKernel` with a :class:`ChannelPlan` (``k.channels``)."""

    @property
    def plan(self) -> ChannelPlan:
        assert self.k.channels is not None
        return self.k.channels

    def _params(self) -> list[tuple[str, str]]:
        ps = super()._params()
        at = len(ps) - len(self._dynamic())  # before the run-time extents and tiling
        # the fill value, the planes' initial values (GM), or nothing
        init = {"fill": [(ctype(self.plan.acc_type), "accInit")],
                "planes": [("GM_ADDR", "accInit")]}.get(self.plan.init, [])
        # the epilogue's output array: its own planes, rows and columns (its strides)
        # the epilogue's scalars and arrays; its output's and whole arrays' last dims
        post = [(ctype(t), n.rstrip("_")) for n, t in self.plan.post_params]
        post += [("GM_ADDR", x.name) for x in self.plan.post_inputs]
        out = [("int64_t", n) for n in OUT_DIMS] if self.plan.post_out is not None else []
        out += [("int64_t", n) for x in self._wholes() for n in _dims(x)]
        return [*ps[:at], ("GM_ADDR", self.plan.weights), *init, *post, *ps[at:], *out]

    def _wholes(self) -> list[PostInput]:
        return [x for x in self.plan.post_inputs if x.kind == WHOLE]

    def _out_size(self) -> str | int:
        if self.plan.post_out is None:
            return super()._out_size()
        return "IMAGES * " + " * ".join(OUT_DIMS)  # (the parameters: Init sets the members later)

    def _dynamic(self) -> list[str]:
        return dynamic_names(self.k)

    def _init_more(self) -> None:
        w, p = self.w, self.plan
        acc, wt = ctype(p.acc_type), ctype(p.weights_type)
        if p.post_out is not None:
            for n in [*OUT_DIMS, *(d for x in self._wholes() for d in _dims(x))]:
                w.line(f"{n}_ = {n};")
        for n, _ in p.post_params:
            w.line(f"{n} = {n.rstrip('_')};")
        for x in p.post_inputs:
            t = storage_type(x.dtype)
            size = "PLANES" if x.kind == PLANE else "IMAGES * " + " * ".join(
                f"{d}_" for d in _dims(x))
            w.line(f"{x.name}Gm_.SetGlobalBuffer((__gm__ {t}*){x.name}, {size});", self.loc)
            if x.kind == PLANE:
                w.line(f"pipe_.InitBuffer({x.name}Buf_, {p.plane_bytes(x.dtype)});")
        if p.init == "fill":
            w.line("accInit_ = accInit;")
        elif p.init == "planes":
            w.line(f"accInitGm_.SetGlobalBuffer((__gm__ {acc}*)accInit, PLANES);", self.loc)
            w.line(f"pipe_.InitBuffer(accInitBuf_, {p.init_bytes});")
        dims = " * ".join(f"{p.weights}Dim{a}_" for a in range(p.weights_rank))
        w.line(f"{p.weights}Gm_.SetGlobalBuffer((__gm__ {wt}*){p.weights}, {dims});", self.loc)
        w.line(f"pipe_.InitBuffer(accBuf_, {p.acc_tiles} * TILE * sizeof({acc}));")
        w.line(f"pipe_.InitBuffer({p.weights}Buf_, {p.weight_bytes});")
        if p.windows:
            w.line(f"pipe_.InitBuffer(winBuf_, {len(p.windows)} * TILE * {p.window_bytes});")

    def _load_plane(self) -> None:
        """``LoadWeights(p0, np, c)``: channel ``c``'s taps of planes ``p0 ..`` into UB,
        a row of ``W_ROW`` elements per plane, for the scalar unit's reads."""
        w, p = self.w, self.plan
        wt, size = ctype(p.weights_type), p.weights_type.itemsize
        taps = " * ".join(f"{p.weights}Dim{a}_" for a in range(2, p.weights_rank)) or "1"
        with w.block("__aicore__ inline void LoadWeights(int64_t p0, int64_t np, int64_t c)"):
            w.line(f"const int64_t taps = {taps};")
            w.line(f"LocalTensor<{wt}> vals = {p.weights}Buf_.Get<{wt}>();")
            w.line(f"DataCopyPad(vals, {p.weights}Gm_[(p0 * {p.weights}Dim1_ + c) * taps], "
                   f"DataCopyExtParams(static_cast<uint16_t>(np), static_cast<uint32_t>(taps * "
                   f"{size}), static_cast<uint32_t>(({p.weights}Dim1_ - 1) * taps * {size}), "
                   f"0, 0), DataCopyPadExtParams<{wt}>(false, 0, 0, static_cast<{wt}>(0)));",
                   self.loc)
            w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads them")
            w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")

    def _process(self) -> None:
        w, p = self.w, self.plan
        acc = ctype(p.acc_type)
        with w.block("__aicore__ inline void Process()"):
            w.line("const int64_t first = GetBlockIdx() * PER_BLOCK;")
            w.line("const int64_t last = first + PER_BLOCK < UNITS ? first + PER_BLOCK : UNITS;")
            w.line(f"LocalTensor<{acc}> acc = accBuf_.Get<{acc}>();")
            if p.init == "planes":
                w.line(f"LocalTensor<{acc}> inits = accInitBuf_.Get<{acc}>();")
            with w.block("for (int64_t u = first; u < last; ++u)"):
                w.line("const int64_t tiles = TILES_PER_PLANE * COL_TILES;")
                w.line("const int64_t image = u / (PLANE_GROUPS * tiles);")
                w.line("const int64_t p0 = u / tiles % PLANE_GROUPS * GROUP_PLANES;")
                w.line("const int64_t row = u % tiles / COL_TILES * TILE_ROWS;")
                w.line("const int64_t col = u % tiles % COL_TILES * TILE_COLS;")
                w.line("const int32_t cols = static_cast<int32_t>(COLS - col < TILE_COLS ? "
                       "COLS - col : TILE_COLS);")
                w.line("const int32_t rows = static_cast<int32_t>(ROWS - row < TILE_ROWS ? "
                       "ROWS - row : TILE_ROWS);")
                w.line("const int64_t np = PLANES - p0 < GROUP_PLANES ? PLANES - p0 : "
                       "GROUP_PLANES;")
                self._start_sums()
                self._channel_loop()
                self._write_sums()
                # the next unit's start (a Duplicate, or the copy of its initial values)
                # overwrites the accumulators this copy reads
                nxt = "MTE3_MTE2" if p.init == "acc" else "MTE3_V"
                w.line(f"SetFlag<HardEvent::{nxt}>(EVENT_ID0);")
                w.line(f"WaitFlag<HardEvent::{nxt}>(EVENT_ID0);")

    def _write_sums(self) -> None:
        """Each plane's sums to GM: the accumulators themselves, or the epilogue's result
        of each (``ChannelPlan.post``: computed, copied, then the next plane's)."""
        w, post = self.w, self.plan.post_out
        if post is None:
            w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the sums are complete")
            w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            with w.block("for (int64_t p = 0; p < np; ++p)"):
                w.line("CopyOut(image * PLANES + p0 + p, row, rows, col, cols, "
                       "acc[p * ACC_STRIDE]);")
            return
        t = storage_type(post.dtype)
        if any(x.kind == PLANE for x in self.plan.post_inputs):
            w.line("LoadPosts(p0, np);")
        with w.block("for (int64_t p = 0; p < np; ++p)"):
            w.line("Epilogue(image, p0, p, row, rows, col, cols);")
            w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the plane's result is complete")
            w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
            w.line(f"CopyOut(image * outPlanes_ + p0 + p, row, rows, col, cols, "
                   f"{post.phys}.Get<{t}>());")
            w.line("SetFlag<HardEvent::MTE3_V>(EVENT_ID0);  // the next plane's overwrites it")
            w.line("WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);")

    def _epilogue(self) -> None:
        """``Epilogue(image, p0, plane, row, rows, col, cols)``: the ops after the
        channel loop on the plane's accumulator (``ChannelPlan.post``), into the
        result's buffer, after the plane's rows of each whole array are copied in."""
        w, p = self.w, self.plan
        if not p.post:
            return
        acc = ctype(p.acc_type)
        self._load_posts()
        with w.block("__aicore__ inline void Epilogue(int64_t image, int64_t p0, "
                     "int64_t plane, int64_t row, int32_t rows, int64_t col, int32_t cols)"):
            w.line("const int32_t n = rows * PITCH;")
            w.line(f"LocalTensor<{acc}> {p.acc_out.name} = "
                   "accBuf_.Get<{acc}>()[plane * ACC_STRIDE];".replace("{acc}", acc))
            self._tile_views(p.post)
            for x in p.post_inputs:
                if x.kind == PLANE:
                    c = ctype(x.dtype)
                    w.line(f"LocalTensor<{c}> {x.name}Vals = {x.name}Buf_.Get<{c}>();")
            self._copy_wholes()
            for decl, _name, loc in p.post_scalars:
                w.line(decl, loc)
            emit_instructions(w, p.post)

    def _copy_wholes(self) -> None:
        """The plane's rows of the tile of each whole array into its tile buffer, at the
        pitch (after the previous plane's epilogue read it)."""
        w, wholes = self.w, self._wholes()
        if not wholes:
            return
        w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // the last plane's epilogue read them")
        w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);")
        for x in wholes:
            t, size = storage_type(x.dtype), x.dtype.itemsize
            planes, rows, cols = (f"{d}_" for d in _dims(x))
            oi, op, orow, ocol = (0,) * (4 - len(x.offsets)) + x.offsets  # (a gate's shift)
            gm = f"{x.name}Gm_[((({_plus('image', oi)}) * {planes} + {_plus('p0', op)} + " \
                 f"plane) * {rows} + {_plus('row', orow)}) * {cols} + {_plus('col', ocol)}]"
            w.line(f"DataCopyPad({x.buf.name}, {gm}, DataCopyExtParams(static_cast<uint16_t>("
                   f"rows), {byte_count('cols', size)}, static_cast<uint32_t>(({cols} - cols) * "
                   f"{size}), {row_gap(self.k, 'cols', size)}, 0), "
                   f"DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0)));", self.loc)
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the epilogue reads them")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _load_posts(self) -> None:
        """``LoadPosts(p0, np)``: the epilogue's values of planes ``p0 ..`` into UB (one
        copy each), for the scalar unit's reads (``<name>Vals``)."""
        w = self.w
        planes = [x for x in self.plan.post_inputs if x.kind == PLANE]
        if not planes:
            return
        with w.block("__aicore__ inline void LoadPosts(int64_t p0, int64_t np)"):
            for x in planes:
                c, size = ctype(x.dtype), x.dtype.itemsize
                w.line(f"DataCopyPad({x.name}Buf_.Get<{c}>(), {x.name}Gm_[p0], "
                       f"DataCopyExtParams(1, static_cast<uint32_t>(np * {size}), 0, 0, 0), "
                       f"DataCopyPadExtParams<{c}>(false, 0, 0, static_cast<{c}>(0)));",
                       self.loc)
            w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads them")
            w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")

    def _tile_views(self, instrs: list[Instr]) -> None:
        """A view of each program buffer ``instrs`` use (the accumulators aside)."""
        used = {id(i.dst.buf) for i in instrs if i.dst is not None}
        used.update(id(b) for i in instrs for b in i.reads())
        for b in self.k.prog.buffers:
            if id(b) in used:
                t = storage_type(b.dtype)
                self.w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")

    def _views(self) -> None:
        self._tile_views(self.k.prog.instrs)

    def _start_sums(self) -> None:
        """The unit's accumulators at their initial values: the fill value, the planes'
        values (``LoadInits``), or the accumulator buffer's values of the unit's planes
        (``StartSums`` of their rows)."""
        w, init = self.w, self.plan.init
        if init == "planes":
            w.line("LoadInits(p0, np);")
        with w.block("for (int64_t p = 0; p < np; ++p)"):
            if init != "acc":
                value = "accInit_" if init == "fill" else "inits.GetValue(p)"
                w.line(f"Duplicate(acc[p * ACC_STRIDE], {value}, rows * PITCH);", self.loc)
                return
            w.line("StartSums(image * PLANES + p0 + p, row, rows, col, cols, "
                   "acc[p * ACC_STRIDE]);")
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the channels add to them")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _channel_loop(self) -> None:
        w, k = self.w, self.k
        halos = [(n, ctype(t)) for n, t in zip(k.base_names, k.base_types, strict=True)]
        with w.block("if (CHANNELS > 0)"):
            w.line("CopyIn(image, 0, row, rows, col, cols);")
        with w.block("for (int64_t c = 0; c < CHANNELS; ++c)"):
            for n, t in halos:
                w.line(f"LocalTensor<{t}> {n}Halo = {n}Que_.DeQue<{t}>();")
            with w.block("if (c + 1 < CHANNELS)"):  # double buffered: overlaps the compute
                w.line("CopyIn(image, c + 1, row, rows, col, cols);")
            if self.plan.windows:  # once per channel, for every plane
                w.line(f"Windows(rows, {', '.join(n + 'Halo' for n, _ in halos)});")
            w.line("LoadWeights(p0, np, c);")
            with w.block("for (int64_t p = 0; p < np; ++p)"):
                w.line(f"Compute(p, rows, {', '.join(n + 'Halo' for n, _ in halos)});")
            for n, _ in halos:
                w.line(f"{n}Que_.FreeTensor({n}Halo);")

    def _window_views(self) -> None:
        for at, ins in enumerate(self.plan.windows):
            assert ins.dst is not None
            t = storage_type(ins.dst.buf.dtype)
            self.w.line(f"LocalTensor<{t}> {ins.dst.buf.name} = winBuf_.Get<{t}>()[{at} * TILE];")

    def _gathers(self) -> None:
        """``Windows(rows, halos)``: the channel's shifted windows, one tile each."""
        k, w = self.k, self.w
        if not self.plan.windows:
            return
        halos = ", ".join(f"LocalTensor<{ctype(t)}> &{n}Halo"
                          for n, t in zip(k.base_names, k.base_types, strict=True))
        with w.block(f"__aicore__ inline void Windows(int32_t rows, {halos})"):
            w.line("const int32_t n = rows * PITCH;")
            w.line("LocalTensor<uint32_t> idx = idxBuf_.Get<uint32_t>();")
            self._window_views()
            emit_instructions(w, self.plan.windows)

    def _copy_out(self) -> None:
        w, p = self.w, self.plan
        acc, size = ctype(p.acc_type), p.acc_type.itemsize
        out = self.k.written[0].buf
        assert out is not None
        self._epilogue()
        dst, size = storage_type(out.dtype), out.dtype.itemsize  # (the epilogue's type)
        # the epilogue's output array has its own rows and columns
        rows, cols = ("outRows_", "outCols_") if p.post_out is not None else ("ROWS", "COLS")
        gm = f"{out.name}Gm_[(plane * {rows} + row) * {cols} + col]"
        width, gap = byte_count("cols", size), row_gap(self.k, "cols", size)
        stride = f"static_cast<uint32_t>(({cols} - cols) * {size})"
        with w.block("__aicore__ inline void CopyOut(int64_t plane, int64_t row, int32_t rows, "
                     f"int64_t col, int32_t cols, const LocalTensor<{dst}> &src)"):
            w.line(f"DataCopyPad({gm}, src, DataCopyExtParams(static_cast<uint16_t>(rows), "
                   f"{width}, {gap}, {stride}, 0));", self.loc)
        if p.init == "planes":
            self._load_inits()
        if p.init != "acc":
            return
        assert p.post_out is None  # (the accumulator buffer is the kernel's output)
        # the same rows into the tile's layout: the pitch's gap after each row (padded)
        with w.block("__aicore__ inline void StartSums(int64_t plane, int64_t row, "
                     f"int32_t rows, int64_t col, int32_t cols, const LocalTensor<{acc}> &dst)"):
            w.line(f"DataCopyPad(dst, {gm}, DataCopyExtParams(static_cast<uint16_t>(rows), "
                   f"{width}, {stride}, {gap}, 0), DataCopyPadExtParams<{acc}>(false, 0, 0, "
                   f"static_cast<{acc}>(0)));", self.loc)

    def _load_inits(self) -> None:
        """``LoadInits(p0, np)``: the initial values of planes ``p0 ..`` into UB (one
        copy), for the scalar unit's reads (``inits``, a local of ``Process``)."""
        w, p = self.w, self.plan
        acc, size = ctype(p.acc_type), p.acc_type.itemsize
        with w.block("__aicore__ inline void LoadInits(int64_t p0, int64_t np)"):
            w.line(f"DataCopyPad(accInitBuf_.Get<{acc}>(), accInitGm_[p0], DataCopyExtParams("
                   f"1, static_cast<uint32_t>(np * {size}), 0, 0, 0), "
                   f"DataCopyPadExtParams<{acc}>(false, 0, 0, static_cast<{acc}>(0)));",
                   self.loc)
            w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads them")
            w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")

    def _compute(self) -> None:
        self._gathers()  # the channel's part of the compute stage, then the plane's
        k, w, p = self.k, self.w, self.plan
        acc = ctype(p.acc_type)
        halos = "".join(f", LocalTensor<{ctype(t)}> &{n}Halo"
                        for n, t in zip(k.base_names, k.base_types, strict=True))
        with w.block(f"__aicore__ inline void Compute(int64_t plane, int32_t rows{halos})"):
            w.line("const int32_t n = rows * PITCH;")
            w.line(f"LocalTensor<{ctype(p.weights_type)}> {p.weights}Vals = "
                   f"{p.weights}Buf_.Get<{ctype(p.weights_type)}>();")
            w.line("LocalTensor<uint32_t> idx = idxBuf_.Get<uint32_t>();")
            self._views()
            self._window_views()
            for b in (p.acc_in, p.acc_out):  # the plane's accumulator, updated in place
                w.line(f"LocalTensor<{acc}> {b.name} = accBuf_.Get<{acc}>()[plane * ACC_STRIDE];")
            for decl, _name, loc in k.prog.scalars:
                w.line(decl, loc)
            emit_instructions(w, k.prog.instrs)

    def _members(self) -> None:
        super()._members()
        w, p = self.w, self.plan
        w.line("TBuf<TPosition::VECCALC> accBuf_;  // the accumulators of a unit's planes")
        w.line(f"TBuf<TPosition::VECCALC> {p.weights}Buf_;  // a channel's weights")
        w.line(f"GlobalTensor<{ctype(p.weights_type)}> {p.weights}Gm_;")
        if p.post_out is not None:
            w.line(f"int64_t {', '.join(n + '_' for n in OUT_DIMS)};  // the output's extents")
        for n, t in p.post_params:
            w.line(f"{ctype(t)} {n};")
        for x in p.post_inputs:
            w.line(f"GlobalTensor<{storage_type(x.dtype)}> {x.name}Gm_;")
            if x.kind == PLANE:
                w.line(f"TBuf<TPosition::VECCALC> {x.name}Buf_;  // a unit's planes' values")
            else:
                w.line(f"int64_t {', '.join(d + '_' for d in _dims(x))};")
        if p.init == "fill":
            w.line(f"{ctype(p.acc_type)} accInit_;")
        elif p.init == "planes":
            w.line(f"GlobalTensor<{ctype(p.acc_type)}> accInitGm_;  // the planes' values")
            w.line("TBuf<TPosition::VECCALC> accInitBuf_;  // those of a unit's planes")
        if p.windows:
            w.line("TBuf<TPosition::VECCALC> winBuf_;  // a channel's windows, a tile each")


def _plus(name: str, offset: int) -> str:
    return f"{name} + {offset}" if offset else name


def _dims(x: PostInput) -> list[str]:
    """The parameters of a whole array's last three extents."""
    return [f"{x.name}{d}" for d in ("Planes", "Rows", "Cols")]


__all__ = ["ChannelEmitter"]
