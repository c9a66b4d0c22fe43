"""Hoisting for ``memplan``: planable allocations with loop-invariant sizes move out of
loops (and out of ifs nested in loops), their deallocs right after the loop.  The rules
are in ``memplan``'s module docstring."""

from __future__ import annotations

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import loop, mem
from pyasc.ir.passes.loop_cost import iteration_cost
from pyasc.ir.passes.memplan_buffers import dealloc_of
from pyasc.ir.passes.parallel_safe import splittable

# Ops that compute sizes and may run speculatively (no trap, no effect): they move out
# of a loop together with an allocation whose size they compute.
SPECULATABLE = frozenset({
    "mem.dim", "arith.constant", "arith.add", "arith.sub", "arith.mul", "arith.max",
    "arith.min", "arith.cmp", "arith.select", "arith.cast",
})


def _inside(v: Value, op: Operation) -> bool:
    """True if ``v`` is defined inside ``op`` (a result of a nested op or an argument of
    one of its blocks)."""
    if isinstance(v, OpResult):
        return op is not v.op and op.is_ancestor_of(v.op)
    assert isinstance(v, BlockArgument)
    owner = v.block.parent_op
    return owner is not None and op.is_ancestor_of(owner)


PRIVATE_MIN_COST = 4096
"""Per-iteration work (``loop_cost`` units, about 1-2 us) above which a loop the backend
splits keeps its private buffers; below, an allocation per iteration costs more than
running the loop on one thread."""


def _split_outermost(op: loop.ForOp) -> bool:
    """``op`` is a costly loop the CPU backend splits over threads: splittable, and no
    enclosing loop is (a buffer hoisted out of it would be shared by the threads and
    would make it dependent)."""
    if iteration_cost(op) < PRIVATE_MIN_COST or not splittable(op):
        return False
    anc = op.parent_op
    while anc is not None:
        if isinstance(anc, loop.ForOp) and splittable(anc):
            return False
        anc = anc.parent_op
    return True


def _hoistable_parent(block: Block) -> Operation | None:
    """The op allocations of ``block`` may move out of, if any."""
    parent = block.parent_op
    if isinstance(parent, loop.ForOp):
        stop = parent.attributes.get("parallel") or _split_outermost(parent)
        return None if stop else parent
    if isinstance(parent, loop.WhileOp):
        return parent
    if isinstance(parent, loop.IfOp) and loop.inside_loop(parent):
        return parent
    return None


def _size_chain(dims: list[Value], parent: Operation) -> list[Operation] | None:
    """The ops inside ``parent`` computing ``dims`` (in a valid order), all speculatable
    on invariant inputs; ``None`` if some size depends on the iteration."""
    chain: list[Operation] = []
    seen: set[Operation] = set()

    def visit(v: Value) -> bool:
        if not _inside(v, parent):
            return True
        if not isinstance(v, OpResult) or v.op.name not in SPECULATABLE:
            return False
        if v.op not in seen:
            seen.add(v.op)
            if not all(visit(o) for o in v.op.operand_values):
                return False
            chain.append(v.op)
        return True

    return chain if all(visit(d) for d in dims) else None


def _move_before(op: Operation, anchor: Operation) -> None:
    assert op.parent is not None and anchor.parent is not None
    op.parent.detach(op)
    anchor.parent.insert(anchor.parent.index_of(anchor), op)


def hoist_out_of_parent(block: Block) -> int:
    """Move the hoistable planable allocations of ``block`` out of its parent op;
    returns how many moved."""
    parent = _hoistable_parent(block)
    if parent is None:
        return 0
    outer = parent.parent
    assert outer is not None
    moved = 0
    for op in list(block.ops):
        if not isinstance(op, mem.AllocOp):
            continue
        free = dealloc_of(op.result)
        chain = _size_chain(op.operand_values, parent) if free is not None else None
        if free is None or chain is None:
            continue
        for size_op in chain:
            _move_before(size_op, parent)
        _move_before(op, parent)
        block.detach(free)
        outer.insert(outer.index_of(parent) + 1 + moved, free)
        moved += 1
    return moved
