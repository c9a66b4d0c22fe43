"""The ops the gradient rules build, behind short names (``em.mul(a, b)``).

:class:`GradEmitter` wraps a :class:`~pyasc.ir.builder.Builder` placed in the backward
function.  Every helper takes and returns SSA values; shapes may hold ``?`` dims (the
run-time sizes come from ``tensor.dim`` / ``mem.dim``).  :meth:`GradEmitter.fit` is the
one place that undoes broadcasting: an adjoint computed at the broadcast shape of an
elementwise op is summed over the broadcast axes down to the operand's shape.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, math, mem, tensor
from pyasc.ir.types import (
    DYN,
    MemRefType,
    ScalarType,
    TensorType,
    Type,
    element_type,
    index,
    shape_of,
)


class GradEmitter:
    """Builds the backward's ops at the builder's insertion point."""

    def __init__(self, b: Builder) -> None:
        self.b = b

    def op(self, op: Operation) -> Value:
        """Insert ``op`` and return its single result."""
        return self.b.insert(op).result

    # -- constants and casts
    def const(self, value: float | int | bool, t: ScalarType) -> Value:
        return self.op(arith.ConstantOp.new(value, t))

    def index(self, value: int) -> Value:
        return self.const(value, index)

    def scalar_like(self, value: float, like: Value) -> Value:
        """A scalar constant of ``like``'s element type."""
        return self.const(value, element_type(like.type))

    def cast(self, v: Value, to: ScalarType) -> Value:
        return v if element_type(v.type) == to else self.op(arith.CastOp.new(v, to))

    # -- elementwise
    def add(self, a: Value, b: Value) -> Value:
        return self.op(arith.AddOp.new(a, b))

    def sub(self, a: Value, b: Value) -> Value:
        return self.op(arith.SubOp.new(a, b))

    def mul(self, a: Value, b: Value) -> Value:
        return self.op(arith.MulOp.new(a, b))

    def div(self, a: Value, b: Value) -> Value:
        return self.op(arith.DivOp.new(a, b))

    def neg(self, a: Value) -> Value:
        return self.op(arith.NegOp.new(a))

    def unary(self, cls: type[Operation], a: Value) -> Value:
        return self.op(cls.new(a))  # type: ignore[attr-defined]

    def exp(self, a: Value) -> Value:
        return self.op(math.ExpOp.new(a))

    def log(self, a: Value) -> Value:
        return self.op(math.LogOp.new(a))

    def pow(self, a: Value, b: Value) -> Value:
        return self.op(math.PowOp.new(a, b))

    def cmp(self, predicate: str, a: Value, b: Value) -> Value:
        return self.op(arith.CmpOp.new(predicate, a, b))

    def select(self, c: Value, a: Value, b: Value) -> Value:
        return self.op(arith.SelectOp.new(c, a, b))

    def scale(self, a: Value, k: float) -> Value:
        """``a * k`` for a Python number ``k``."""
        return self.mul(a, self.scalar_like(k, a))

    # -- shapes
    def dims(self, v: Value) -> list[Value]:
        """The dynamic-dim operands describing ``v``'s shape (one per ``?``)."""
        t = v.type
        dim_op = mem.DimOp if isinstance(t, MemRefType) else tensor.DimOp
        return [self.op(dim_op([v], [index], {"axis": a}))
                for a, d in enumerate(shape_of(t)) if d == DYN]

    def zeros(self, t: Type, like: Value | None = None) -> Value:
        """Zeros of type ``t`` (a scalar or a tensor; ``like`` gives its ``?`` dims)."""
        zero = self.const(0.0 if element_type(t).is_float else 0, element_type(t))
        if isinstance(t, ScalarType):
            return zero
        dims = self.dims(like) if like is not None else []
        return self.op(tensor.FillOp.new(zero, TensorType(t.shape, t.element), dims))

    def reshape(self, v: Value, shape: Sequence[int], like: Value | None = None,
                dims: Sequence[Value] | None = None) -> Value:
        if shape_of(v.type) == tuple(shape) and isinstance(v.type, TensorType):
            return v
        if not shape:  # to a scalar: every dim is 1
            return self.op(tensor.ExtractOp([v, *[self.index(0)] * len(v.type.shape)],
                                            [element_type(v.type)]))
        if isinstance(v.type, ScalarType):
            v = self.op(tensor.FillOp.new(v, TensorType((1,) * len(shape), v.type)))
        if dims is None:
            dims = self.dims(like) if like is not None else []
        return self.op(tensor.ReshapeOp([v, *dims], [TensorType(tuple(shape),
                                                                element_type(v.type))]))

    def broadcast(self, v: Value, t: TensorType, like: Value | None = None) -> Value:
        if v.type == t:
            return v
        dims = self.dims(like) if like is not None else []
        return self.op(tensor.BroadcastOp([v, *dims], [t]))

    def transpose(self, v: Value, perm: Sequence[int]) -> Value:
        if tuple(perm) == tuple(range(len(perm))):
            return v
        t = v.type
        assert isinstance(t, TensorType)
        shape = tuple(t.shape[p] for p in perm)
        return self.op(tensor.TransposeOp([v], [TensorType(shape, t.element)],
                                          {"perm": tuple(perm)}))

    def sum(self, v: Value, axes: Sequence[int], keepdims: bool = False) -> Value:
        if not axes:
            return v
        return self.op(tensor.SumOp.new(v, sorted(axes), keepdims))

    def fit(self, g: Value, target: Value) -> Value:
        """``g`` (an adjoint at a broadcast shape) summed and reshaped to ``target``'s
        type: leading axes and axes where ``target`` has size 1 are summed (also where
        that size is known only at run time: :meth:`_fit_dynamic`)."""
        t = target.type
        g = self.cast(g, element_type(t))
        gshape, tshape = shape_of(g.type), shape_of(t)
        if gshape == tshape and DYN not in tshape:
            return g
        if isinstance(g.type, ScalarType) and isinstance(t, TensorType | MemRefType):
            return self.op(tensor.FillOp.new(g, TensorType(tshape, t.element),
                                             self.dims(target)))
        if len(gshape) < len(tshape) or _broadcasts(gshape, tshape):
            tt = TensorType(tshape, element_type(t))
            padded = self.reshape(g, _padded(gshape, len(tshape)), like=g)
            return self.broadcast(padded, tt, target)
        lead = len(gshape) - len(tshape)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(tshape)
                                    if d == 1 and gshape[lead + i] != 1]
        # Same rank: keep the summed dims.  A row sum then stays row-shaped (64x1), the
        # form the fusion pass's row schedule fuses back into the row's elementwise
        # work; summing them away and reshaping back (64 -> 64x1) split the kernel.
        g = self.sum(g, axes, keepdims=lead == 0)
        if not _same(shape_of(g.type), tshape):
            g = self.reshape(g, tshape, target)
        dyn = [a for a, d in enumerate(tshape) if d == DYN and shape_of(g.type)[a] != 1]
        return self._fit_dynamic(g, target, dyn) if dyn else g

    def _fit_dynamic(self, g: Value, target: Value, axes: list[int]) -> Value:
        """Along each axis whose size is known only at run time, ``target`` may have
        size 1 where ``g`` has n (a run-time broadcast): then ``g`` is summed along it.
        Computed as a select, then a slice to ``target``'s run-time shape."""
        zero, one = self.index(0), self.index(1)
        for a in axes:
            summed = self.sum(g, [a], keepdims=True)
            spread = self.broadcast(summed, g.type, like=g)  # type: ignore[arg-type]
            cond = self.op(arith.AndOp.new(self.cmp("eq", self.size(target, a), one),
                                           self.cmp("ne", self.size(g, a), one)))
            g = self.select(cond, spread, g)
        rank = len(shape_of(target.type))
        sizes = [self.size(target, a) for a in range(rank)]
        return self.op(tensor.SliceOp([g, *[zero] * rank, *sizes, *[one] * rank],
                                      [TensorType(shape_of(target.type),
                                                  element_type(g.type))]))

    def size(self, v: Value, axis: int) -> Value:
        """The size of ``v`` along ``axis`` as an ``index`` (a constant when static)."""
        n = shape_of(v.type)[axis]
        if n != DYN:
            return self.index(n)
        dim_op = mem.DimOp if isinstance(v.type, MemRefType) else tensor.DimOp
        return self.op(dim_op([v], [index], {"axis": axis}))

    def accumulate(self, acc: Value | None, g: Value) -> Value:
        return g if acc is None else self.add(acc, g)

    # -- buffers
    def buffer(self, t: Type, like: Value | None = None, zero: bool = True) -> Value:
        """A fresh contiguous buffer of ``t``'s shape (zero-filled unless ``zero`` is
        false); ``like`` gives its ``?`` dims."""
        shape = shape_of(t)
        buf = self.op(mem.AllocOp(self.dims(like) if like is not None else [],
                                  [MemRefType(shape, element_type(t))]))
        if zero:
            self.b.insert(mem.FillOp([self.const(0.0, element_type(t)), buf]))
        return buf

    def read(self, buf: Value) -> Value:
        t = buf.type
        assert isinstance(t, MemRefType)
        return self.op(mem.ToTensorOp([buf], [t.tensor_type()]))

    def write(self, value: Value, buf: Value) -> None:
        self.b.insert(mem.WriteOp([value, buf]))

    def add_into(self, buf: Value, g: Value) -> None:
        """``buf[...] += g`` (``g`` has the buffer's shape or broadcasts to it)."""
        self.write(self.add(self.read(buf), g), buf)


def _same(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return len(a) == len(b) and all(x == y or DYN in (x, y) for x, y in zip(a, b, strict=True))


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _broadcasts(g: tuple[int, ...], t: tuple[int, ...]) -> bool:
    """``g`` is smaller than ``t`` (it broadcasts up to it) rather than larger."""
    if len(g) != len(t):
        return False
    return any(a == 1 and b != 1 for a, b in zip(g, t, strict=True)) and not any(
        b == 1 and a != 1 for a, b in zip(g, t, strict=True))
