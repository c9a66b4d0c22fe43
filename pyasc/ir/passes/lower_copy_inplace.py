"""Copies between arrays that may overlap: ``o[...] = x``, ``o[1:] = x[:-1]``.

A snapshot (``mem.to_tensor``) of a buffer that is written before the snapshot's last
use is a copy (``snapshots``).  When that write is the snapshot's only use, as the
value of a ``mem.write`` after it with nothing but pure ops in between, the copy feeds
nothing but a second copy: a temporary and two passes over the data.  :func:`plan`
turns each such pair into one copy versioned on the run-time tests of
``lower_group_inplace`` (``mem.disjoint``, ``mem.same_view``): straight from the source
when it cannot overlap the destination or is the same view of it (a copy onto itself),
through a temporary otherwise (numpy's result for an overlapping assignment).  Only
with the pass option ``alias_checks`` (on by default; off for the AscendC scalar
kernels, which keep the two copies).
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.bufferize import Lowerer
from pyasc.ir.passes.lower_group_inplace import (
    Placement,
    no_overlap,
    provably_disjoint,
    views_of_one_local,
)


def _only_write(snapshot: mem.ToTensorOp) -> mem.WriteOp | None:
    """The ``mem.write`` whose value is ``snapshot``'s result and its only use, with
    only pure ops between them (nothing writes the source in between), or None."""
    uses = list(snapshot.result.uses)
    if len(uses) != 1:
        return None
    write, index = uses[0]
    block = snapshot.parent
    if not isinstance(write, mem.WriteOp) or index != 0 or write.parent is not block:
        return None
    assert block is not None
    between = block.ops[block.index_of(snapshot) + 1:block.index_of(write)]
    if any(op.region_list or "pure" not in op.traits for op in between):
        return None
    return write


def plan(fn: FuncOp, cx: Lowerer) -> None:
    """Give every copied snapshot written once right after it (module docstring) and
    its write the rules of a single versioned copy."""
    if not cx.options.get("alias_checks", True):
        return
    for op in fn.walk():
        if isinstance(op, mem.ToTensorOp) and op not in cx.reuse:
            write = _only_write(op)
            if write is not None:
                cx.overrides[op] = _source
                cx.overrides[write] = _versioned_copy


def _source(cx: Lowerer, op: Operation) -> list[Value]:
    """The snapshot stands for its buffer; the write after it copies (or not)."""
    return [cx.get(op.operand_values[0])]


def _versioned_copy(cx: Lowerer, op: Operation) -> list[Value]:
    src, dst = cx.getall(op.operand_values)
    gen = cx.gen
    if src is dst:  # the same buffer: every element is copied onto itself
        return []

    def direct() -> list[Value]:
        gen.copy(src, dst, parallel=True)
        return []
    if provably_disjoint(src, dst):
        direct()
        return []

    def staged() -> list[Value]:
        gen.copy(cx.fresh_copy(src), dst, parallel=True)
        return []
    if views_of_one_local(src, dst):  # overlapping by construction: no run-time test
        return staged()
    # a copy reads element i only to write element i: the same view is safe too
    gen.if_(no_overlap(gen, Placement(dst, [(src, True)])), [], direct, staged)
    return []
