"""The emitter: the frontend's single point of IR construction.

It owns the :class:`~pyasc.ir.builder.Builder` (insertion point + current location) and
offers value-level helpers: materializing compile-time numbers as constants, casts,
reading buffers as tensors, shapes with dynamic dims, fills, broadcasts and reshapes.

Reading a buffer (``mem.to_tensor``) is cached per insertion block until the next write
to any buffer: a write through any alias bumps :attr:`Emitter.epoch`, which invalidates
every cached snapshot, so a snapshot never crosses a write.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyasc.errors import TypeMismatchError
from pyasc.failures import raise_kind
from pyasc.frontend.promotion import check_fits, element_of, is_weak
from pyasc.frontend.values import Buffer, Dim, Scalar, Tensor, is_number, static_dims
from pyasc.ir.builder import Builder
from pyasc.ir.core import DenseArray, Operation, Value
from pyasc.ir.ops import arith, func, mem, tensor
from pyasc.ir.types import (
    DYN,
    MemRefType,
    ScalarType,
    TensorType,
    i1,
    index,
    scalar_from_numpy,
)

_INT64 = np.iinfo(np.int64)  # a run-time Python int is an int64 (``index``)


class Emitter:
    """Builds IR for one specialization (shared by inlined callees)."""

    def __init__(self, builder: Builder, options: dict[str, object]) -> None:
        self.b = builder
        self.options = options
        self.epoch = 0
        self._snapshots: dict[Value, tuple[int, object, Tensor]] = {}

    # -- raw insertion
    def op(self, op: Operation) -> Operation:
        """Insert ``op`` at the insertion point with the current location."""
        return self.b.insert(op)

    def result(self, op: Operation) -> Value:
        return self.op(op).result

    def wrote(self) -> None:
        """Record a write to some buffer: cached buffer reads are now stale."""
        self.epoch += 1

    # -- scalars
    def const(self, value: object, t: ScalarType) -> Scalar:
        """A constant of type ``t`` (``index`` constants are weak ints with bounds)."""
        v = self.result(arith.ConstantOp.new(value, t))
        if t == index:
            return Scalar(v, weak=True, lo=int(value), hi=int(value))  # type: ignore[arg-type]
        return Scalar(v)

    def scalar(self, v: object, t: ScalarType | None = None) -> Scalar:
        """``v`` (a compile-time number or a Scalar) as a run-time scalar of type ``t``."""
        if isinstance(v, Scalar):
            return v if t is None or v.type == t else self.cast_scalar(v, t)
        if not is_number(v) and not hasattr(v, "dtype"):
            raise TypeMismatchError(f"expected a number, got {type(v).__name__}")
        target = t or element_of(v)
        check_fits(v, target)
        s = self.const(_py(v), target)
        s.weak = s.weak or (is_weak(v) and t is None)
        return s

    def check_fits(self, v: object, t: ScalarType) -> None:
        """NEP 50: a Python int converted to the integer type ``t`` must fit it, or
        numpy raises ``OverflowError``: compile-time ints are checked now, run-time
        ones (weak ``index`` scalars) by a check where they are converted, unless
        their known bounds already fit."""
        if not isinstance(v, Scalar):
            check_fits(v, t)
            return
        if not (v.weak and v.type == index and t.is_int and t not in (i1, index)):
            return
        info = np.iinfo(t.to_numpy())
        low, high = max(info.min, _INT64.min), min(info.max, _INT64.max)
        conds = [self.result(arith.CmpOp.new(pred, v.value, self.const(bound, index).value))
                 for pred, bound, known in (("ge", low, v.lo), ("le", high, v.hi))
                 if bound not in (_INT64.min, _INT64.max)
                 and (known is None or not low <= known <= high)]
        if not conds:
            return
        ok = conds[0] if len(conds) == 1 else self.result(arith.AndOp.new(*conds))
        self.op(func.AssertOp([ok, v.value], [], {
            "message": f"Python integer {{0}} out of bounds for {t.to_numpy()}",
            "kind": raise_kind("OverflowError", ["py:int"])}))

    def element(self, v: object, t: ScalarType) -> Scalar | Tensor:
        """A scalar ``v`` (number, Scalar or 0-d array) as an element of an array of
        type ``t``, as numpy's setitem and fill convert it: unsafely, except that a
        Python int must fit an integer ``t`` (numpy 2's ``OverflowError``; checked at
        compile or run time)."""
        self.check_fits(v, t)
        return self.cast(v if isinstance(v, Scalar | Tensor) else self.scalar(v, t), t)

    def cast_scalar(self, s: Scalar, t: ScalarType) -> Scalar:
        """``s`` converted to ``t`` (strong, except ``index`` which is always weak)."""
        if s.type == t:
            return s
        out = Scalar(self.result(arith.CastOp.new(s.value, t)), weak=t == index)
        if t == index and s.type.is_int:
            out.lo, out.hi = s.lo, s.hi
        return out

    # -- arrays
    def value(self, v: object) -> Scalar | Tensor:
        """A value operand: buffers are read (snapshot), numbers materialized."""
        if isinstance(v, Buffer):
            return self.snapshot(v)
        if isinstance(v, Scalar | Tensor):
            return v
        return self.scalar(v)

    def operand(self, v: object) -> object:
        """``v`` as an operand of a numpy operation: buffers are read, numpy scalars and
        (nested) sequences of numbers become constants; Python numbers stay weak."""
        if isinstance(v, Buffer):
            return self.snapshot(v)
        if isinstance(v, Scalar | Tensor) or is_number(v):
            return v
        if isinstance(v, np.generic):
            return self.scalar(v)
        if isinstance(v, tuple | list) and any(isinstance(x, Scalar | Tensor | Buffer)
                                               for x in _flat(v)):
            return self.sequence_array(v)
        if isinstance(v, np.ndarray | tuple | list):
            return self.constant_array(v)
        raise TypeMismatchError(f"unsupported operand of type {type(v).__name__}")

    def sequence_array(self, v: tuple | list) -> Tensor:
        """``np.asarray(v)`` for a (nested) tuple or list holding run-time scalars (a
        tuple or list argument used as an array): numpy's rules, so Python ``int``,
        ``float`` and ``bool`` items count as int64, float64 and bool (not weakly)."""
        items = _flat(v)
        if any(isinstance(x, Tensor | Buffer) for x in items):
            raise TypeMismatchError(f"cannot make an array from a {type(v).__name__} of "
                                    "arrays", hint="use np.stack(...)")
        shape = _rectangular(v)
        t = scalar_from_numpy(np.result_type(*[_discovered(x) for x in items]))
        buf = self.alloc(shape, t)
        for pos, x in zip(np.ndindex(*shape), items, strict=True):
            s = self.scalar(x, t)
            where = [self.const(i, index).value for i in pos]
            self.op(mem.StoreOp([s.value, buf.value, *where]))
        self.wrote()
        return self.snapshot(buf)

    def constant_array(self, v: object) -> Tensor:
        """A dense constant tensor for a compile-time array or sequence of numbers."""
        try:
            arr = np.asarray(v)
            t = TensorType(arr.shape, scalar_from_numpy(arr.dtype))
        except (TypeError, ValueError) as exc:
            raise TypeMismatchError(f"cannot use {type(v).__name__} as an array: {exc}",
                                    hint="use numbers or arrays") from None
        if arr.ndim == 0:
            raise TypeMismatchError("expected an array")
        op = arith.ConstantOp.new(DenseArray(arr, t), t)
        return Tensor(self.result(op), tuple(arr.shape))

    def snapshot(self, buf: Buffer) -> Tensor:
        """``mem.to_tensor``: the buffer's contents now, as a value."""
        cached = self._snapshots.get(buf.value)
        if cached is not None and cached[0] == self.epoch and cached[1] is self.b.block:
            return cached[2]
        t = Tensor(self.result(mem.ToTensorOp([buf.value], [buf.type.tensor_type()])),
                   buf.dims)
        self._snapshots[buf.value] = (self.epoch, self.b.block, t)
        return t

    def cast(self, v: Scalar | Tensor, t: ScalarType) -> Scalar | Tensor:
        """Element-type conversion (numpy ``astype``)."""
        if isinstance(v, Scalar):
            return self.cast_scalar(v, t)
        if v.type.element == t:
            return v
        return Tensor(self.result(arith.CastOp.new(v.value, t)), v.dims)

    def dims(self, v: Tensor | Buffer) -> tuple[Dim, ...]:
        """Each dimension as an ``int`` or an index Scalar (``dim`` ops when unknown)."""
        if v.dims is not None:
            return v.dims
        op_cls = mem.DimOp if isinstance(v, Buffer) else tensor.DimOp
        return tuple(
            d if d != DYN else Scalar(self.result(op_cls([v.value], [index], {"axis": a})),
                                      weak=True, lo=0)
            for a, d in enumerate(v.type.shape))

    def dim_values(self, dims: Sequence[Dim]) -> list[Value]:
        """The ``dims*`` operands for a shaped result: one index value per ``?``."""
        return [d.value for d in dims if not isinstance(d, int)]

    def fill(self, value: Scalar, dims: Sequence[Dim]) -> Tensor:
        t = TensorType(static_dims(tuple(dims)), value.type)
        op = tensor.FillOp.new(value.value, t, self.dim_values(dims))
        return Tensor(self.result(op), tuple(dims))

    def broadcast(self, v: Scalar | Tensor, dims: Sequence[Dim]) -> Tensor:
        """``np.broadcast_to``; a no-op when the shape already matches."""
        dims = tuple(dims)
        if isinstance(v, Tensor) and v.type.shape == static_dims(dims) and \
                v.type.is_static:
            return v
        elem = v.type if isinstance(v, Scalar) else v.type.element
        t = TensorType(static_dims(dims), elem)
        op = tensor.BroadcastOp([v.value, *self.dim_values(dims)], [t])
        return Tensor(self.result(op), dims)

    def reshape(self, v: Tensor, dims: Sequence[Dim]) -> Tensor:
        dims = tuple(dims)
        t = TensorType(static_dims(dims), v.type.element)
        if t == v.type and t.is_static:
            return v
        op = tensor.ReshapeOp([v.value, *self.dim_values(dims)], [t])
        return Tensor(self.result(op), dims)

    def alloc(self, dims: Sequence[Dim], elem: ScalarType) -> Buffer:
        t = MemRefType(static_dims(tuple(dims)), elem)
        return Buffer(self.result(mem.AllocOp(self.dim_values(dims), [t])), tuple(dims))

    def write(self, value: Scalar | Tensor, dest: Buffer) -> None:
        """``dest[...] = value`` (value already of dest's element type)."""
        if isinstance(value, Scalar):
            self.op(mem.FillOp([value.value, dest.value]))
        else:
            self.op(mem.WriteOp([value.value, dest.value]))
        self.wrote()

    def store_new(self, v: Tensor) -> Buffer:
        """A new buffer holding ``v``.  A value made by a fill (``np.zeros_like``...) is
        filled in place with ``mem.fill`` (the unused ``tensor.fill`` is left to DCE)."""
        dims = self.dims(v)
        owner = getattr(v.value, "op", None)
        buf = self.alloc(dims, v.type.element)
        if isinstance(owner, tensor.FillOp):
            self.op(mem.FillOp([owner.value, buf.value]))
        else:
            self.op(mem.WriteOp([v.value, buf.value]))
        self.wrote()
        return buf


def _flat(v: object) -> list[object]:
    """The leaves of a nested tuple/list, in C order."""
    if isinstance(v, tuple | list):
        return [x for item in v for x in _flat(item)]
    return [v]


def _rectangular(v: object) -> tuple[int, ...]:
    """The shape of a nested tuple/list, which must be rectangular (as numpy requires)."""
    if not isinstance(v, tuple | list):
        return ()
    shapes = {_rectangular(item) for item in v}
    if len(shapes) > 1 or any(isinstance(item, tuple | list) for item in v) and \
            not all(isinstance(item, tuple | list) for item in v):
        raise TypeMismatchError(f"cannot make an array from a ragged {type(v).__name__} "
                                "(items of different lengths or kinds)",
                                hint="numpy needs nested sequences of equal lengths")
    return (len(v), *(shapes.pop() if shapes else ()))


def _discovered(v: object) -> np.dtype:
    """The dtype numpy gives ``v`` inside ``np.asarray([... v ...])``."""
    if isinstance(v, Scalar):
        return np.dtype(np.int64) if v.type == index else v.type.to_numpy()
    if not is_number(v) and not isinstance(v, np.generic):
        raise TypeMismatchError(f"cannot make an array from a sequence holding a "
                                f"{type(v).__name__}", hint="use numbers or arrays")
    return np.asarray(v).dtype


def _py(v: object) -> object:
    """numpy scalars to Python numbers (attribute values are Python objects)."""
    return v.item() if hasattr(v, "item") else v
