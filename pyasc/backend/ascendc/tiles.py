"""The tile program: what one vector kernel computes on each UB tile, as AscendC calls.

A fused group becomes a list of :class:`Instr` over virtual UB buffers (:class:`Buf`).
Buffers have a *kind* that fixes their extent in a tile:

* ``tile``: one element per element of the tile (``TILE`` elements; in the row-wise
  schedule ``rows`` rows of ``pitch`` elements, the pad columns holding don't-care
  values);
* ``col``: one element per row of the tile (per-row reduction results);
* ``row``: one row (a row vector broadcast over the rows, loaded once per block);
* ``mask``/``colmask``: ``Compare`` bit masks over a ``tile``/``col`` buffer;
* ``acc``: a ``tile``-sized accumulator kept across tiles (whole-array reductions).

Operands are :class:`Ref` (a whole buffer, or row ``r`` of it inside a per-row loop),
:class:`ColElem` (element ``r`` of a ``col`` buffer read as a scalar) or a C++ scalar
expression (``str``).  Counts are symbolic (:data:`COUNTS`) and rendered by the kernel
emitter, which also assigns physical buffers (``Buf.phys``) and groups consecutive
per-row instructions into one loop over the tile's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import UNKNOWN_LOC, Location
from pyasc.ir.types import ScalarType
from pyasc.ir.unique import UniqueNames

CTYPES: dict[str, str] = {
    "f16": "half", "bf16": "bfloat16_t", "f32": "float", "f64": "double",
    "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "ui8": "uint8_t", "ui16": "uint16_t", "ui32": "uint32_t", "ui64": "uint64_t",
    "index": "int64_t", "i1": "bool",
}

# Symbolic counts an instruction may use, by name; the emitter renders them.
COUNTS = ("tile", "col", "cols", "pitch", "tile256", "col256", "tile32", "col32", "one")


def ctype(t: ScalarType) -> str:
    """The AscendC C++ spelling of an element type (``i1`` tensors are stored as bytes)."""
    return CTYPES[t.name]


def storage_type(t: ScalarType) -> str:
    """The GM/UB element type of a tensor of ``t`` (``bool`` arrays are bytes)."""
    return "uint8_t" if t.is_bool else CTYPES[t.name]


@dataclass(eq=False)
class Buf:
    """A virtual UB buffer: kind, element type and the C++ name of its tensor."""

    kind: str          # tile | col | row | mask | colmask | acc
    dtype: ScalarType  # element type as stored (ui8 for masks and bool data)
    name: str
    role: str = "calc"  # in | out | calc | acc
    phys: str = ""      # physical buffer, set by the allocator

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


@dataclass(frozen=True)
class Ref:
    """A vector operand: the whole buffer, or (``row=True``) row ``r`` of it."""

    buf: Buf
    row: bool = False


@dataclass(frozen=True)
class ColElem:
    """Element ``r`` of a ``col`` buffer, read as a scalar inside a per-row loop;
    ``fmt`` wraps the read (e.g. ``-{}``)."""

    buf: Buf
    fmt: str = "{}"


Operand = Ref | ColElem | str


@dataclass
class Instr:
    """One AscendC call: ``api(dst, srcs..., extra..., count)``.

    ``per_row`` instructions run inside a loop over the tile's rows; ``count`` names a
    symbolic count from :data:`COUNTS` (``None`` for calls without one).  ``text``
    overrides the rendering for calls with an irregular argument list.
    """

    api: str
    dst: Ref | None
    srcs: tuple[Operand, ...] = ()
    extra: tuple[str, ...] = ()
    count: str | None = "tile"
    per_row: bool = False
    loc: Location = UNKNOWN_LOC

    def reads(self) -> list[Buf]:
        """Buffers this instruction reads."""
        out = []
        for s in self.srcs:
            if isinstance(s, Ref | ColElem):
                out.append(s.buf)
        return out

    def needs_scalar_sync(self) -> bool:
        """True if a scalar read of UB data (``GetValue``) feeds this call."""
        return any(isinstance(s, ColElem) for s in self.srcs)


@dataclass
class TileProgram:
    """The compute stage of one vector kernel, before physical buffer assignment."""

    instrs: list[Instr] = field(default_factory=list)
    buffers: list[Buf] = field(default_factory=list)
    scalars: list[tuple[str, str, Location]] = field(default_factory=list)  # decls
    reduce_tmp_types: set[str] = field(default_factory=set)  # dtypes of ReduceX calls
    names: UniqueNames = field(default_factory=lambda: UniqueNames(RESERVED))
    # Called on every instruction before it is kept: raises to refuse a call the target
    # cannot take (the SoC's dtype rules, ``vec_lower.check_instr``).
    check: Callable[[Instr], None] | None = None

    def unique(self, base: str) -> str:
        """A C++ identifier derived from ``base`` not used yet in this kernel."""
        return self.names.fresh(user_base(base))

    def new_buf(self, kind: str, dtype: ScalarType, hint: str, role: str = "calc") -> Buf:
        buf = Buf(kind, dtype, self.unique(hint), role)
        self.buffers.append(buf)
        return buf

    def emit(self, instr: Instr) -> None:
        if self.check is not None:
            self.check(instr)
        self.instrs.append(instr)

    def scalar(self, ctype_: str, hint: str, expr: str, loc: Location) -> str:
        """Declare a named scalar ``const ctype_ name = expr;`` in the compute stage."""
        name = self.unique(hint)
        self.scalars.append((f"const {ctype_} {name} = {expr};", name, loc))
        return name


# C++ keywords and names the generated kernels define themselves.  Kernel members and
# helpers the emitters write literally end with "_" (``pipe_``, ``cols_``) or are listed
# here; names derived from a buffer's name append one of DERIVED_SUFFIXES (``xGm_``,
# ``xHalo``), and user_base keeps every user-derived name clear of both forms.
RESERVED = frozenset({
    # C++20 keywords and alternative tokens
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
    "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private",
    "protected", "public", "register", "reinterpret_cast", "requires", "return", "short",
    "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
    "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
    "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
    "while", "xor", "xor_eq",
    # AscendC and C library names a kernel variable would shadow
    "half", "bfloat16_t", "AscendC", "GetBlockIdx", "GetBlockNum", "DataCopy",
    "DataCopyPad", "TPipe", "TBuf", "TQue", "LocalTensor", "GlobalTensor", "GM_ADDR",
    "min", "max", "abs", "exp", "log", "sqrt", "tanh", "pow", "sin", "cos", "tan", "floor",
    "ceil", "round", "trunc", "erf", "log2", "log10", "exp2", "expm1", "log1p", "fabs",
    "fmod", "rint", "isnan", "isinf", "float_t", "double_t", "int8_t", "int16_t",
    "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    # names the generated kernels define themselves
    "TILE", "pipe", "r", "n", "rows", "len", "off", "row", "tmp", "pitch", "cols", "first",
    "count", "blk", "i", "j", "k", "status", "sm", "scratch", "arenaTop", "trip",
    # the long-rows kernel's column parameter and constants (emit_longrows: a buffer
    # named like them shadowed them, and its CopyIn did not compile)
    "c", "COL_CAP", "REDUCE_TMP",
    # the cols kernel's block split in Init (emit_cols: `r0`, `c0` shadowed parameters
    # of those names, E50050)
    "r0", "c0", "rb", "colBlocks", "rowsPerBlock", "colsPerBlock", "tileRows",
    # the elementwise kernel's split (emit_kernel); the per-plane cols kernel's plane
    # counters (emit_cols); the channel kernel's accumulator start (emit_channels)
    "op", "perBlock", "plane", "planes", "accInit",
})

DERIVED_SUFFIXES = ("Gm", "Halo", "Vals", "Dim", "PerBlock", "Grain", "Begin", "Res", "Len",
                    "First", "Row", "End", "At", "Stride", "_d", "_pass", "_arr", "LL", "GM",
                    "Que", "Buf", "Addr", "Tab")
"""Endings of the names emitters derive from a buffer's name (``f"{name}Halo"``)."""


def user_base(hint: str) -> str:
    """A C++ identifier for a user-derived name ``hint`` that no literal member (ending
    with ``_``) and no derived name (``{other}`` + a DERIVED_SUFFIXES ending) can equal:
    trailing underscores dropped, a ``v`` added after such an ending or a leading digit."""
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in hint).rstrip("_") or "v"
    if clean[0].isdigit():
        clean = "v" + clean
    if clean.endswith(DERIVED_SUFFIXES) and clean not in DERIVED_SUFFIXES:
        clean += "v"
    return clean
