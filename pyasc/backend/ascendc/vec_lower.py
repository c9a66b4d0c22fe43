"""Lowering a fused group to a tile program (the compute stage of one vector kernel).

:class:`VecLowering` walks the group body once and maps each value to a :class:`VVal`
(a UB buffer of its class, or a C++ scalar expression), emitting AscendC calls through
the op tables of ``vec_arith`` and ``vec_math`` (``{op class: fn}``).  Mixed classes
follow one rule: a ``full`` result with a ``col`` operand runs per row with the column
element as the scalar operand; a ``full`` result with a ``row`` operand runs per row
with the row vector as a tensor operand; everything else runs on whole buffers.  Every
call is checked against the SoC's dtype tables as it is emitted (:func:`check_instr`):
a call the SoC's API does not take makes the group scalar code, never C++ that does not
compile on the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from pyasc.backend.ascendc import cexpr
from pyasc.backend.ascendc.analysis import (
    COL,
    FULL,
    PARTIAL,
    ROW,
    SCALAR,
    GroupInfo,
    NotVectorizable,
)
from pyasc.backend.ascendc.soc import API_DTYPE_CLASS, SoC
from pyasc.backend.ascendc.tiles import Buf, ColElem, Instr, Operand, Ref, TileProgram
from pyasc.ir.core import Location, Operation, Value
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import ScalarType, element_type, f32, u8

_KIND = {FULL: "tile", COL: "col", ROW: "row", PARTIAL: "acc"}
_COUNT = {FULL: "tile", COL: "col", ROW: "cols"}
_PADDED = {FULL: "tile256", COL: "col256"}


@dataclass
class VVal:
    """A value inside the kernel: a buffer of its class, or a scalar C++ expression."""

    cls: str
    dtype: ScalarType
    buf: Buf | None = None
    expr: str = ""

    @property
    def is_mask(self) -> bool:
        return self.buf is not None and self.buf.kind in ("mask", "colmask")


@dataclass
class Partial:
    """A whole-array reduction: its accumulator and the per-block result it yields."""

    kind: str       # sum | max | min
    acc: Buf
    result: ScalarType  # element type of the function's result
    # The block folds its accumulator by halves with Add/Max/Min (a type ReduceX does
    # not take: int16, int32) and writes the whole 32-byte slot, all of it results.
    tree: bool = False


def reduce_identity(kind: str, t: ScalarType) -> float | int:
    """The start of an accumulator: 0 for sums, else the lowest (max) or highest (min)
    value of ``t`` (infinities for floats)."""
    if kind == "sum":
        return 0
    if t.is_float:
        return -math.inf if kind == "max" else math.inf
    bits = 8 * t.itemsize - (1 if t.is_signed else 0)
    low = -(1 << bits) if t.is_signed else 0
    return low if kind == "max" else (1 << bits) - 1


LowerFn = Callable[["VecLowering", Operation], None]

_SOURCE_TYPED = frozenset({"Compare", "ReduceSum", "ReduceMax", "ReduceMin"})


def _buf(op: Operand | Ref | None) -> Buf:
    assert isinstance(op, Ref | ColElem)
    return op.buf


def api_dtype_class(instr: Instr) -> tuple[str | None, ScalarType]:
    """The dtype class (``soc.API_DTYPE_CLASS``) bounding ``instr`` and the element type
    it is checked on: the destination's, the source's for Compare and the reductions."""
    typed = instr.srcs[0] if instr.api in _SOURCE_TYPED else instr.dst
    cls = API_DTYPE_CLASS.get(instr.api)
    if instr.api == "Compare" and "CMPMODE::EQ" in instr.extra:
        cls = "compare_eq"  # int32 compares only for equality
    return cls, _buf(typed).dtype


def check_instr(soc: SoC, instr: Instr) -> None:
    """Refuse a call on an element type (or a Cast pair and mode) the SoC's API does not
    take: the group then runs as scalar code instead of failing to compile."""
    if instr.api == "Cast":
        src, dst, mode = _buf(instr.srcs[0]).dtype, _buf(instr.dst).dtype, instr.extra[0]
        if not soc.supports_cast(src.name, dst.name, mode.split("::")[-1]):
            raise NotVectorizable(f"Cast from {src} to {dst} ({mode}) is not a vector API "
                                  f"on {soc.name}", instr.loc)
        return
    cls, t = api_dtype_class(instr)
    if cls is None or not soc.supports(cls, t.name):
        raise NotVectorizable(f"{instr.api} on {t} is not a vector API on {soc.name}",
                              instr.loc)


class VecLowering:
    """State of one group's lowering; op tables call its helpers."""

    def __init__(self, group: FusionGroupOp, info: GroupInfo, soc: SoC,
                 rules: dict[type, LowerFn]) -> None:
        self.group, self.info, self.soc, self.rules = group, info, soc, rules
        self.prog = TileProgram(check=partial(check_instr, soc))
        self.vals: dict[Value, VVal] = {}
        self.partials: dict[Value, Partial] = {}
        self.memo: dict[str, str] = {}  # scalar expressions already declared
        self.loc: Location = group.loc

    # ---------------------------------------------------------------- values
    def get(self, v: Value) -> VVal:
        return self.vals[v]

    def set(self, v: Value, vv: VVal) -> None:
        self.vals[v] = vv

    def new_vec(self, cls: str, dtype: ScalarType, hint: str) -> VVal:
        """A fresh buffer for a value of class ``cls`` (``i1`` values are bit masks)."""
        if dtype.is_bool:
            kind = {FULL: "mask", COL: "colmask"}.get(cls)
            if kind is None:
                raise NotVectorizable("a boolean row vector", self.loc)
            return VVal(cls, dtype, self.prog.new_buf(kind, u8, hint))
        return VVal(cls, dtype, self.prog.new_buf(_KIND[cls], dtype, hint))

    def result_vec(self, op: Operation, dtype: ScalarType | None = None) -> VVal:
        """The buffer of ``op``'s result (named after the IR value)."""
        r = op.result
        return self.new_vec(self.info.classes[r], dtype or element_type(r.type),
                            r.name_hint or op.name.split(".")[-1])

    def temp(self, like: VVal, dtype: ScalarType | None = None, hint: str = "tmp") -> VVal:
        return self.new_vec(like.cls, dtype or like.dtype, hint)

    def scalar_value(self, v: VVal) -> str:
        if v.buf is not None:
            raise NotVectorizable("a vector operand where a scalar is needed", self.loc)
        return v.expr

    # ---------------------------------------------------------------- checks
    def require(self, api: str, dtype: ScalarType, what: str) -> None:
        if not self.soc.supports(api, dtype.name):
            raise NotVectorizable(f"{what} on {dtype} is not a vector API on "
                                  f"{self.soc.name}", self.loc)

    # ---------------------------------------------------------------- emission
    def call(self, api: str, dst: VVal, srcs: Sequence[VVal | str], extra: Sequence[str] = (),
             padded: bool = False) -> None:
        """``api(dst, srcs..., extra..., count)`` with the per-row rule for mixed classes."""
        vec = [s for s in srcs if isinstance(s, VVal) and s.buf is not None]
        per_row = dst.cls == FULL and any(s.cls in (COL, ROW) for s in vec)
        if per_row and padded:
            raise NotVectorizable(f"{api} of a broadcast operand", self.loc)
        ops: list[Operand] = []
        for s in srcs:
            ops.append(self._operand(s, per_row))
        if per_row:
            count = "cols"
        else:
            count = (_PADDED if padded else _COUNT).get(dst.cls)
            if count is None:
                raise NotVectorizable(f"{api} on a {dst.cls} value", self.loc)
        assert dst.buf is not None
        self.prog.emit(Instr(api, Ref(dst.buf, per_row), tuple(ops), tuple(extra), count,
                             per_row, self.loc))

    def _operand(self, s: VVal | str, per_row: bool) -> Operand:
        if isinstance(s, str):
            return s
        if s.buf is None:
            return s.expr
        if per_row and s.cls == COL:
            return ColElem(s.buf)
        return Ref(s.buf, per_row and s.cls == FULL)

    def scalar_call(self, api: str, dst: VVal, src: VVal, scalar: VVal | str,
                    fmt: str = "{}") -> None:
        """``api(dst, src, s, count)`` where ``s`` is a scalar or a column element
        (``fmt`` wraps the scalar text, e.g. ``-{}``)."""
        if isinstance(scalar, VVal) and scalar.buf is not None:
            if scalar.cls != COL or dst.cls != FULL:
                raise NotVectorizable(f"{api} with a {scalar.cls} scalar operand", self.loc)
            per_row = True
            s_op: Operand = ColElem(scalar.buf, fmt)
        else:
            per_row = dst.cls == FULL and src.cls in (ROW,)
            text = scalar if isinstance(scalar, str) else scalar.expr
            s_op = fmt.format(text)
        src_op = self._operand(src, per_row)
        count = "cols" if per_row else _COUNT[dst.cls]
        assert dst.buf is not None
        self.prog.emit(Instr(api, Ref(dst.buf, per_row), (src_op, s_op), (), count, per_row,
                             self.loc))

    def duplicate(self, dst: VVal, scalar: VVal | str) -> None:
        """Fill ``dst`` with a scalar (or, per row, with a column element)."""
        self.require("duplicate", dst.dtype, "Duplicate")
        if isinstance(scalar, VVal) and scalar.buf is not None:
            assert dst.buf is not None and scalar.cls == COL
            self.prog.emit(Instr("Duplicate", Ref(dst.buf, True), (ColElem(scalar.buf),), (),
                                 "cols", True, self.loc))
            return
        text = scalar if isinstance(scalar, str) else scalar.expr
        self.call("Duplicate", dst, [text])

    def materialize(self, v: VVal, cls: str, hint: str = "bcast") -> VVal:
        """``v`` as a buffer of class ``cls`` (broadcasting scalars, rows or columns)."""
        if v.buf is not None and v.cls == cls:
            return v
        if v.cls == ROW and cls == FULL and v.dtype.is_bool and not v.is_mask:
            # a bool row from GM is bytes: its broadcast stays bytes (a bit mask's buffer
            # holds an eighth of them), and users make the mask as from any bool input
            out = VVal(cls, v.dtype, self.prog.new_buf(_KIND[cls], u8, hint))
        else:
            out = self.new_vec(cls, v.dtype, hint)
        if v.buf is None or v.cls == COL:
            self.duplicate(out, v)
        elif v.cls == ROW and cls == FULL:
            assert out.buf is not None
            self.prog.emit(Instr("DataCopy", Ref(out.buf, True), (Ref(v.buf),), (), "pitch",
                                 True, self.loc))
        else:
            raise NotVectorizable(f"broadcast of a {v.cls} value to {cls}", self.loc)
        return out

    def cast(self, dst: VVal, src: VVal, mode: str) -> None:
        self.call("Cast", dst, [src], [f"RoundMode::{mode}"])

    def literal(self, value: float, dtype: ScalarType) -> str:
        return cexpr.literal(value, dtype)

    def float_compute(self, v: VVal) -> tuple[VVal, bool]:
        """``v`` in float32 for composite functions (half inputs are widened)."""
        if v.dtype.name == "f32":
            return v, False
        if v.dtype.name != "f16":
            raise NotVectorizable(f"math on {v.dtype}", self.loc)
        wide = self.temp(v, f32, "wide")
        self.cast(wide, v, "CAST_NONE")
        return wide, True

    # ---------------------------------------------------------------- driver
    def run(self) -> None:
        block = self.group.body.blocks[0]
        for arg in block.args:
            self.vals[arg] = self._input(arg)
        for op in block.ops:
            if op.name == "fusion.yield":
                break
            self.loc = op.loc
            fn = self.rules.get(type(op))
            if fn is None:
                raise NotVectorizable(f"'{op.name}' has no vector lowering", op.loc)
            fn(self, op)

    def _input(self, arg: Value) -> VVal:
        cls = self.info.classes[arg]
        t = element_type(arg.type)
        if cls == SCALAR:  # a kernel parameter kept as the class member ``<name>_``
            name = self.prog.unique(arg.name_hint or "s")
            return VVal(SCALAR, t, expr=name + "_")
        stored = u8 if t.is_bool else t  # bool arrays arrive as bytes, not as masks
        buf = self.prog.new_buf(_KIND[cls], stored, arg.name_hint or "in", role="in")
        return VVal(cls, t, buf)

