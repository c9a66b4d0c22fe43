"""The batched form of a loop ``batch_analysis`` accepted (see ``batch_loops``).

Emitted in front of the loop, op by op in body order: invariant ops are cloned once;
``x[i]`` views become ``x[lo:lo+n]`` (axis 0 kept); element loads and stores at
``(i, j...)`` become length-``n`` column views; row-dependent values get a leading axis
of ``n`` (a scalar becomes ``(n, 1, ..., 1)``, reductions keep their dims so it stays
one); writes go to the batched view.  ``n = max(hi - lo, 0)``.
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.passes.batch_analysis import (
    AFF,
    BAT,
    INV,
    REDUCTIONS,
    ROW,
    Batch,
)
from pyasc.ir.passes.batch_nest import constant_int, trip_count
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, contiguous_strides, index


class _Builder:
    def __init__(self, b: Batch, for_op: loop.ForOp) -> None:
        self.batch = b
        self.b = Builder.before(for_op)
        self.map: dict[Value, Value] = {}
        # snapshots of batched views since the last write: one read of ``x[i]`` serves
        # every ``x[i]`` of the body (else the kernel would load the rows twice)
        self.snapshots: dict[Value, Value] = {}
        self.views: dict[tuple, Value] = {}
        # batched views of rows with kept unit axes: how many (``x[i:i + 1]``: 1)
        self.unit_rows: dict[Value, int] = {}
        self._extents: list[tuple[Value, Value]] = []

    def extent(self, k: int) -> tuple[Value, Value]:
        """``(lo, n)`` of batch axis ``k``, emitted on first use (inner bounds may be
        computed by invariant ops of the outer levels, emitted before)."""
        while len(self._extents) <= k:
            lp = self.batch.loops[len(self._extents)]
            lo, hi = self.get(lp.lower), self.get(lp.upper)
            static = trip_count(lp)
            if static is not None:
                n = self.const(static)
            else:
                diff = self.b.insert(arith.SubOp([hi, lo], [index])).result
                n = self.b.insert(arith.MaxOp([diff, self.const(0)], [index])).result
            self._extents.append((lo, n))
        return self._extents[k]

    def static(self, k: int) -> int:
        n = trip_count(self.batch.loops[k])
        return DYN if n is None else n

    def offset(self, k: int, c: int) -> Value:
        lo = self.extent(k)[0]
        return lo if c == 0 else self.b.insert(arith.AddOp([lo, self.const(c)], [index])).result

    def const(self, value: int) -> Value:
        return self.b.insert(arith.ConstantOp.new(value, index)).result

    def lead(self) -> tuple[int, ...]:
        return tuple(self.static(k) for k in range(self.batch.axes))

    def dims(self, t: TensorType) -> list[Value]:
        """The dynamic-dim operands of a batched type (its leading axes are batch axes)."""
        return [self.extent(k)[1] for k, d in enumerate(t.shape[:self.batch.axes])
                if d == DYN]

    def batched(self, v: Value) -> TensorType:
        """The type of the batched form of an iteration-dependent value."""
        t = v.type
        if isinstance(t, TensorType):
            return TensorType((*self.lead(), *t.shape), t.element)
        assert isinstance(t, ScalarType)
        return TensorType(self.lead() + (1,) * self.batch.rank, t)

    def get(self, v: Value) -> Value:
        return self.map.get(v, v)


def _view_type(src: MemRefType, shape: tuple[int, ...], axes: list[int],
               steps: list[Value], contiguous: bool) -> MemRefType:
    if contiguous and src.is_contiguous:
        return MemRefType(shape, src.element)
    base = src.strides if src.strides is not None else contiguous_strides(src.shape)
    strides = []
    for a in axes:
        step = constant_int(steps[a])
        strides.append(DYN if base[a] == DYN or step is None else base[a] * step)
    if DYN not in strides and tuple(strides) == contiguous_strides(shape):
        return MemRefType(shape, src.element)
    return MemRefType(shape, src.element, tuple(strides))


def _full(src: Value, axis: int, offset: Value, size: Value, step: Value) -> bool:
    """Whether a view takes all of ``src``'s axis ``axis`` with unit steps."""
    if constant_int(offset) != 0 or constant_int(step) != 1:
        return False
    dim = src.type.shape[axis]  # type: ignore[attr-defined]
    if dim != DYN:
        return constant_int(size) == dim
    return isinstance(size, OpResult) and isinstance(size.op, mem.DimOp) and \
        size.op.operand_values[0] is src and size.op.attributes["axis"] == axis


def _rows_view(bb: _Builder, op: mem.SubviewOp) -> Value:
    """``x[i, ...]`` -> ``x[lo:lo+n, ...]`` (``x[i, j, ...]`` in a nest: one kept axis
    per batch axis)."""
    src = bb.get(op.source)
    offsets, sizes, steps = ([bb.get(v) for v in part] for part in op.parts())
    axes_n = bb.batch.axes
    drop = [a for a in op.attributes.get("drop", ()) if a >= axes_n]
    row = op.result.type
    assert isinstance(row, MemRefType) and isinstance(src.type, MemRefType)
    # a batch axis kept with size 1 (``x[i:i + 1]``) is the batch axis itself here: its
    # snapshots and writes reshape (``unit_rows``)
    kept = sum(a not in op.attributes.get("drop", ()) for a in range(axes_n))
    shape = (*bb.lead(), *row.shape[kept:])
    axes = [a for a in range(src.type.rank) if a not in drop]
    # (with two batch axes the inner one may be a part of its axis: strides decide)
    contiguous = axes_n == 1 and not drop and \
        all(_full(src, a, offsets[a], sizes[a], steps[a]) for a in range(1, src.type.rank))
    t = _view_type(src.type, shape, axes, steps, contiguous)
    lead = [bb.batch.affine[v] for v in op.parts()[0][:axes_n]]
    operands = [src, *(bb.offset(k, c) for k, c in lead), *offsets[axes_n:],
                *(bb.extent(k)[1] for k in range(axes_n)), *sizes[axes_n:], *steps]
    key = (*operands, tuple(drop))
    if key not in bb.views:  # x[i] twice in the body is one view (and one snapshot)
        attrs = {"drop": tuple(drop)} if drop else {}
        bb.views[key] = bb.b.insert(mem.SubviewOp(operands, [t], attrs, loc=op.loc)).result
    if kept:
        bb.unit_rows[bb.views[key]] = kept
    return bb.views[key]


def _element_view(bb: _Builder, buf: Value, indices: list[Value], op: Operation) -> Value:
    """The elements a load or store at ``(i_k + c, j...)`` touches over the batch: a
    view with one axis per batch axis the access uses (invariant axes dropped)."""
    t = buf.type
    assert isinstance(t, MemRefType)
    one = bb.const(1)
    pattern = [bb.batch.affine.get(v) for v in indices]
    offsets = [bb.offset(*p) if p else bb.get(v)
               for p, v in zip(pattern, indices, strict=True)]
    sizes = [bb.extent(p[0])[1] if p else one for p in pattern]
    axes = [a for a, p in enumerate(pattern) if p]
    shape = tuple(bb.static(pattern[a][0]) for a in axes)  # type: ignore[index]
    vt = _view_type(t, shape, axes, [one] * t.rank, False)
    drop = tuple(a for a, p in enumerate(pattern) if not p)
    attrs = {"drop": drop} if drop else {}
    return bb.b.insert(mem.SubviewOp([buf, *offsets, *sizes, *[one] * t.rank], [vt], attrs,
                                     loc=op.loc)).result


def _reshape(bb: _Builder, v: Value, shape: tuple[int, ...], loc) -> Value:
    t = TensorType(shape, v.type.element)  # type: ignore[attr-defined]
    if t == v.type:
        return v
    return bb.b.insert(tensor.ReshapeOp([v, *bb.dims(t)], [t], loc=loc)).result


def _unit_reshape(bb: _Builder, v: Value, shape: tuple[int, ...], kept: int,
                  insert: bool, loc) -> Value:  # noqa: ANN001
    """``v`` with ``kept`` unit axes inserted after the batch axes (``insert``: a row
    with kept unit axes from its batched view) or removed there (the other way), as a
    tensor of ``shape``."""
    t = TensorType(shape, v.type.element)  # type: ignore[attr-defined]
    if t == v.type:
        return v
    at = bb.batch.axes
    dims = []
    for a, d in enumerate(shape):
        if d != DYN:
            continue
        if insert and at <= a < at + kept:
            dims.append(bb.const(1))  # (a size of 1 that the row's type does not say)
            continue
        src = a if a < at else (a - kept if insert else a + kept)
        dims.append(bb.b.insert(tensor.DimOp([v], [index], {"axis": src}, loc=loc)).result)
    return bb.b.insert(tensor.ReshapeOp([v, *dims], [t], loc=loc)).result


def _load(bb: _Builder, op: Operation) -> None:
    assert isinstance(op, mem.LoadOp)
    view = _element_view(bb, bb.get(op.source), list(op.indices), op)
    col = view.type.tensor_type()  # type: ignore[attr-defined]
    v = bb.b.insert(mem.ToTensorOp([view], [col], loc=op.loc)).result
    used = {bb.batch.affine[i][0] for i in op.indices if i in bb.batch.affine}
    lead = tuple(d if k in used else 1 for k, d in enumerate(bb.lead()))
    v = _reshape(bb, v, lead + (1,) * bb.batch.rank, op.loc)
    if len(used) < bb.batch.axes:
        # w[c, di, dj] in a loop over (c, i, j): spread over (i, j) by the host, since a
        # vector kernel takes arrays of its whole space, rows, columns or scalars only
        t = TensorType(bb.lead() + (1,) * bb.batch.rank, v.type.element)  # type: ignore
        v = bb.b.insert(tensor.BroadcastOp([v, *bb.dims(t)], [t], loc=op.loc)).result
    bb.map[op.result] = v


def _store(bb: _Builder, op: Operation) -> None:
    assert isinstance(op, mem.StoreOp)
    view = _element_view(bb, bb.get(op.dest), list(op.indices), op)
    value = bb.get(op.value)
    if bb.batch.kind(op.value) == BAT:
        value = _reshape(bb, value, bb.lead(), op.loc)
    bb.b.insert(mem.WriteOp([value, view], loc=op.loc))
    bb.snapshots.clear()


def _reduce(bb: _Builder, op: Operation) -> None:
    new = op.clone(bb.map)
    new.attributes["axes"] = tuple(a + bb.batch.axes for a in op.attributes["axes"])
    new.attributes["keepdims"] = True
    new.result.type = bb.batched(op.result)
    bb.map[op.result] = new.result
    bb.b.insert(new)


def _elementwise(bb: _Builder, op: Operation) -> None:
    new = op.clone(bb.map)
    new.result.type = bb.batched(op.result)
    bb.b.insert(new)


def _emit(bb: _Builder, op: Operation) -> None:
    kind = bb.batch.kind(op.result_values[0]) if op.result_values else INV
    if kind == AFF:
        return  # index arithmetic on the loop indices: folded into the views
    if isinstance(op, mem.SubviewOp) and kind == ROW:
        bb.map[op.result] = _rows_view(bb, op)
    elif isinstance(op, mem.LoadOp) and kind == BAT:
        _load(bb, op)
    elif isinstance(op, mem.StoreOp):
        _store(bb, op)
    elif isinstance(op, REDUCTIONS) and kind == BAT:
        _reduce(bb, op)
    elif kind == BAT and not isinstance(op, mem.ToTensorOp):
        _elementwise(bb, op)
    elif kind == BAT:
        _snapshot(bb, op)
    elif isinstance(op, mem.WriteOp) and bb.get(op.dest) in bb.unit_rows and \
            bb.batch.kind(op.value) == BAT:
        view = bb.get(op.dest)  # the row's kept unit axes are not the view's
        value = _unit_reshape(bb, bb.get(op.value), view.type.shape,  # type: ignore[attr-defined]
                              bb.unit_rows[view], False, op.loc)
        bb.b.insert(mem.WriteOp([value, view], loc=op.loc))
        bb.snapshots.clear()
    else:  # invariant ops, writes into batched views and snapshots of them
        if op.has_trait("writes"):
            bb.snapshots.clear()
        bb.b.insert(op.clone(bb.map))


def _snapshot(bb: _Builder, op: Operation) -> None:
    view = bb.get(op.operand_values[0])
    if view not in bb.snapshots:
        t = view.type.tensor_type()  # type: ignore[attr-defined]
        snap = bb.b.insert(mem.ToTensorOp([view], [t], loc=op.loc)).result
        if view in bb.unit_rows:  # (n, cols) -> (n, 1, cols): the row's kept unit axes
            snap = _unit_reshape(bb, snap, bb.batched(op.result).shape, bb.unit_rows[view],
                                 True, op.loc)
        bb.snapshots[view] = snap
    bb.map[op.result] = bb.snapshots[view]


def build(b: Batch, for_op: loop.ForOp) -> None:
    """Emit the batched form of ``b`` (the analysis of ``for_op``) before ``for_op``."""
    bb = _Builder(b, for_op)
    for op in b.ops:
        with bb.b.location(op.loc):
            _emit(bb, op)
