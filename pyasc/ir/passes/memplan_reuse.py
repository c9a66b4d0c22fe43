"""Buffer reuse for ``memplan``: a linear scan over one block lends dead planable
buffers to later planable allocations.  Size rule and choice are in ``memplan``'s module
docstring."""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.passes.memplan_buffers import dealloc_of
from pyasc.ir.types import MemRefType, index

MAX_WASTE = 2
"""A static buffer of ``n`` elements serves requests of ``n / MAX_WASTE`` to ``n``."""


@dataclass
class _Free:
    """A dead buffer: its allocation, the dealloc that killed it, when it died."""

    buf: OpResult
    dealloc: mem.DeallocOp
    order: int


def _fits(want: OpResult, have: OpResult) -> int | None:
    """The element count of ``have`` if it may serve the request ``want``, else None."""
    w, h = want.type, have.type
    assert isinstance(w, MemRefType) and isinstance(h, MemRefType)
    if w.element != h.element:
        return None
    if w.is_static and h.is_static:
        nw, nh = w.num_elements(), h.num_elements()
        assert nw is not None and nh is not None
        return nh if nw <= nh <= MAX_WASTE * max(nw, 1) else None
    same_sizes = want.op.operand_values == have.op.operand_values  # identical SSA values
    return 0 if w.shape == h.shape and same_sizes else None


def _pick(want: OpResult, pool: list[_Free]) -> _Free | None:
    """The smallest fitting dead buffer, most recently freed first among equals."""
    best: tuple[int, int, _Free] | None = None
    for f in pool:
        n = _fits(want, f.buf)
        if n is not None and (best is None or (n, -f.order) < best[:2]):
            best = (n, -f.order, f)
    return best[2] if best is not None else None


def _view_as(b: Builder, buf: Value, want: MemRefType, dims: list[Value]) -> Value:
    """``buf`` seen as a contiguous buffer of type ``want`` (sizes ``dims`` for its
    dynamic axes): itself, a reshape, or a reshape of a leading flat slice."""
    have = buf.type
    assert isinstance(have, MemRefType)
    if have == want:
        return buf
    n_want, n_have = want.num_elements(), have.num_elements()
    if n_want != n_have:  # both static here: take the first n_want elements
        assert n_want is not None and n_have is not None
        flat = b.insert(mem.ReshapeOp([buf], [MemRefType((n_have,), have.element)])).result
        parts = [_const(b, 0), _const(b, n_want), _const(b, 1)]
        buf = b.insert(mem.SubviewOp([flat, *parts],
                                     [MemRefType((n_want,), have.element)])).result
        if want.shape == (n_want,):
            return buf
    return b.insert(mem.ReshapeOp([buf, *dims], [want])).result


def _const(b: Builder, value: int) -> Value:
    return b.insert(arith.ConstantOp.new(value, index)).result


def _reuse(alloc: mem.AllocOp, free: _Free, kill: mem.DeallocOp) -> None:
    """Replace ``alloc`` by (a view of) the dead buffer; ``kill`` (its dealloc) now frees
    the reused buffer, whose old dealloc goes away."""
    b = Builder.before(alloc)
    new = _view_as(b, free.buf, alloc.result.type, alloc.operand_values)  # type: ignore
    new.name_hint = new.name_hint or alloc.result.name_hint
    kill.set_operand(0, free.buf)
    alloc.result.replace_all_uses_with(new)
    alloc.erase()
    free.dealloc.erase()


def reuse_in_block(block: Block) -> int:
    """Run the linear scan over ``block``; returns how many allocations were removed."""
    pool: list[_Free] = []
    live: dict[Operation, OpResult] = {}  # pending dealloc -> planable buffer it frees
    reused = 0
    for order, op in enumerate(list(block.ops)):
        if op in live:
            pool.append(_Free(live.pop(op), op, order))  # type: ignore[arg-type]
            continue
        if not isinstance(op, mem.AllocOp):
            continue
        kill = dealloc_of(op.result)
        if kill is None:
            continue
        free = _pick(op.result, pool)
        if free is None:
            live[kill] = op.result
            continue
        pool.remove(free)
        _reuse(op, free, kill)
        live[kill] = free.buf
        reused += 1
    return reused
