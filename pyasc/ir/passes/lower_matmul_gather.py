"""A matmul operand that is a gather of rows, read through its indices (no gathered copy).

``table[ids] @ w`` (an embedding lookup and a projection) and ``x @ table[ids]``: the
gathered matrix is not materialized when the matmul is its only use.  Its lowering
checks and normalizes the indices once, where the gather was (numpy's ``IndexError``
for an index out of range, negative indices wrapped), into a small index buffer, and
the matmul reads ``table[rows[i], k]`` wherever it would read ``gathered[i, k]``: the
tiled path packs its micro-panels straight from the table's rows.

Applies to a ``tensor.gather`` along axis 0 of a 2-D table by 1-D indices, or to a
``fusion.group`` whose body is only that gather (what ``@fusion_group`` and the fusion
pass make of an embedding lookup), whose result has one use, an operand of a
``tensor.matmul`` in the same block, with no op between the two that may write memory:
the table is read later than the gather would have read it, so a write in between
(``table[0] = ...``) must keep the copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import fusion, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.bufferize import Lowerer
from pyasc.ir.passes.effects import is_effect_free
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.passes.lower_shapes import labels
from pyasc.ir.types import TensorType, i64, index


@dataclass(frozen=True)
class GatheredRows:
    """The loop-level operand ``table[rows[i], :]`` (``rows``: checked, wrapped, i64)."""

    table: Value
    rows: Value

    def dims(self, gen: LoopGen) -> list[Value]:
        """The sizes of the gathered matrix."""
        return [gen.dims(self.rows)[0], gen.dims(self.table)[1]]

    def row(self, gen: LoopGen, i: Value) -> Callable[[Value], Value]:
        """The loader of ``gathered[i, c]`` for each ``c`` (the row index read once)."""
        r = gen.cast(gen.load(self.rows, [i]), index)
        return lambda c: gen.load(self.table, [r, c])

    def load(self, gen: LoopGen, idx: Sequence[Value]) -> Value:
        """``gathered[i, c]``."""
        i, c = idx
        return self.row(gen, i)(c)


def plan(fn: FuncOp, cx: Lowerer) -> None:
    """Have every gather of rows feeding a matmul (as described above) lowered lazily."""
    for op in fn.walk():
        if not isinstance(op, tensor.MatmulOp):
            continue
        for operand in (op.lhs, op.rhs):
            found = _gather_of_rows(operand, op)
            if found is not None:
                producer, gather, table, ids = found
                cx.overrides[producer] = functools.partial(
                    _lower_rows, gather=gather, table=table, ids=ids)


def _gather_of_rows(value: Value, user: Operation) -> tuple | None:
    """(producer, gather op, table, indices) when ``value`` qualifies, else None."""
    if not isinstance(value, OpResult) or len(value.uses) != 1:
        return None
    producer = value.op
    if producer.parent is not user.parent or not _nothing_writes_between(producer, user):
        return None
    if isinstance(producer, tensor.GatherOp):
        gather, table, ids = producer, producer.source, producer.indices
    elif isinstance(producer, fusion.FusionGroupOp):
        inner = _lone_gather(producer.body.blocks[0])
        if inner is None:
            return None
        args = producer.body.blocks[0].args
        gather = inner
        table = producer.operand_values[args.index(inner.source)]
        ids = producer.operand_values[args.index(inner.indices)]
    else:
        return None
    ok = (gather.attributes["axis"] == 0 and _rank(table) == 2 and _rank(ids) == 1)
    return (producer, gather, table, ids) if ok else None


def _lone_gather(block: Block) -> tensor.GatherOp | None:
    """The gather of a group body ``gather(arg, arg); yield gather`` (else None)."""
    if len(block.ops) != 2 or not isinstance(block.ops[0], tensor.GatherOp):
        return None
    gather, term = block.ops
    args = block.args
    if term.operand_values != [gather.result] or gather.source not in args \
            or gather.indices not in args:
        return None
    return gather


def _nothing_writes_between(first: Operation, last: Operation) -> bool:
    ops = first.parent.ops
    between = ops[ops.index(first) + 1:ops.index(last)]
    return all(is_effect_free(op) for op in between)


def _rank(v: Value) -> int:
    return v.type.rank if isinstance(v.type, TensorType) else 0


def _lower_rows(cx: Lowerer, op: Operation, gather: tensor.GatherOp, table: Value,
                ids: Value) -> list[Value]:
    """The indices checked and wrapped into ``rows``; the result stands for the table
    (only the matmul reads it, through ``cx.deferred``)."""
    gen = cx.gen
    src, idx = cx.get(table), cx.get(ids)
    n, size = gen.dims(idx)[0], gen.dims(src)[0]
    rows = cx.own(gen.alloc((ids.type.shape[0],), i64, [n], "rows"))
    gen.nest([n], lambda ivs: gen.store(gen.cast(gen.checked_index(
        gen.load(idx, ivs), size, *labels(gather, 0)), i64), rows, ivs), parallel=True)
    result = op.result_values[0]
    cx.deferred[result] = GatheredRows(src, rows)
    return [src]
