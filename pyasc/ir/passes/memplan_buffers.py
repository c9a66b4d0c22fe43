"""Planable buffers for ``memplan``: aliases, confinement to one block, and the block
order the pass visits (the rules are in ``memplan``'s module docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem

# Users through which a buffer escapes its block (or outlives a known dealloc).
_ESCAPES = (func.ReturnOp, func.CallOp, loop.YieldOp, loop.ConditionOp, loop.ForOp,
            loop.WhileOp)


def aliases(buf: Value) -> list[Value]:
    """``buf`` and every view of it, transitively (views have the ``view`` trait and take
    their source as operand 0)."""
    out = [buf]
    for v in out:
        for user, pos in v.uses:
            if user.has_trait("view") and pos == 0:
                out.extend(user.result_values)
    return out


def dealloc_of(buf: OpResult) -> mem.DeallocOp | None:
    """The dealloc of a planable alloc result ``buf`` (see the module docstring), else
    ``None``."""
    block = buf.op.parent
    assert block is not None
    frees = [u for u, _ in buf.uses if isinstance(u, mem.DeallocOp)]
    if len(frees) != 1 or frees[0].parent is not block:
        return None
    start, end = buf.op.order_key, frees[0].order_key  # positions in ``block``
    if end < start:
        return None
    for alias in aliases(buf):
        for user, _ in alias.uses:
            if isinstance(user, _ESCAPES) or (user.has_trait("frees") and user is not frees[0]):
                return None
            top = block.ancestor_of(user)
            if top is None or not start < top.order_key <= end:
                return None
    return frees[0]


def blocks_postorder(op: Operation) -> Iterator[Block]:
    """Every block nested in ``op``, children before their parents."""
    for region in op.region_list:
        for block in region.blocks:
            for inner in list(block.ops):
                if inner.region_list:
                    yield from blocks_postorder(inner)
            yield block
