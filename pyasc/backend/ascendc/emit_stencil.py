"""C++ text of a stencil kernel (``stencil_kernel``): halo rows in, shifted views, rows out.

``Init`` binds the base arrays and outputs, sizes the buffers and builds the byte-offset
table of a tile (``CreateVecIndex`` + ``Muls``: no scalar loop).  ``Process`` walks the
block's ``(plane, row tile)`` units: ``CopyIn`` copies each base's rows of the tile,
halo included, with one ``DataCopyPad`` (``TQue<VECIN, 2>``: the next tile's copy
overlaps this tile's compute); ``Compute`` runs the tile program, each window a
``Gather`` from its base's halo buffer; ``CopyOut`` writes ``cols`` of every output row
(``TQue<VECOUT, 2>``).
"""

from __future__ import annotations

from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.emit_tile import emit_instructions
from pyasc.backend.ascendc.emit_vector import class_name
from pyasc.backend.ascendc.stencil_kernel import StencilKernel, span
from pyasc.backend.ascendc.stencil_text import (
    base_dims,
    byte_count,
    dynamic_names,
    member,
    plane_values,
    row_gap,
    static_planes_bytes,
)
from pyasc.backend.ascendc.tiles import ctype, storage_type
from pyasc.ir.types import DYN


class StencilEmitter:
    """Writes one :class:`StencilKernel` into a :class:`CWriter`."""

    def __init__(self, w: CWriter, k: StencilKernel) -> None:
        self.w, self.k = w, k
        self.loc = k.group.loc

    def emit(self) -> None:
        k, w = self.k, self.w
        w.raw(f"// {k.name}: the stencil group at line {self.loc.line} as one vector kernel "
              f"({len(k.gathers)} windows of {len(k.base_names)} array(s); tiles of "
              f"{k.tile_rows} rows x pitch {k.pitch})")
        with w.block(f"class {class_name(k.name)}", tail="};"):
            w.raw(" public:")
            self._init()
            self._process()
            w.raw("")
            w.raw(" private:")
            self._constants()
            self._load_plane()
            self._copy_in()
            self._compute()
            self._copy_out()
            self._members()
        self._entry()
        w.raw("")

    # ---------------------------------------------------------------- signature
    def _params(self) -> list[tuple[str, str]]:
        k = self.k
        ps = [("GM_ADDR", n) for n in k.base_names]
        ps += [("GM_ADDR", p.name) for p in k.planes_in]
        ps += [("GM_ADDR", o.buf.name) for o in k.written if o.buf is not None]
        ps += [(ctype(i.vv.dtype), i.vv.expr.rstrip("_")) for i in k.scalar_inputs]
        if k.dynamic:  # the run-time extents and tiling (host_stencil.dynamic_arguments)
            ps += [("int64_t", n) for n in dynamic_names(k)]
        return ps

    def param_names(self) -> list[str]:
        return [n for _, n in self._params()]

    def _sig(self) -> str:
        return ", ".join(f"{t} {n}" for t, n in self._params())

    # ---------------------------------------------------------------- Init / Process
    def _init(self) -> None:
        k, w = self.k, self.w
        with w.block(f"__aicore__ inline void Init({self._sig()})"):
            for i in k.scalar_inputs:
                w.line(f"{i.vv.expr} = {i.vv.expr.rstrip('_')};")
            if k.dynamic:
                for n in dynamic_names(k):
                    w.line(f"{member(n)} = {n};")
            for n, t, b in zip(k.base_names, k.base_types, k.match.bases, strict=True):
                size = " * ".join(map(str, base_dims(k, n, b.shape)))
                w.line(f"{n}Gm_.SetGlobalBuffer((__gm__ {ctype(t)}*){n}, {size});", self.loc)
            for p in k.planes_in:
                count = "PLANES" if p.count == DYN else p.count
                w.line(f"{p.name}Gm_.SetGlobalBuffer((__gm__ {ctype(p.dtype)}*){p.name}, "
                       f"{count});", self.loc)
            out_size = self._out_size()
            for o in k.written:
                assert o.buf is not None
                t = storage_type(o.buf.dtype)
                w.line(f"{o.buf.name}Gm_.SetGlobalBuffer((__gm__ {t}*){o.buf.name}, "
                       f"{out_size});", self.loc)
            for n, t, b in zip(k.base_names, k.base_types, range(len(k.base_names)), strict=True):
                w.line(f"pipe_.InitBuffer({n}Que_, 2, {k.halo_elements(b)} * "
                       f"sizeof({ctype(t)}));")
            w.line("pipe_.InitBuffer(idxBuf_, TILE * sizeof(int32_t));")
            for p in k.phys:
                w.line(self._init_buffer(p))
            self._load_planes()
            w.line("// byte offsets 0, s, 2s, ... of a tile's elements: each window is one "
                   "Gather from its halo")
            w.line("LocalTensor<int32_t> idx = idxBuf_.Get<int32_t>();")
            w.line("CreateVecIndex(idx, static_cast<int32_t>(0), TILE);", self.loc)
            size = k.base_types[0].itemsize
            w.line(f"Muls(idx, idx, static_cast<int32_t>({size}), TILE);", self.loc)
            self._init_more()

    def _out_size(self) -> str | int:
        """Elements of the output arrays the kernel writes."""
        k = self.k
        return "IMAGES * PLANES * ROWS * COLS" if k.dynamic else \
            k.match.outer * k.match.space[0] * k.rows * k.cols

    def _init_more(self) -> None:
        """More of ``Init`` (a channel stencil's buffers, ``emit_channels``)."""

    def _load_planes(self) -> None:
        """Each per-plane input's values into UB once, for scalar reads per plane."""
        k, w = self.k, self.w
        for p in [p for p in k.planes_in if p.count == DYN]:  # LoadPlane fills it
            w.line(f"pipe_.InitBuffer({p.name}Buf_, 32);")
        static = [p for p in k.planes_in if p.count != DYN]
        if static:  # one buffer for all of them (a conv's C * kh * kw weights)
            w.line(f"pipe_.InitBuffer(planesBuf_, {static_planes_bytes(k)});")
        for p in static:
            c = ctype(p.dtype)
            w.line(f"LocalTensor<{c}> {p.name}Vals = {plane_values(k, p)};")
            w.line(f"DataCopyPad({p.name}Vals, {p.name}Gm_, DataCopyExtParams(1, "
                   f"{p.count * p.dtype.itemsize}, 0, 0, 0), DataCopyPadExtParams<{c}>(false, 0, "
                   f"0, static_cast<{c}>(0)));", self.loc)
        if static:
            w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads them")
            w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")

    def _load_plane(self) -> None:
        """``LoadPlane(plane)``: the plane's value of each per-plane input of run-time
        count into UB (one element, when the block's units reach a new plane)."""
        k, w = self.k, self.w
        dyn = [p for p in k.planes_in if p.count == DYN]
        if not dyn:
            return
        with w.block("__aicore__ inline void LoadPlane(int64_t plane)"):
            with w.block("if (plane == loadedPlane_)"):
                w.line("return;")
            for p in dyn:
                c = ctype(p.dtype)
                w.line(f"LocalTensor<{c}> {p.name}Vals = {p.name}Buf_.Get<{c}>();")
                w.line(f"DataCopyPad({p.name}Vals, {p.name}Gm_[plane], DataCopyExtParams(1, "
                       f"{p.dtype.itemsize}, 0, 0, 0), DataCopyPadExtParams<{c}>(false, 0, 0, "
                       f"static_cast<{c}>(0)));", self.loc)
            w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads it")
            w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")
            w.line("loadedPlane_ = plane;")

    def _init_buffer(self, p) -> str:  # noqa: ANN001
        t = {2: "half", 4: "float", 1: "uint8_t"}.get(p.itemsize, f"int{8 * p.itemsize}_t")
        length = {"tile": f"TILE * sizeof({t})", "mask": "TILE / 8"}[p.kind]
        if p.role == "out":
            return f"pipe_.InitBuffer({p.name}, 2, {length});"
        return f"pipe_.InitBuffer({p.name}, {length});"

    def _process(self) -> None:
        w = self.w
        with w.block("__aicore__ inline void Process()"):
            w.line("const int64_t first = GetBlockIdx() * PER_BLOCK;")
            w.line("const int64_t last = first + PER_BLOCK < UNITS ? first + PER_BLOCK : UNITS;")
            with w.block("for (int64_t u = first; u < last; ++u)"):
                if self.k.dynamic:  # units are (plane, row tile, column tile)
                    w.line("const int64_t plane = u / (TILES_PER_PLANE * COL_TILES);")
                    w.line("const int64_t rest = u % (TILES_PER_PLANE * COL_TILES);")
                    w.line("const int64_t row = rest / COL_TILES * TILE_ROWS;")
                    w.line("const int64_t col = rest % COL_TILES * TILE_COLS;")
                    w.line("const int32_t cols = static_cast<int32_t>(COLS - col < TILE_COLS ? "
                           "COLS - col : TILE_COLS);")
                else:
                    w.line("const int64_t plane = u / TILES_PER_PLANE;")
                    w.line("const int64_t row = u % TILES_PER_PLANE * TILE_ROWS;")
                w.line("const int32_t rows = static_cast<int32_t>(ROWS - row < TILE_ROWS ? "
                       "ROWS - row : TILE_ROWS);")
                if self.k.shared_planes:
                    self._unit_of_every_plane()
                else:
                    self._unit()

    def _unit(self) -> None:
        """One ``(plane, row tile)`` unit: its halo rows in, the tile out."""
        w = self.w
        at = ", col, cols" if self.k.dynamic else ""
        if any(p.count == DYN for p in self.k.planes_in):  # collapsed: the channel's
            w.line(f"LoadPlane(plane{' % PLANES' if self.k.match.collapsed else ''});")
        w.line(f"CopyIn(plane, row, rows{at});")
        w.line("Compute(plane, rows);")
        w.line(f"CopyOut(plane, row, rows{at});")

    def _unit_of_every_plane(self) -> None:
        """A row tile's halo rows copied once (fixed planes), then every plane computed
        and written from them (``StencilKernel.shared_planes``); the other bases' rows
        copied per plane (``CopyPlane``)."""
        k, w = self.k, self.w
        at = ", col, cols" if k.dynamic else ""
        own = k.plane_bases
        w.line(f"CopyIn(plane, row, rows{at});")
        for i, (n, t) in enumerate(zip(k.base_names, k.base_types, strict=True)):
            if i not in own:
                w.line(f"LocalTensor<{ctype(t)}> {n}Halo = {n}Que_.DeQue<{ctype(t)}>();")
        with w.block("for (int64_t p = 0; p < PLANES; ++p)"):
            if any(p.count == DYN for p in k.planes_in):
                w.line("LoadPlane(p);")
            if own:  # plane: the image
                w.line(f"CopyPlane(plane * PLANES + p, row, rows{at});")
                for i in own:
                    n, t = k.base_names[i], ctype(k.base_types[i])
                    w.line(f"LocalTensor<{t}> {n}Halo = {n}Que_.DeQue<{t}>();")
            w.line(f"Compute(p, rows, {', '.join(n + 'Halo' for n in k.base_names)});")
            w.line(f"CopyOut(plane * PLANES + p, row, rows{at});")
            for i in own:
                w.line(f"{k.base_names[i]}Que_.FreeTensor({k.base_names[i]}Halo);")
        for i, n in enumerate(k.base_names):
            if i not in own:
                w.line(f"{n}Que_.FreeTensor({n}Halo);")

    def _constants(self) -> None:
        k, w = self.k, self.w
        w.line(f"static constexpr int32_t TILE = {k.tile};  // elements per tile buffer")
        if k.dynamic:  # set by Init from the host's arguments
            w.line("int64_t " + ", ".join(f"{member(n)} = 0" for n in dynamic_names(k)) + ";")
            return
        w.line(f"static constexpr int32_t PITCH = {k.pitch};  // UB row stride (32-byte blocks)")
        w.line(f"static constexpr int64_t PLANES = {k.match.space[0]}, ROWS = {k.rows}, "
               f"COLS = {k.cols};")
        w.line(f"static constexpr int64_t TILE_ROWS = {k.tile_rows}, TILES_PER_PLANE = "
               f"{k.tiles_per_plane};")
        w.line(f"static constexpr int64_t UNITS = {k.units}, PER_BLOCK = {k.per_block};")

    # ---------------------------------------------------------------- copies
    def _copy_in(self) -> None:
        """``CopyIn``: each base's halo rows of the unit's tile.  With shared planes it
        copies the fixed bases, and ``CopyPlane`` the others' rows of plane ``plane`` of
        the space (``StencilKernel.plane_bases``)."""
        k = self.k
        own = k.plane_bases if k.shared_planes else []
        if own:
            self._copy_bases("CopyPlane", own)
        self._copy_bases("CopyIn", [i for i in range(len(k.base_names)) if i not in own])

    def _copy_bases(self, name: str, which: list[int]) -> None:
        k, w = self.k, self.w
        cols = ", int64_t col, int32_t cols" if k.dynamic else ""
        chan = ", int64_t c" if k.channels is not None else ""
        with w.block(f"__aicore__ inline void {name}(int64_t plane{chan}, int64_t row, "
                     f"int32_t rows{cols})"):
            for i in which:
                n, t, b = k.base_names[i], k.base_types[i], k.match.bases[i]
                c = ctype(t)
                height, width = base_dims(k, n, b.shape)[-2:]
                # a fixed plane (one channel read for every output plane) or the unit's
                at = f"(plane + {b.plane})"
                if b.fixed:  # shared planes: ``plane`` is the unit's image
                    channels = base_dims(k, n, b.shape)[1] if b.images else 0
                    at = f"(plane * {channels} + {b.plane})" if b.images else f"{b.plane}"
                if b.channel:  # plane c of the unit's channel loop (``emit_channels``)
                    first = f"plane * {channels} + " if b.images else ""
                    at = f"({first}c + {b.plane})"
                # the windows' columns of each row: from the first one's, a GM stride
                # past the others
                start = f"({at} * {height} + row + {b.rows[0]}) * {width} + {b.cols[0]}"
                stride: int | str
                if k.dynamic:  # the tile's columns and the windows' reach, within the row
                    more, room = b.cols[1] - b.cols[0], f"{width} - col - {b.cols[0]}"
                    w.line(f"const int64_t {n}Len = cols + {more} < {room} ? cols + {more} : "
                           f"{room};")
                    stride = f"static_cast<uint32_t>(({width} - {n}Len) * {t.itemsize})"
                    start, width = f"{start} + col", f"{n}Len"
                else:
                    stride, width = (width - span(k, b)) * t.itemsize, span(k, b)  # type: ignore[operator]
                gap = row_gap(k, width, t.itemsize)
                w.line(f"LocalTensor<{c}> {n}Halo = {n}Que_.AllocTensor<{c}>();")
                w.line(f"DataCopyPad({n}Halo, {n}Gm_[{start}], DataCopyExtParams(static_cast"
                       f"<uint16_t>(rows + {b.halo}), {byte_count(width, t.itemsize)}, {stride}, "
                       f"{gap}, 0), DataCopyPadExtParams<{c}>(false, 0, 0, static_cast<{c}>(0)));",
                       self.loc)
                w.line(f"{n}Que_.EnQue({n}Halo);")

    def _copy_out(self) -> None:
        k, w = self.k, self.w
        cols = ", int64_t col, int32_t cols" if k.dynamic else ""
        with w.block(f"__aicore__ inline void CopyOut(int64_t plane, int64_t row, int32_t rows"
                     f"{cols})"):
            for o in k.written:
                assert o.buf is not None
                b, t = o.buf, storage_type(o.buf.dtype)
                size = o.buf.itemsize
                start, width, stride = "(plane * ROWS + row) * COLS", byte_count(k.cols, size), 0
                if k.dynamic:  # the tile's columns of each output row
                    start, width = f"{start} + col", byte_count("cols", size)
                    stride = f"static_cast<uint32_t>((COLS - cols) * {size})"
                gap = row_gap(k, "cols" if k.dynamic else k.cols, size)
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.DeQue<{t}>();")
                w.line(f"DataCopyPad({b.name}Gm_[{start}], {b.name}, "
                       f"DataCopyExtParams(static_cast<uint16_t>(rows), "
                       f"{width}, {gap}, {stride}, 0));", self.loc)
                w.line(f"{b.phys}.FreeTensor({b.name});")

    # ---------------------------------------------------------------- compute
    def _compute(self) -> None:
        k, w = self.k, self.w
        # shared planes: the halos are the unit's, dequeued once for every plane
        halos = "".join(f", LocalTensor<{ctype(t)}> &{n}Halo"
                        for n, t in zip(k.base_names, k.base_types, strict=True))
        with w.block("__aicore__ inline void Compute(int64_t plane, int32_t rows"
                     f"{halos if k.shared_planes else ''})"):
            w.line("const int32_t n = rows * PITCH;")
            for p in k.planes_in:
                w.line(f"LocalTensor<{ctype(p.dtype)}> {p.name}Vals = {plane_values(k, p)};")
            for n, t in zip(k.base_names, k.base_types, strict=True):
                if not k.shared_planes:
                    w.line(f"LocalTensor<{ctype(t)}> {n}Halo = {n}Que_.DeQue<{ctype(t)}>();")
            w.line("LocalTensor<uint32_t> idx = idxBuf_.Get<uint32_t>();")
            self._views()
            for decl, _name, loc in k.prog.scalars:
                w.line(decl, loc)
            emit_instructions(w, k.prog.instrs)
            for o in k.written:
                assert o.buf is not None
                w.line(f"{o.buf.phys}.EnQue({o.buf.name});")
            for n in k.base_names if not k.shared_planes else ():
                w.line(f"{n}Que_.FreeTensor({n}Halo);")

    def _views(self) -> None:
        k, w = self.k, self.w
        out_bufs = {o.buf for o in k.written}
        used = {id(i.dst.buf) for i in k.prog.instrs if i.dst is not None}
        used.update(id(b) for i in k.prog.instrs for b in i.reads())
        for b in k.prog.buffers:
            t = storage_type(b.dtype)
            if b in out_bufs:
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.AllocTensor<{t}>();")
            elif id(b) in used:
                w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")

    def _members(self) -> None:
        k, w = self.k, self.w
        w.line("TPipe pipe_;")
        for n, t in zip(k.base_names, k.base_types, strict=True):
            w.line(f"TQue<QuePosition::VECIN, 2> {n}Que_;")
            w.line(f"GlobalTensor<{ctype(t)}> {n}Gm_;")
        w.line("TBuf<TPosition::VECCALC> idxBuf_;")
        if any(p.count == DYN for p in k.planes_in):
            w.line("int64_t loadedPlane_ = -1;  // the plane LoadPlane last loaded")
        if any(p.count != DYN for p in k.planes_in):
            w.line("TBuf<TPosition::VECCALC> planesBuf_;  // the per-plane inputs' values")
        for p in k.planes_in:
            if p.count == DYN:
                w.line(f"TBuf<TPosition::VECCALC> {p.name}Buf_;")
            w.line(f"GlobalTensor<{ctype(p.dtype)}> {p.name}Gm_;")
        for p in k.phys:
            if p.role == "out":
                w.line(f"TQue<QuePosition::VECOUT, 2> {p.name};")
            else:
                w.line(f"TBuf<TPosition::VECCALC> {p.name};")
        for o in k.written:
            assert o.buf is not None
            w.line(f"GlobalTensor<{storage_type(o.buf.dtype)}> {o.buf.name}Gm_;")
        for i in k.scalar_inputs:
            w.line(f"{ctype(i.vv.dtype)} {i.vv.expr};")

    def _entry(self) -> None:
        k, w = self.k, self.w
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({self._sig()})')
        w.raw("{")
        w.depth += 1
        w.line(f"{class_name(k.name)} op;")
        w.line(f"op.Init({', '.join(self.param_names())});")
        w.line("op.Process();")
        w.depth -= 1
        w.raw("}")


__all__ = ["StencilEmitter"]
