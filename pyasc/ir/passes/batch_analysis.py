"""Which loops ``batch-loops`` may batch, and the class of each value of their body.

A value of the body is ``inv`` (loop-invariant: computed once, before), ``row`` (a view
of row ``i`` of a buffer), ``bat`` (depends on the row: gets a leading batch axis) or
``iv`` (the loop index).  :func:`analyze` classifies a detached clone of the loop (its
fused groups inlined) op by op with the table ``_RULES`` and checks the conditions the
``batch_loops`` docstring lists; it raises :class:`Refuse` (with the reason) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import TensorType

INV, ROW, BAT, IV = "inv", "row", "bat", "iv"
REDUCTIONS = (tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp, tensor.ReduceMinOp,
              tensor.AnyOp, tensor.AllOp)


class Refuse(Exception):
    """The loop is not provably batchable (the message says why, for tests)."""


@dataclass
class Access:
    """One memory access of the body: the buffer value it goes through and how."""

    source: Value
    row: bool        # at row ``i`` (else loop-invariant)
    writes: bool


@dataclass
class Batch:
    """A batchable loop: its body (groups inlined, on a detached clone) classified."""

    loop: loop.ForOp                 # the detached clone whose body is analyzed
    ops: list[Operation]
    kinds: dict[Value, str] = field(default_factory=dict)
    accesses: list[Access] = field(default_factory=list)
    rank: int = 0                    # R: the rank of the row-dependent arrays

    def kind(self, v: Value) -> str:
        return self.kinds.get(v, INV)


def constant_int(v: Value) -> int | None:
    """The value of an integer ``arith.constant``, else None."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and \
            isinstance(v.op.value, int) and not isinstance(v.op.value, bool):
        return v.op.value
    return None


def _inline_groups(body: list[Operation]) -> None:
    """Replace every ``fusion.group`` of the block by its body (the groups were formed
    for one row; the batched ops are grouped again by the backend)."""
    for group in [op for op in body if isinstance(op, FusionGroupOp)]:
        block = group.parent
        assert block is not None
        inner = group.body.blocks[0]
        mapping: dict[Value, Value] = dict(zip(inner.args, group.inputs, strict=True))
        pos = block.index_of(group)
        for op in inner.ops:
            if isinstance(op, FusionYieldOp):
                for r, v in zip(group.result_values, op.operand_values, strict=True):
                    r.replace_all_uses_with(mapping.get(v, v))
                break
            block.insert(pos, op.clone(mapping))
            pos += 1
        group.erase()


# -- classifying the body's ops -----------------------------------------------------

def _invariant(op: Operation, b: Batch) -> bool:
    if any(b.kind(v) != INV for v in op.operand_values):
        return False
    return op.has_trait("pure") or isinstance(op, mem.ToTensorOp)


def _subview(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.SubviewOp)
    offsets, sizes, steps = op.parts()
    if all(b.kind(v) == INV for v in op.operand_values):
        return INV  # a view taken inside the loop but not depending on it
    if b.kind(op.source) != INV or b.kind(offsets[0]) != IV:
        raise Refuse("a view that does not select row i")
    rest = [*offsets[1:], *sizes, *steps]
    if any(b.kind(v) != INV for v in rest) or 0 not in op.attributes.get("drop", ()) or \
            constant_int(sizes[0]) != 1 or constant_int(steps[0]) != 1:
        raise Refuse("a view of row i with row-dependent bounds")
    b.accesses.append(Access(op.source, True, False))
    return ROW


def _row_indices(indices: list[Value], b: Batch) -> bool:
    """True when ``indices`` are ``(i, invariant...)``; False when all are invariant."""
    rest = [b.kind(v) for v in indices[1:]]
    if indices and b.kind(indices[0]) == IV and all(k == INV for k in rest):
        return True
    if all(b.kind(v) == INV for v in indices):
        return False
    raise Refuse("an element access not at (i, invariant...)")


def _load(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.LoadOp)
    row = _row_indices(list(op.indices), b)
    b.accesses.append(Access(op.source, row, False))
    return BAT if row else INV


def _store(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.StoreOp)
    if b.kind(op.value) not in (INV, BAT) or b.kind(op.dest) != INV or \
            not _row_indices(list(op.indices), b):
        raise Refuse("a store that is not at row i")
    b.accesses.append(Access(op.dest, True, True))
    return INV


def _write(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.WriteOp)
    if b.kind(op.dest) != ROW or b.kind(op.value) not in (INV, BAT):
        raise Refuse("a write that is not into row i")
    source = op.dest.op.source  # type: ignore[attr-defined]
    b.accesses.append(Access(source, True, True))
    return INV


def _to_tensor(op: Operation, b: Batch) -> str:
    kind = b.kind(op.operand_values[0])
    if kind == ROW:
        return BAT
    b.accesses.append(Access(op.operand_values[0], False, False))
    return INV


def _reduce(op: Operation, b: Batch) -> str:
    if b.kind(op.operand_values[0]) != BAT:
        raise Refuse("a reduction of a view")
    if op.attributes["keepdims"] is False and isinstance(op.result.type, TensorType):
        raise Refuse("a reduction over some axes without keepdims changes the rank")
    return BAT


def _elementwise(op: Operation, b: Batch) -> str:
    kinds = {b.kind(v) for v in op.operand_values}
    if not kinds <= {INV, BAT} or op.region_list or len(op.result_values) != 1:
        raise Refuse(f"'{op.name}' on the loop index or a view")
    return BAT


_RULES: dict[type[Operation], Callable[[Operation, Batch], str]] = {
    mem.SubviewOp: _subview, mem.LoadOp: _load, mem.StoreOp: _store,
    mem.WriteOp: _write, mem.ToTensorOp: _to_tensor,
    **{cls: _reduce for cls in REDUCTIONS},
}


def _classify(op: Operation, b: Batch) -> None:
    rule = _RULES.get(type(op))
    if rule is None and type(op).__module__ in (arith.__name__, m.__name__):
        rule = _elementwise
    if isinstance(op, loop.YieldOp) and not op.operand_values:
        return
    if op.region_list:
        raise Refuse(f"'{op.name}' inside the loop")
    if _invariant(op, b) and not isinstance(op, mem.SubviewOp):
        kind = INV
        if isinstance(op, mem.ToTensorOp):
            b.accesses.append(Access(op.operand_values[0], False, False))
    elif rule is None:
        raise Refuse(f"'{op.name}' inside the loop")
    else:
        kind = rule(op, b)
    for r in op.result_values:
        b.kinds[r] = kind


# -- whole-loop conditions ----------------------------------------------------------

def _check_ranks(b: Batch) -> None:
    ranks = {v.type.rank for v, k in b.kinds.items()
             if k == BAT and isinstance(v.type, TensorType)}
    if len(ranks) > 1:
        raise Refuse(f"row-dependent arrays of ranks {sorted(ranks)}")
    b.rank = ranks.pop() if ranks else 0
    for op in b.ops:
        if not op.result_values or b.kind(op.result_values[0]) != BAT:
            continue
        for v in op.operand_values:
            if b.kind(v) == INV and isinstance(v.type, TensorType) and v.type.rank > b.rank:
                raise Refuse("an invariant array of higher rank than the rows")
    for op in b.ops:
        if isinstance(op, mem.WriteOp) and b.kind(op.value) == BAT and \
                op.dest.type.rank != b.rank:  # type: ignore[attr-defined]
            raise Refuse("a row-dependent value written into a row of another rank")


def _check_accesses(b: Batch) -> None:
    written = {base_buffer(a.source) for a in b.accesses if a.writes}
    args = {base_buffer(a.source) for a in b.accesses
            if not isinstance(base_buffer(a.source), OpResult)}
    for root in written:
        sources = {a.source for a in b.accesses if base_buffer(a.source) is root}
        if len(sources) > 1 or not all(a.row for a in b.accesses
                                       if base_buffer(a.source) is root):
            raise Refuse("a written buffer is also reached at other rows or through "
                         "another view")
        if not isinstance(root, OpResult) and len(args) > 1:
            raise Refuse("a written argument beside other arguments (they may alias)")
        if isinstance(root, OpResult) and root.op.parent is not None and \
                b.loop.is_ancestor_of(root.op):
            raise Refuse("a buffer allocated inside the loop")


def analyze(for_op: loop.ForOp) -> Batch:
    """Classify a detached clone of ``for_op`` (its groups inlined); raises
    :class:`Refuse` when the loop is not provably batchable."""
    if for_op.iter_args or constant_int(for_op.step) != 1:
        raise Refuse("a loop with carried values or a step other than 1")
    clone = for_op.clone({})
    assert isinstance(clone, loop.ForOp)
    block = clone.body.blocks[0]
    _inline_groups(list(block.ops))
    b = Batch(clone, list(block.ops))
    b.kinds[clone.induction_var] = IV
    try:
        for op in b.ops:
            _classify(op, b)
        if not any(a.writes for a in b.accesses):
            raise Refuse("the loop writes nothing")
        _check_ranks(b)
        _check_accesses(b)
    except Refuse:
        clone.erase()
        raise
    b.ops = [op for op in b.ops if not isinstance(op, loop.YieldOp)]
    return b


def trip_count(for_op: loop.ForOp) -> int | None:
    """The static number of iterations, or None when it is known at run time only."""
    lo, hi = constant_int(for_op.lower), constant_int(for_op.upper)
    return None if lo is None or hi is None else max(hi - lo, 0)
