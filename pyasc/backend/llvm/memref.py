"""Memrefs in generated code: a data pointer plus one ``i64`` per dim and per stride.

A memref is never an LLVM struct: its parts are plain SSA values, so LLVM sees constants
where the IR type is static (a C-contiguous ``memref<4x8xf32>`` has strides ``8, 1``
folded into every address) and the loop vectorizer sees unit inner strides.  Strides are
in elements; ``data`` points at element ``[0, ..., 0]`` (strides may be negative).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from pyasc.backend.llvm.lltypes import I64, i64, storage_type
from pyasc.errors import InternalCompilerError
from pyasc.ir.types import DYN, MemRefType


def imul(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x * y`` on i64 index values, folded when both are constants."""
    if isinstance(x, ir.Constant) and isinstance(y, ir.Constant):
        return i64(x.constant * y.constant)
    if isinstance(x, ir.Constant) and x.constant == 1:
        return y
    if isinstance(y, ir.Constant) and y.constant == 1:
        return x
    return b.mul(x, y, flags=("nsw",))


def iadd(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x + y`` on i64 index values, folded when both are constants."""
    if isinstance(x, ir.Constant) and isinstance(y, ir.Constant):
        return i64(x.constant + y.constant)
    if isinstance(x, ir.Constant) and x.constant == 0:
        return y
    if isinstance(y, ir.Constant) and y.constant == 0:
        return x
    return b.add(x, y, flags=("nsw",))


def contiguous_strides(b: ir.IRBuilder, shape: Sequence[ir.Value]) -> list[ir.Value]:
    """C-order element strides for ``shape``."""
    strides: list[ir.Value] = []
    acc: ir.Value = i64(1)
    for d in reversed(shape):
        strides.append(acc)
        acc = imul(b, acc, d)
    return strides[::-1]


@dataclass
class MemRef:
    """A memref value in generated code."""

    type: MemRefType
    data: ir.Value
    shape: list[ir.Value]
    strides: list[ir.Value]

    @classmethod
    def build(cls, b: ir.IRBuilder, t: MemRefType, data: ir.Value,
              shape: Sequence[ir.Value | None],
              strides: Sequence[ir.Value | None] | None) -> MemRef:
        """A memref of type ``t``; static dims/strides of ``t`` override the given values.

        ``strides`` may be ``None`` (or hold ``None``) only where ``t`` makes them known.
        """
        dims = [i64(d) if d != DYN else _need(v, "dim") for d, v in zip(t.shape, shape,
                                                                        strict=True)]
        if t.strides is None:
            computed = contiguous_strides(b, dims)
            _check_consistent(t, strides, computed)
            return cls(t, data, dims, computed)
        given = list(strides) if strides is not None else [None] * t.rank
        out = [i64(s) if s != DYN else _need(v, "stride") for s, v in zip(t.strides, given,
                                                                           strict=True)]
        _check_consistent(t, given, out)
        return cls(t, data, dims, out)

    def address(self, b: ir.IRBuilder, indices: Sequence[ir.Value]) -> ir.Value:
        """Pointer to the element at ``indices``."""
        offset: ir.Value = i64(0)
        for idx, stride in zip(indices, self.strides, strict=True):
            offset = iadd(b, offset, imul(b, idx, stride))
        if isinstance(offset, ir.Constant) and offset.constant == 0:
            return self.data
        return b.gep(self.data, [offset], inbounds=True,
                     source_etype=storage_type(self.type.element))

    def components(self) -> list[ir.Value]:
        """The flat list ``[data, *shape, *strides]`` (for phis and descriptors)."""
        return [self.data, *self.shape, *self.strides]

    @classmethod
    def from_components(cls, b: ir.IRBuilder, t: MemRefType,
                        comps: Sequence[ir.Value]) -> MemRef:
        r = t.rank
        return cls.build(b, t, comps[0], list(comps[1:1 + r]), list(comps[1 + r:1 + 2 * r]))

    @staticmethod
    def component_types(t: MemRefType) -> list[ir.Type]:
        return [ir.PointerType()] + [I64] * (2 * t.rank)


def _need(v: ir.Value | None, what: str) -> ir.Value:
    if v is None:
        raise InternalCompilerError(f"memref {what} is dynamic but has no run-time value")
    return v


def _check_consistent(t: MemRefType, given: Sequence[ir.Value | None] | None,
                      final: Sequence[ir.Value]) -> None:
    """A static stride in the type must agree with a stride known at compile time."""
    if given is None:
        return
    for d, g, f in zip(t.shape, given, final, strict=True):
        if d in (0, 1):
            continue  # the stride of an axis of size 0 or 1 is never used
        if (isinstance(g, ir.Constant) and isinstance(f, ir.Constant)
                and g.constant != f.constant):
            raise InternalCompilerError(
                f"memref type {t} disagrees with its computed strides "
                f"({g.constant} vs {f.constant})")
