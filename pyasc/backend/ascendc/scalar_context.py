"""What every scalar-kernel emitter shares: the emitter context and memref descriptors.

A memref value is a compile-time descriptor (:class:`MemDesc`: base, offset, extents and
strides as C++ expressions), so views cost nothing.  :class:`ScalarContext` holds the
state of one kernel being written (the writer, the C++ names of values and memrefs) and
is what every op emitter receives.  The op emitters live in ``emit_scalar`` (values,
memory, checks), ``emit_control`` (loops, branches) and ``emit_carry`` (arrays carried
by them); they import this module and never one another upward: an emitter that emits a
nested region calls :meth:`ScalarContext.block_op`, which the kernel emitter
(``emit_scalar.ScalarEmitter``) implements with its table of all op emitters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from pyasc.backend.ascendc import cexpr
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.scalar_plan import ScalarKernel, _Names
from pyasc.backend.ascendc.tiles import ctype
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import ScalarType


@dataclass
class MemDesc:
    """A memref in scalar code: ``base`` is a GlobalTensor (``gm``) or a local array."""

    base: str
    gm: bool
    elem: ScalarType
    offset: str
    sizes: list[str]
    strides: list[str]


def c_mul(a: str, b: str) -> str:
    """C++ for ``a * b``, folded where an operand is 0, 1 or both are literals."""
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        return str(int(a) * int(b))
    return f"{_paren(a)} * {_paren(b)}"


def c_add(a: str, b: str) -> str:
    """C++ for ``a + b``, folded where an operand is 0 or both are literals."""
    if a == "0":
        return b
    if b == "0":
        return a
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        return str(int(a) + int(b))
    return f"{a} + {b}"


def _paren(a: str) -> str:
    return a if a.replace("_", "").isalnum() or a.lstrip("-").isdigit() else f"({a})"


def contiguous_strides(sizes: list[str]) -> list[str]:
    """Row-major strides (C++ expressions) of extents ``sizes``."""
    strides = ["1"] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = c_mul(strides[i + 1], sizes[i + 1])
    return strides


class ScalarContext(ABC):
    """One scalar kernel being written: its writer, kernel plan, the math helpers it
    calls and the C++ name of every value (``vals``) and memref (``mems``)."""

    def __init__(self, w: CWriter, k: ScalarKernel, helpers: set[str]) -> None:
        self.w, self.k, self.helpers = w, k, helpers
        self.vals: dict[Value, str] = {}
        self.mems: dict[Value, MemDesc] = {}
        self.names = _Names()
        self.flush_gm: tuple[str, str] | None = None  # (GlobalTensor, type) the flush names

    @abstractmethod
    def block_op(self, op: Operation) -> None:
        """Emit one op (any op a scalar kernel may contain)."""

    def block(self, block: Block) -> None:
        """Emit every op of ``block``."""
        for op in block.ops:
            self.block_op(op)

    def get(self, v: Value) -> str:
        """The C++ expression of scalar ``v`` (a name, or a literal for a constant)."""
        if v in self.vals:
            return self.vals[v]
        c = constant_value(v)
        if c is not None and isinstance(v.type, ScalarType):
            return cexpr.literal(c, v.type)
        where = v.op.loc if isinstance(v, OpResult) else None
        raise InternalCompilerError(f"scalar AscendC: no C++ value for {v}",
                                    filename=where.file if where else None,
                                    lineno=where.line or None if where else None)

    def declare(self, v: Value, expr: str, op: Operation, hint: str = "v") -> str:
        """A ``const`` C++ variable holding ``expr`` as the value of ``v``."""
        name = self.names.new(v.name_hint or hint)
        self.w.line(f"const {ctype(v.type)} {name} = {expr};", op.loc,  # type: ignore[arg-type]
                    directive=False)
        self.vals[v] = name
        return name

    def mutable(self, v: Value, init: str | None, hint: str) -> str:
        """A mutable C++ variable for ``v`` (loop-carried values)."""
        name = self.names.new(v.name_hint or hint)
        tail = f" = {init}" if init is not None else ""
        self.w.line(f"{ctype(v.type)} {name}{tail};")  # type: ignore[arg-type]
        self.vals[v] = name
        return name

    def offset(self, d: MemDesc, indices: list[Value]) -> str:
        """The element offset of ``d[indices]``."""
        off = d.offset
        for i, s in zip(indices, d.strides, strict=True):
            off = c_add(off, c_mul(self.get(i), s))
        return off


Emit = Callable[[ScalarContext, Operation], None]
"""An op emitter: writes the C++ of one op into the context's kernel."""

__all__ = ["Emit", "MemDesc", "ScalarContext", "c_add", "c_mul", "contiguous_strides"]
