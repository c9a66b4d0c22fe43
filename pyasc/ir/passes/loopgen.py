"""Loop-level IR emission helpers used by the ``lower-to-loops`` pass.

:class:`LoopGen` wraps a :class:`~pyasc.ir.builder.Builder` and emits, at its insertion
point: index arithmetic folded on constants (so static shapes give clean IR), buffer
allocation, loads and stores, run-time checks (``func.assert``), ``loop.for`` loops with
carried values and loop nests, and numpy broadcasting index maps (:class:`Broadcast`).

Constants are created on demand, deduplicated, and placed at the top of the function's
entry block by :meth:`LoopGen.flush_constants`, so they dominate every use and inserting
them never shifts a saved insertion point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, DenseArray, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.types import (
    DYN,
    MemRefType,
    ScalarType,
    Type,
    contiguous_strides,
    i1,
    index,
)

Body = Callable[[list[Value]], None]
CarriedBody = Callable[[list[Value], list[Value]], list[Value]]


def constant_of(v: Value) -> int | float | bool | None:
    """The Python value of a scalar ``arith.constant`` result, else ``None``."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp):
        value = v.op.value
        return None if isinstance(value, DenseArray) else value  # type: ignore[return-value]
    return None


def static_strides(t: MemRefType) -> tuple[int, ...]:
    """Element strides of ``t`` as far as they are known statically (``DYN`` otherwise)."""
    return t.strides if t.strides is not None else contiguous_strides(t.shape)


def view_type(shape: Sequence[int], element: ScalarType,
              strides: Sequence[int]) -> MemRefType:
    """The memref type of a view; C-contiguous (``strides=None``) when provably so."""
    shape, strides = tuple(shape), tuple(strides)
    if DYN not in strides and strides == contiguous_strides(shape):
        return MemRefType(shape, element)
    return MemRefType(shape, element, strides)


class LoopGen:
    """Emits loop-level ops at ``builder``'s insertion point."""

    def __init__(self, builder: Builder, boundscheck: bool = True) -> None:
        self.b = builder
        self.boundscheck = boundscheck  # index checks of gathers/scatters (the option)
        self._constants: dict[tuple[str, str], Value] = {}
        self._pending: list[Operation] = []
        self._dims: dict[tuple[Value, int], OpResult] = {}

    # -- constants
    def const(self, value: int | float | bool, type_: ScalarType = index) -> Value:
        """A deduplicated scalar constant (placed in the entry block by ``flush``)."""
        key = (type_.name, repr(value))
        if key not in self._constants:
            op = arith.ConstantOp.new(value, type_)
            self._pending.append(op)
            self._constants[key] = op.result
        return self._constants[key]

    def flush_constants(self, entry: Block) -> None:
        """Insert the constants created so far at the top of ``entry``."""
        used = [op for op in self._pending if op.result.uses]
        for i, op in enumerate(used):
            entry.insert(i, op)
        self._pending = []

    def flush_constants_for(self, op: Operation) -> None:
        """Insert the constants created so far at the top of the entry block of the
        function holding ``op`` (for passes that rewrite inside a function)."""
        fn = op
        while not isinstance(fn, func.FuncOp):
            fn = fn.parent.parent_op  # type: ignore[union-attr,assignment]
        self.flush_constants(fn.entry)

    # -- generic emission
    def emit(self, op: Operation) -> Value:
        """Insert ``op`` and return its single result."""
        return self.b.insert(op).result

    def _fold(self, cls: type[Operation], a: Value, b: Value,
              fn: Callable[[int, int], int]) -> Value:
        ca, cb = constant_of(a), constant_of(b)
        if a.type == index and isinstance(ca, int) and isinstance(cb, int):
            return self.const(fn(ca, cb))
        return self.emit(cls.new(a, b))  # type: ignore[attr-defined]

    # -- index arithmetic (folded on constants)
    def add(self, a: Value, b: Value) -> Value:
        if constant_of(a) == 0 and a.type == index:
            return b
        if constant_of(b) == 0 and b.type == index:
            return a
        return self._fold(arith.AddOp, a, b, lambda x, y: x + y)

    def sub(self, a: Value, b: Value) -> Value:
        if constant_of(b) == 0 and b.type == index:
            return a
        return self._fold(arith.SubOp, a, b, lambda x, y: x - y)

    def mul(self, a: Value, b: Value) -> Value:
        for x, y in ((a, b), (b, a)):
            if constant_of(x) == 1 and x.type == index:
                return y
        return self._fold(arith.MulOp, a, b, lambda x, y: x * y)

    def rem(self, a: Value, b: Value) -> Value:
        return self._fold(arith.RemOp, a, b, lambda x, y: x % y)

    def product(self, values: Sequence[Value]) -> Value:
        out = self.const(1)
        for v in values:
            out = self.mul(out, v)
        return out

    def cmp(self, predicate: str, a: Value, b: Value) -> Value:
        ca, cb = constant_of(a), constant_of(b)
        if a is b and predicate in ("eq", "le", "ge") and a.type == index:
            return self.const(True, i1)
        if a.type == index and isinstance(ca, int) and isinstance(cb, int):
            fn = {"eq": ca == cb, "ne": ca != cb, "lt": ca < cb, "le": ca <= cb,
                  "gt": ca > cb, "ge": ca >= cb}
            return self.const(fn[predicate], i1)
        return self.emit(arith.CmpOp.new(predicate, a, b))

    def logical(self, cls: type[Operation], a: Value, b: Value) -> Value:
        """``and``/``or`` of two ``i1`` values, folded when one side is constant."""
        absorbing = cls is arith.OrOp
        for x, y in ((a, b), (b, a)):
            c = constant_of(x)
            if isinstance(c, bool):
                return self.const(absorbing, i1) if c == absorbing else y
        return self.emit(cls.new(a, b))  # type: ignore[attr-defined]

    def all_of(self, conds: Sequence[Value]) -> Value:
        out = self.const(True, i1)
        for c in conds:
            out = self.logical(arith.AndOp, out, c)
        return out

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        c = constant_of(cond)
        if isinstance(c, bool):
            return a if c else b
        if a is b:
            return a
        return self.emit(arith.SelectOp.new(cond, a, b))

    def cast(self, v: Value, to: ScalarType) -> Value:
        return v if v.type == to else self.emit(arith.CastOp.new(v, to))

    # -- buffers
    def dim(self, buf: Value, axis: int) -> Value:
        """Size ``axis`` of ``buf``: a constant, the size operand that made the buffer or
        view, or ``mem.dim``."""
        t = buf.type
        assert isinstance(t, MemRefType)
        if t.shape[axis] != DYN:
            return self.const(t.shape[axis])
        known = _size_operand(buf, axis)
        if known is not None:
            return known
        cached = self._dims.get((buf, axis))
        if cached is not None and encloses(cached.op.parent, self.b.block):
            return cached
        self._dims[(buf, axis)] = dim = self.emit(mem.DimOp([buf], [index], {"axis": axis}))
        return dim

    def dims(self, v: Value) -> list[Value]:
        """Sizes of a memref (``[]`` for a scalar, which broadcasts like a 0-d array)."""
        t = v.type
        return [self.dim(v, a) for a in range(t.rank)] if isinstance(t, MemRefType) else []

    def alloc(self, shape: Sequence[int], element: ScalarType, dims: Sequence[Value],
              name: str | None = None) -> Value:
        """A fresh contiguous buffer of static ``shape``; ``dims`` give every size."""
        dyn = [d for s, d in zip(shape, dims, strict=True) if s == DYN]
        buf = self.emit(mem.AllocOp(dyn, [MemRefType(tuple(shape), element)]))
        buf.name_hint = name
        return buf

    def load(self, buf: Value, idx: Sequence[Value]) -> Value:
        """``buf[idx]``, or ``buf`` itself when it is a scalar (broadcast operand)."""
        if not isinstance(buf.type, MemRefType):
            return buf
        return self.emit(mem.LoadOp([buf, *idx], [buf.type.element]))

    def store(self, value: Value, buf: Value, idx: Sequence[Value]) -> None:
        self.b.insert(mem.StoreOp([value, buf, *idx]))

    def check(self, cond: Value, message: str, kind: str,
              values: Sequence[Value] = ()) -> None:
        """A run-time check, omitted when ``cond`` folds to true; ``values`` fill the
        message template (see ``func.assert``)."""
        if constant_of(cond) is not True:
            self.b.insert(func.AssertOp([cond, *values], [], {"message": message,
                                                              "kind": kind}))

    def checked_index(self, raw: Value, size: Value, axis: int,
                      array: str | None = None, check: bool = True) -> Value:
        """numpy's integer index ``raw`` on an axis of ``size``: negative wraps once; out
        of ``[-size, size)`` is an ``IndexError`` naming the index, the size and
        ``array`` (no check with ``boundscheck=False`` or ``check=False``)."""
        v = self.cast(raw, index)
        if self.boundscheck and check:
            ok = self.cmp("lt", v, size)
            if not raw.type.is_unsigned:
                low = self.cmp("ge", v, self.sub(self.const(0), size))
                ok = self.logical(arith.AndOp, low, ok)
            self.check(ok, func.bounds_message(axis, array), "bounds", [v, size])
        if raw.type.is_unsigned:
            return v
        return self.select(self.cmp("lt", v, self.const(0)), self.add(v, size), v)

    # -- loops
    def for_(self, lower: Value, upper: Value, body: CarriedBody,
             inits: Sequence[Value] = (), step: Value | None = None,
             name: str = "i", names: Sequence[str | None] = ()) -> list[Value]:
        """``loop.for`` from ``lower`` to ``upper``; ``body(iv, carried)`` returns the
        next carried values.  Returns the loop's results; ``names`` are hints for the
        carried values (default: the inits' hints)."""
        op = loop.ForOp.empty(lower, upper, step or self.const(1), list(inits), iv_name=name)
        self.b.insert(op)
        block = op.body.blocks[0]
        hints = list(names) or [v.name_hint for v in inits]
        for arg, r, hint in zip(block.args[1:], op.result_values, hints, strict=True):
            arg.name_hint = r.name_hint = hint
        with self.b.at(block):
            nxt = body([block.args[0]], list(block.args[1:]))
            self.b.insert(loop.YieldOp(list(nxt)))
        return op.result_values

    def if_(self, cond: Value, types: Sequence[Type], then: Callable[[], Sequence[Value]],
            otherwise: Callable[[], Sequence[Value]]) -> list[Value]:
        """``loop.if`` on ``cond`` with results of ``types``; each branch builds its ops
        and returns the values it yields."""
        op = loop.IfOp.empty(cond, list(types))
        self.b.insert(op)
        for region, body in ((op.then_region, then), (op.else_region, otherwise)):
            with self.b.at(region.blocks[0]):
                self.b.insert(loop.YieldOp(list(body())))
        return op.result_values

    def nest_carried(self, dims: Sequence[Value], inits: Sequence[Value],
                     body: CarriedBody, prefix: str = "i",
                     names: Sequence[str | None] = (), parallel: bool = False) -> list[Value]:
        """Loops over ``dims`` (outermost first) carrying ``inits``; static size-1 dims
        get no loop and static size-0 dims skip the nest.  ``parallel`` marks the
        outermost loop (the caller promises independent iterations)."""
        if any(constant_of(d) == 0 for d in dims):
            return list(inits)

        def level(k: int, ivs: list[Value], vals: list[Value], outer: bool) -> list[Value]:
            if k == len(dims):
                return list(body(ivs, vals))
            if constant_of(dims[k]) == 1:
                return level(k + 1, [*ivs, self.const(0)], vals, outer)
            results = self.for_(self.const(0), dims[k],
                                lambda iv, cs: level(k + 1, [*ivs, *iv], cs, False),
                                vals, name=f"{prefix}{k}", names=names)
            if outer and parallel:
                self.b.block.ops[self.b.index - 1].attributes["parallel"] = True
            return results
        return level(0, [], list(inits), True)

    def nest(self, dims: Sequence[Value], body: Body, prefix: str = "i",
             parallel: bool = False) -> None:
        """Loops over ``dims`` with ``body(ivs)`` innermost."""
        def wrapped(ivs: list[Value], _: list[Value]) -> list[Value]:
            body(ivs)
            return []
        self.nest_carried(dims, [], wrapped, prefix, parallel=parallel)

    # -- broadcasting
    def broadcast(self, operands: Sequence[Sequence[Value]], out_shape: Sequence[int],
                  out_dims: Sequence[Value] | None = None,
                  message: str = "operands could not be broadcast together",
                  kind: str = "shape", into: Sequence[Value] | None = None) -> Broadcast:
        """numpy broadcasting of operands with sizes ``operands`` to ``out_shape``.

        ``out_dims`` fixes the output sizes (writes into a buffer); otherwise they are
        computed (static entries of ``out_shape`` win).  Emits one check of ``kind``
        (``shape``; index arrays use ``bounds``, numpy's IndexError); ``into``: the
        destination sizes of a write, named in the message as numpy does."""
        rank = len(out_shape)
        if out_dims is None:
            out_dims = [self._broadcast_dim(operands, rank, a, out_shape[a])
                        for a in range(rank)]
        oks: list[Value] = []
        maps = [self._axis_maps(dims, out_dims, oks) for dims in operands]
        values: list[Value] = []
        if into is None:
            text = "with shapes " + " ".join(shape_template(d, values) for d in operands)
        else:  # a write: numpy names the source and the destination
            text = (f"from shape {shape_template(operands[0], values)} into shape "
                    f"{shape_template(into, values)}")
        self.check(self.all_of(oks), f"{message} {text}", kind, values)
        return Broadcast(list(out_dims), maps)

    def _broadcast_dim(self, operands: Sequence[Sequence[Value]], rank: int, axis: int,
                       static: int) -> Value:
        if static != DYN:
            return self.const(static)
        out = self.const(1)
        for dims in operands:
            k = axis - (rank - len(dims))
            if k >= 0 and constant_of(dims[k]) != 1:
                # numpy: the result takes the size that is not 1
                out = dims[k] if constant_of(out) == 1 else self.select(
                    self.cmp("eq", out, self.const(1)), dims[k], out)
        return out

    def _axis_maps(self, dims: Sequence[Value], out_dims: Sequence[Value],
                   oks: list[Value]) -> list[tuple[int, Value | None]]:
        """Per operand axis: (output axis, condition under which the index is 0)."""
        maps: list[tuple[int, Value | None]] = []
        offset = len(out_dims) - len(dims)
        for k, d in enumerate(dims):
            o = out_dims[k + offset]
            if d is o:  # the output size was taken from this operand
                maps.append((k + offset, None))
                continue
            one = self.cmp("eq", d, self.const(1))
            if constant_of(one) is True or constant_of(o) == 1:
                oks.append(one)  # broadcasting into a size-1 axis needs size 1
                maps.append((k + offset, self.const(True, i1)))
                continue
            oks.append(self.logical(arith.OrOp, self.cmp("eq", d, o), one))
            maps.append((k + offset, None if constant_of(one) is False else one))
        return maps

    def copy(self, src: Value, dst: Value, dst_dims: Sequence[Value] | None = None,
             message: str = "could not broadcast input array",
             parallel: bool = False) -> None:
        """``dst[...] = src`` (a buffer broadcast to ``dst``, or a scalar); ``parallel``
        when ``dst`` cannot overlap ``src``."""
        dims = self.dims(dst) if dst_dims is None else list(dst_dims)
        bc = self.broadcast([self.dims(src)], dst.type.shape, dims, message, into=dims)
        self.nest(dims, lambda ivs: self.store(self.load(src, bc.index(self, 0, ivs)),
                                               dst, ivs), parallel=parallel)


def encloses(outer: Block | None, block: Block | None) -> bool:
    """True if ``block`` is ``outer`` or nested in it (values of ``outer`` defined
    before the insertion point are then visible)."""
    while block is not None:
        if block is outer:
            return True
        op = block.parent_op
        block = op.parent if op is not None else None
    return False


def _size_operand(buf: Value, axis: int) -> Value | None:
    """The operand giving dynamic size ``axis`` of an alloc, reshape or subview result."""
    if not isinstance(buf, OpResult):
        return None
    op = buf.op
    if isinstance(op, mem.AllocOp | mem.ReshapeOp):
        dyn_axes = [a for a, d in enumerate(buf.type.shape) if d == DYN]
        dims = op.operand_values[1:] if isinstance(op, mem.ReshapeOp) else op.operand_values
        return dims[dyn_axes.index(axis)]
    if isinstance(op, mem.SubviewOp):
        drop = op.attributes.get("drop", ())
        kept = [a for a in range(op.source.type.rank) if a not in drop]
        return op.parts()[1][kept[axis]]
    return None


def shape_template(dims: Sequence[Value], values: list[Value]) -> str:
    """numpy's text of a shape, ``(3, {0})``: static sizes as numbers, run-time sizes
    as ``func.assert`` placeholders whose values are appended to ``values`` (so the
    message of a failed check names the actual shapes)."""
    sizes: list[str] = []
    for d in dims:
        c = constant_of(d)
        if c is None:
            sizes.append(f"{{{len(values)}}}")
            values.append(d)
        else:
            sizes.append(str(c))
    return "(" + ",".join(sizes) + ("," if len(sizes) == 1 else "") + ")"


@dataclass
class Broadcast:
    """Output sizes and, per operand axis, how an output position indexes it."""

    out_dims: list[Value]
    maps: list[list[tuple[int, Value | None]]]

    def index(self, gen: LoopGen, k: int, ivs: Sequence[Value]) -> list[Value]:
        """Indices into operand ``k`` for the output position ``ivs``."""
        out: list[Value] = []
        for axis, zero_if in self.maps[k]:
            iv = ivs[axis]
            out.append(iv if zero_if is None else gen.select(zero_if, gen.const(0), iv))
        return out
