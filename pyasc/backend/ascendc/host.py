"""Building the host program: IR helpers for shapes, tiling math, allocations, launches.

The host program is ordinary IR (scalar ``index`` arithmetic, ``mem.alloc``, views,
``mem.to_tensor``...) plus ``ascend.launch``; :class:`HostBuilder` appends to it.  Values
whose shape is static fold to constants when the finished host function is
canonicalized, so a static-shape program launches with literal tiling parameters and a
dynamic-shape one computes them from the run-time dims (no recompilation per shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pyasc.backend.ascendc.ops import LaunchOp
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Location, Operation, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, index


class HostBuilder:
    """Appends host ops to a block, at one location at a time."""

    def __init__(self, block: Block, loc: Location) -> None:
        self.b = Builder.at_end(block, loc)
        self._consts: dict[tuple[object, str], Value] = {}

    def at(self, loc: Location) -> Builder:
        self.b.loc = loc
        return self.b

    def insert(self, op: Operation) -> Operation:
        return self.b.insert(op)

    # ---------------------------------------------------------------- scalars
    def const(self, value: int | float | bool, t: ScalarType = index) -> Value:
        key = (value, t.name)
        if key not in self._consts:
            self._consts[key] = self.insert(arith.ConstantOp.new(value, t)).result
        return self._consts[key]

    def binary(self, cls: type, a: Value | int, b: Value | int) -> Value:
        a_v = self.const(a) if isinstance(a, int) else a
        b_v = self.const(b) if isinstance(b, int) else b
        return self.insert(cls.new(a_v, b_v)).result

    def cmp(self, pred: str, a: Value | int, b: Value | int) -> Value:
        """``a pred b`` (an ``arith.cmp`` predicate: eq, ne, lt, le, gt, ge)."""
        a_v = self.const(a) if isinstance(a, int) else a
        b_v = self.const(b) if isinstance(b, int) else b
        return self.insert(arith.CmpOp.new(pred, a_v, b_v)).result

    def add(self, a: Value | int, b: Value | int) -> Value:
        return self.binary(arith.AddOp, a, b)

    def mul(self, a: Value | int, b: Value | int) -> Value:
        return self.binary(arith.MulOp, a, b)

    def max(self, a: Value | int, b: Value | int) -> Value:
        return self.binary(arith.MaxOp, a, b)

    def min(self, a: Value | int, b: Value | int) -> Value:
        return self.binary(arith.MinOp, a, b)

    def ceil_div(self, a: Value | int, b: Value | int) -> Value:
        """``(a + b - 1) // b`` for ``a >= 0``, ``b > 0``."""
        b_v = self.const(b) if isinstance(b, int) else b
        top = self.add(a, self.add(b_v, -1))
        return self.binary(arith.FloorDivOp, top, b_v)

    def round_up(self, a: Value | int, unit: int) -> Value:
        return self.mul(self.ceil_div(a, unit), unit)

    def product(self, values: Sequence[Value]) -> Value:
        acc = self.const(1)
        for v in values:
            acc = self.mul(acc, v)
        return acc

    def broadcast_dim(self, a: Value, b: Value) -> Value:
        """numpy's broadcast of two extents: ``b`` unless it is 1."""
        is_one = self.insert(arith.CmpOp.new("eq", b, self.const(1))).result
        return self.insert(arith.SelectOp.new(is_one, a, b)).result

    # ---------------------------------------------------------------- shapes
    def dim(self, v: Value, axis: int) -> Value:
        """The extent of axis ``axis`` of a tensor or memref (a constant when static)."""
        t = v.type
        assert isinstance(t, TensorType | MemRefType)
        if t.shape[axis] != DYN:
            return self.const(t.shape[axis])
        cls = tensor.DimOp if isinstance(t, TensorType) else mem.DimOp
        return self.insert(cls([v], [index], {"axis": axis})).result

    def dyn_dims(self, shape: Sequence[int], dims: Sequence[Value]) -> list[Value]:
        """The operands a shaped op needs for the ``?`` entries of ``shape``."""
        return [d for s, d in zip(shape, dims, strict=True) if s == DYN]

    def alloc(self, shape: Sequence[int], elem: ScalarType, dims: Sequence[Value]) -> Value:
        t = MemRefType(tuple(shape), elem)
        return self.insert(mem.AllocOp(self.dyn_dims(shape, dims), [t])).result

    def to_tensor(self, buf: Value) -> Value:
        t = buf.type
        assert isinstance(t, MemRefType)
        return self.insert(mem.ToTensorOp([buf], [t.tensor_type()])).result

    def broadcast(self, v: Value, shape: Sequence[int], elem: ScalarType,
                  dims: Sequence[Value]) -> Value:
        """``np.broadcast_to(v, shape)`` (a no-op view when the shapes already agree)."""
        t = TensorType(tuple(shape), elem)
        return self.insert(tensor.BroadcastOp([v, *self.dyn_dims(shape, dims)], [t])).result

    def extract_scalar(self, v: Value) -> Value:
        """The single element of an all-ones-shaped tensor."""
        t = v.type
        if isinstance(t, ScalarType):
            return v
        assert isinstance(t, TensorType)
        zeros = [self.const(0)] * t.rank
        return self.insert(tensor.ExtractOp([v, *zeros], [t.element])).result

    def launch(self, kernel: str, block_dim: Value, args: Sequence[Value],
               writes: Sequence[int]) -> None:
        self.insert(LaunchOp([block_dim, *args], [], {"kernel": kernel,
                                                      "writes": tuple(writes)}))



class Lowering(Protocol):
    """What the lowering steps (``lower_cube``, ``lower_conv``, ``host_xpose``...) use of
    the driver, ``codegen._Lowering``: the SoC, the host builder, the map from the
    function's values to the host program's, the kernel list and kernel names."""

    soc: SoC
    hb: HostBuilder
    env: dict[Value, Value]
    kernels: list

    def _name(self) -> str: ...
