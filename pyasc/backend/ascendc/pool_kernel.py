"""A pooling loop (``pool_loops``) as one vector kernel: the plan and its C++ text.

Why the column-sum scheme (and not a ``ReduceSum`` per window): a window's rows are
whole UB rows, so summing them is one vector ``Add`` (``Max``/``Min``) per input row into
a row accumulator, whatever the window's width; what remains is a reduction along the
columns, and every output column needs a different, unaligned segment of that row.
``ReduceSum`` needs a 32-byte aligned source (reference 1.3) and would cost one
instruction per output pixel; a ``Gather`` per *tap* instead reads element ``c0[j] + t``
of the accumulator for every output column ``j`` of the row at once (byte offsets from a
table built once per block; a tap past a narrower window reads a zero slot after the row
for sums, the window's own first element for ``max``/``min``), so a row of outputs costs
``kw`` ``Gather`` + ``Add`` pairs for the widest window ``kw``.  A dilated window (a tap
pool's taps ``dh`` rows, ``dw`` columns apart; 1 for window loops) folds every ``dh``-th
row and gathers every ``dw``-th column.  No scalar loop touches an element; the scalar
unit only walks units and reads the window tables, from UB: a scalar ``GetValue`` of GM
is a slow access on the device (issue 19), so the tables come in with ``DataCopyPad``, at
most ``TAB_CAP`` windows at a time (one buffer, whatever the output's size): the column
windows once per block while the offsets are built, the row windows from the block's
current unit to its last one in the plane (again when the units reach past them or a
new plane).

The work is split into units (plane, output row ``i``), consecutive units per block.
Input rows go GM -> UB with one ``DataCopyPad`` per chunk (as many rows of the plane as
the UB holds, padded to a 32-byte pitch) and stay there while the following windows lie
inside them, so overlapping windows (kernel > stride) read their shared rows once per
chunk: GM reads are the input plus, per chunk, the overlap (a chunk that must start in
the middle of a window starts at the next window's first row instead, which the rest of
the window needs too).  Summation order (sums and
means): per output, down the rows of each column (first row, then ``+`` each next row),
then across the columns left to right; numpy sums pairwise, so results agree to float32
rounding (a window of ``n`` elements: within about ``n`` ulp of the sum).  The mean
divides the sum by the host's table of the user's divisor, as numpy does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.pool_loops import PoolLoop
from pyasc.backend.ascendc.pool_taps import TapLoop
from pyasc.backend.ascendc.soc import API_DTYPE_CLASS, SoC
from pyasc.backend.ascendc.tiles import ctype

ROW_CAP = 4096    # elements of the row accumulator, a gathered row, an output row
IDX_CAP = 8192    # gather offsets (taps x padded output columns)
MAX_COPY_ROWS = 4095  # DataCopyPad blockCount
TAB_CAP = 512     # windows ([start, end) int32 pairs) of a table in UB at a time
_API = {"sum": "Add", "max": "Max", "min": "Min"}
_POST = {"div": "Div", "mul": "Mul", "count": "Div"}


@dataclass
class PoolKernel:
    """One pooling loop's kernel (module docstring)."""

    core: ClassVar[str] = VECTOR
    name: str
    loop: PoolLoop | TapLoop
    in_elems: int = 0   # UB elements of the input rows buffer

    @property
    def ctype(self) -> str:
        """The C type of ``x`` and ``out``."""
        return ctype(self.loop.dtype)

    @property
    def atype(self) -> str:
        """The C type the rows and columns are reduced in (float for half sums)."""
        return ctype(self.loop.acc_dtype)

    @property
    def rtype(self) -> str:
        """The C type of the reduction's result and of the post-operation."""
        return ctype(self.loop.red_dtype)

    @property
    def wide(self) -> bool:
        """Input rows widened before the reduction, output rows narrowed after it."""
        return self.loop.acc_dtype != self.loop.dtype

    @property
    def schedule(self) -> str:
        return "pool"


def plan_pool_kernel(p: PoolLoop | TapLoop, soc: SoC, name: str) -> PoolKernel | None:
    """The kernel of ``p`` on ``soc``; None when the SoC lacks an API for its type."""
    t, a, r = p.dtype.name, p.acc_dtype.name, p.red_dtype.name
    apis = [("Gather", a), (_API[p.kind], a), ("Muls", a), ("Duplicate", a)]
    if p.post is not None:
        apis += [(_POST[p.post], r), ("Muls", r)]
    if not all(soc.supports(API_DTYPE_CLASS[api], dt) for api, dt in apis):
        return None
    if a != t and not (soc.supports_cast(t, a, "CAST_NONE") and
                       soc.supports_cast(a, t, "CAST_RINT")):
        return None
    size, acc = p.dtype.itemsize, p.acc_dtype.itemsize
    rows = (ROW_CAP + 16) * acc + 2 * ROW_CAP * acc + IDX_CAP * 4 + 2 * TAB_CAP * 4
    rows += ROW_CAP * p.red_dtype.itemsize if p.post else 0
    rows += ROW_CAP * (acc + size) if a != t else 0  # a widened row, a narrowed one
    in_bytes = (soc.init_buffer_bytes - rows) // 32 * 32
    if in_bytes < ROW_CAP * size:
        return None
    return PoolKernel(name, p, in_bytes // size)


class PoolEmitter:
    """Writes one :class:`PoolKernel` into a :class:`CWriter`."""

    def __init__(self, w: CWriter, k: PoolKernel) -> None:
        self.w, self.k, self.loc = w, k, k.loop.loc

    def _params(self) -> list[str]:
        gm = ["x", "out", "rowTab", "colTab"] + (["scaleTab"] if self.k.loop.scale else [])
        ints = ["planes", "h", "w", "oh", "ow", "loI", "loJ", "ni", "nj", "kw", "dh", "dw"]
        return [f"GM_ADDR {n}" for n in gm] + [f"int64_t {n}" for n in ints]

    def emit(self) -> None:
        k, w, p = self.k, self.w, self.k.loop
        w.raw(f"// {k.name}: the pooling loop at line {self.loc.line} as one vector kernel "
              f"({p.kind}{' then ' + p.post if p.post else ''} over windows: rows summed "
              "into a row accumulator, then one Gather per tap)")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({", ".join(self._params())})')
        w.raw("{")
        w.depth += 1
        self._setup()
        self._offsets()
        with w.block("for (int64_t u = first; u < last; ++u)"):
            self._unit()
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def _buffers(self) -> dict[str, tuple[str, str]]:
        """UB buffers: name -> (C element type, element count)."""
        k, t, a = self.k, self.k.ctype, self.k.atype
        bufs = {"in": (t, "IN"), "acc": (a, "(ROW_CAP + 16)"), "g": (a, "ROW_CAP"),
                "o": (a, "ROW_CAP"), "idx": ("uint32_t", "IDX_CAP"),
                "tab": ("int32_t", "(2 * TAB_CAP)")}
        if k.loop.post:
            bufs["s"] = (k.rtype, "ROW_CAP")
        if k.wide:  # an input row in the accumulator's type, an output row in x's
            bufs.update({"widened": (a, "ROW_CAP"), "narrowed": (t, "ROW_CAP")})
        return bufs

    def _setup(self) -> None:
        k, w, t = self.k, self.w, self.k.ctype
        w.line(f"constexpr int64_t IN = {k.in_elems}, ROW_CAP = {ROW_CAP}, IDX_CAP = {IDX_CAP}, "
               f"TAB_CAP = {TAB_CAP};")
        w.line(f"GlobalTensor<{t}> xGm, outGm;")
        w.line("GlobalTensor<int32_t> rowGm, colGm;")
        w.line(f"xGm.SetGlobalBuffer((__gm__ {t}*)x, planes * h * w);", self.loc)
        w.line(f"outGm.SetGlobalBuffer((__gm__ {t}*)out, planes * oh * ow);", self.loc)
        w.line("rowGm.SetGlobalBuffer((__gm__ int32_t*)rowTab, 2 * ni);", self.loc)
        w.line("colGm.SetGlobalBuffer((__gm__ int32_t*)colTab, 2 * nj);", self.loc)
        if k.loop.scale is not None:
            w.line(f"GlobalTensor<{k.rtype}> scaleGm;")
            w.line(f"scaleGm.SetGlobalBuffer((__gm__ {k.rtype}*)scaleTab, ni * nj);", self.loc)
        bufs = self._buffers()
        w.line("TPipe pipe;")
        w.line(f"TBuf<TPosition::VECCALC> {', '.join(b + 'Buf' for b in bufs)};")
        for b, (bt, n) in bufs.items():
            w.line(f"pipe.InitBuffer({b}Buf, {n} * sizeof({bt}));", self.loc)
            w.line(f"LocalTensor<{bt}> {b} = {b}Buf.Get<{bt}>();")
        if k.loop.post == "count" and k.rtype != k.atype:  # the divisors' row
            w.line(f"LocalTensor<{k.rtype}> gr = g.ReinterpretCast<{k.rtype}>();")
        w.line("const int64_t pitch = (w * {s} + 31) / 32 * 32 / {s};  // UB row stride"
               .replace("{s}", f"static_cast<int64_t>(sizeof({t}))"))
        w.line("const int64_t njp = (nj + 15) / 16 * 16;  // a tap's offsets, 32-byte aligned")
        w.line(f"const int64_t chunk = IN / pitch < {MAX_COPY_ROWS} ? IN / pitch : "
               f"{MAX_COPY_ROWS};  // input rows per copy")
        w.line(f"const uint32_t gap = static_cast<uint32_t>((pitch * sizeof({t}) - (w * "
               f"sizeof({t}) + 31) / 32 * 32) / 32);")
        if k.loop.kind == "sum":
            w.line(f"Duplicate(acc[pitch], static_cast<{k.atype}>(0), 16);  // the zero slot "
                   "a tap past its window reads", self.loc)

    def _offsets(self) -> None:
        k, w, t = self.k, self.w, self.k.atype
        neutral = "pitch" if k.loop.kind == "sum" else "c0"
        w.line("// byte offsets of tap t of every output column (the table of column windows)")
        with w.block("for (int64_t j0 = 0; j0 < nj; j0 += TAB_CAP)"):
            w.line("const int64_t jn = nj - j0 < TAB_CAP ? nj - j0 : TAB_CAP;")
            self._load_tab("colGm", "j0", "jn")
            with w.block("for (int64_t j = j0; j < j0 + jn; ++j)"):
                w.line("const int64_t c0 = tab.GetValue(2 * (j - j0)), "
                       "c1 = tab.GetValue(2 * (j - j0) + 1);", self.loc)
                with w.block("for (int64_t t = 0; t < kw; ++t)"):
                    w.line(f"const int64_t c = c0 + t * dw < c1 ? c0 + t * dw : {neutral};")
                    w.line(f"idx.SetValue(t * njp + j, static_cast<uint32_t>(c * sizeof({t})));",
                           self.loc)
                if k.loop.post == "count":
                    w.line(f"s.SetValue(j, static_cast<{k.rtype}>(c1 - c0));  // the window "
                           "widths", self.loc)
        w.line("SetFlag<HardEvent::S_V>(EVENT_ID0);  // the vector unit reads the offsets")
        w.line("WaitFlag<HardEvent::S_V>(EVENT_ID0);")
        w.line("const int64_t units = planes * ni;")
        w.line("const int64_t per = (units + GetBlockNum() - 1) / GetBlockNum();")
        w.line("const int64_t first = GetBlockIdx() * per;")
        w.line("const int64_t last = first + per < units ? first + per : units;")
        w.line("int64_t cached = -1, lo = 0, hi = 0;  // the plane and input rows in UB")
        w.line("int64_t tb = 0, tn = 0;  // the row windows [tb, tb + tn) in tab")

    def _load_tab(self, gm: str, start: str, count: str) -> None:
        """Windows ``[start, start + count)`` of the table ``gm`` into ``tab`` (after the
        scalar unit's last reads of it), for scalar reads."""
        w = self.w
        w.line("SetFlag<HardEvent::S_MTE2>(EVENT_ID0);  // the scalar reads of tab done")
        w.line("WaitFlag<HardEvent::S_MTE2>(EVENT_ID0);")
        w.line(f"DataCopyPad(tab, {gm}[2 * {start}], DataCopyExtParams(1, static_cast<uint32_t>("
               f"2 * {count} * sizeof(int32_t)), 0, 0, 0), DataCopyPadExtParams<int32_t>(false, "
               "0, 0, 0));", self.loc)
        w.line("SetFlag<HardEvent::MTE2_S>(EVENT_ID0);  // the scalar unit reads them")
        w.line("WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);")

    def _unit(self) -> None:
        """One output row: its window rows into the accumulator, then the columns."""
        w, p = self.w, self.k.loop
        api = _API[p.kind]
        w.line("const int64_t plane = u / ni, i = u % ni;")
        w.line("const int64_t stop = plane == (last - 1) / ni ? (last - 1) % ni : ni - 1;  "
               "// the block's last row of windows in this plane")
        # the table is the same for every plane: a block's next plane reuses what is in tab
        with w.block("if (i < tb || i >= tb + tn)"):
            w.line("tb = i, tn = stop - i + 1 < TAB_CAP ? stop - i + 1 : TAB_CAP;")
            self._load_tab("rowGm", "tb", "tn")
        w.line("const int64_t r0 = tab.GetValue(2 * (i - tb)), "
               "r1 = tab.GetValue(2 * (i - tb) + 1);", self.loc)
        w.line("bool started = false;")
        with w.block("for (int64_t r = r0; r < r1;)"):
            with w.block("if (plane != cached || r < lo || r >= hi)"):
                self._load_rows()
            w.line("const int64_t e = r1 < hi ? r1 : hi;")
            with w.block("for (; r < e; r += dh)"):  # every dh-th row: the dilation
                row = "in[(r - lo) * pitch]"
                if self.k.wide:  # the row in the accumulator's type first
                    w.line(f"Cast(widened, {row}, RoundMode::CAST_NONE, static_cast<uint32_t>(w));",
                           self.loc)
                    row = "widened"
                with w.block("if (!started)"):
                    w.line(f"Muls(acc, {row}, static_cast<{self.k.atype}>(1), "
                           "static_cast<int32_t>(w));", self.loc)
                    w.line("started = true;")
                with w.block("else"):
                    w.line(f"{api}(acc, acc, {row}, static_cast<int32_t>(w));", self.loc)
        self._columns()

    def _load_rows(self) -> None:
        """The input rows from ``r`` (or the next window's first row) on, as many as the
        UB holds (one ``DataCopyPad``)."""
        w, t = self.w, self.k.ctype
        w.line("// from r, or from the next window's first row when it lies below r (a copy in")
        w.line("// the middle of this window would be read again whole for the next one); as many")
        w.line("// rows as the UB holds, none past the block's windows in tab (later ones: one")
        w.line("// more copy)")
        w.line("lo = r;")
        with w.block("if (i < stop && i + 1 < tb + tn)"):
            w.line("const int64_t next = tab.GetValue(2 * (i + 1 - tb));", self.loc)
            w.line("lo = next < r && r - next < chunk ? next : r;")
        w.line("int64_t need = r1;")
        with w.block("for (int64_t k = i + 1; k <= stop && k < tb + tn && need < lo + chunk; ++k)"):
            w.line("const int64_t end = tab.GetValue(2 * (k - tb) + 1);", self.loc)
            w.line("need = end > need ? end : need;")
        w.line("cached = plane, hi = lo + chunk < need ? lo + chunk : need;")
        w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // the last rows' reads done")
        w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);")
        w.line(f"DataCopyPad(in, xGm[(plane * h + lo) * w], DataCopyExtParams("
               f"static_cast<uint16_t>(hi - lo), static_cast<uint32_t>(w * sizeof({t})), "
               f"0, gap, 0), DataCopyPadExtParams<{t}>(false, 0, 0, static_cast<{t}>(0)));",
               self.loc)
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);")

    def _columns(self) -> None:
        """Each tap's ``Gather`` folded into the output row, the post-operation, the row
        out to GM."""
        k, w, t, p = self.k, self.w, self.k.ctype, self.k.loop
        api = _API[p.kind]
        w.line("Gather(o, acc, idx, 0, static_cast<uint32_t>(nj));", self.loc)
        with w.block("for (int64_t t = 1; t < kw; ++t)"):
            w.line("Gather(g, acc, idx[t * njp], 0, static_cast<uint32_t>(nj));", self.loc)
            w.line(f"{api}(o, o, g, static_cast<int32_t>(nj));", self.loc)
        # the post-operation in the reduction's type: before narrowing a float32 mean,
        # after narrowing a float16 sum (rounded once, then divided as numpy does)
        late = k.wide and k.rtype != k.atype
        if p.post and not late:
            self._post("o")
        if k.wide:
            w.line("Cast(narrowed, o, RoundMode::CAST_RINT, static_cast<uint32_t>(nj));",
                   self.loc)
        if p.post and late:
            self._post("narrowed")
        w.line("SetFlag<HardEvent::V_MTE3>(EVENT_ID0);")
        w.line("WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);")
        w.line(f"DataCopyPad(outGm[(plane * oh + loI + i) * ow + loJ], "
               f"{'narrowed' if k.wide else 'o'}, DataCopyExtParams(1, "
               f"static_cast<uint32_t>(nj * sizeof({t})), 0, 0, 0));", self.loc)
        w.line("SetFlag<HardEvent::MTE3_V>(EVENT_ID0);  // before the next unit rewrites o")
        w.line("WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);")

    def _post(self, o: str) -> None:
        """The post-operation on the output row ``o`` (of the reduction's type)."""
        w, t, p = self.w, self.k.rtype, self.k.loop
        assert p.post is not None
        if p.post == "count":  # the window's element count: its height times the widths
            g = "g" if t == self.k.atype else "gr"
            w.line(f"Muls({g}, s, static_cast<{t}>(r1 - r0), static_cast<int32_t>(nj));",
                   self.loc)
            w.line(f"Div({o}, {o}, {g}, static_cast<int32_t>(nj));", self.loc)
            return
        w.line("SetFlag<HardEvent::V_MTE2>(EVENT_ID1);")
        w.line("WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);")
        w.line(f"DataCopyPad(s, scaleGm[i * nj], DataCopyExtParams(1, static_cast<uint32_t>(nj * "
               f"sizeof({t})), 0, 0, 0), DataCopyPadExtParams<{t}>(false, 0, 0, "
               f"static_cast<{t}>(0)));", self.loc)
        w.line("SetFlag<HardEvent::MTE2_V>(EVENT_ID1);")
        w.line("WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);")
        w.line(f"{_POST[p.post]}({o}, {o}, s, static_cast<int32_t>(nj));", self.loc)


__all__ = ["IDX_CAP", "ROW_CAP", "TAB_CAP", "PoolEmitter", "PoolKernel", "plan_pool_kernel"]
