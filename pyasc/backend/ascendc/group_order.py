"""Moving host ops out from between two fusion groups so that they can merge.

``grouping.merge_adjacent`` merges a group into the next group that reads it when the
union is one vector kernel; the merged group takes the place of the second, so no op
between them may read the first.  A row reduction the program also returns is read
there: a batched row loop ``m = x[i].max(); mx[i] = m; out[i] = x[i] - m`` becomes the
reduction's group, the host's reshape and write of ``m`` into ``mx``, a fresh snapshot
of ``x`` (the frontend snapshots ``x[i]`` again after the write) and the consumer's
group.  Kept apart, the two kernels read ``x`` twice.

:func:`sink_users` moves the ops that depend on the first group (its *users*, with
what depends on them) after the second group, keeping their order, when that changes no
value: the second group does not depend on them, and each user commutes with every op
it passes (no memory effect on both sides that may touch the same buffer; buffers are
told apart only when one is a fresh ``mem.alloc`` and the other an allocation or a
function argument, as ``snapshots`` does).  :func:`share_snapshots` then lets the
second group read the first group's snapshot of a buffer instead of its own later one
when no op between them may write that buffer: one input, read once by the merged
kernel.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import MemRefType

_FREE = frozenset({"pure", "allocates", "constant"})  # no effect a reorder could observe
_Effects = tuple[frozenset[Value], frozenset[Value]] | None  # (reads, writes); None: unknown


def sink_users(block: Block, first: Operation, second: Operation) -> bool:
    """Move the ops between ``first`` and ``second`` that depend on ``first`` after
    ``second`` (module docstring); False, and nothing moved, when that is not safe."""
    start, end = block.index_of(first), block.index_of(second)
    between = block.ops[start + 1:end]
    tainted = set(first.result_values)
    users: list[Operation] = []
    for op in between:
        if _reads_any(op, tainted):
            users.append(op)
            tainted.update(r for inner in op.walk() for r in inner.result_values)
    if not users:
        return True
    if _reads_any(second, tainted - set(first.result_values)) or _touches_memory(second):
        return False
    moved = set(users)
    for k, op in enumerate(between):
        if op in moved and not all(_commute(op, later) for later in between[k + 1:]
                                   if later not in moved):
            return False
    for op in users:
        block.detach(op)
    at = block.index_of(second) + 1
    for n, op in enumerate(users):
        block.insert(at + n, op)
    return True


def share_snapshots(block: Block, first: Operation, second: Operation) -> None:
    """Replace each snapshot ``second`` reads by an equal one ``first`` reads: the same
    buffer snapshotted earlier, with no op between the two that may write it."""
    earlier = {v.op.operand_values[0]: v for v in first.operand_values
               if isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)}
    for idx, v in enumerate(second.operand_values):
        if not (isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)):
            continue
        same = earlier.get(v.op.operand_values[0])
        if same is None or same is v or same.type != v.type:
            continue
        lo, hi = block.index_of(same.op), block.index_of(v.op)  # type: ignore[attr-defined]
        buf = base_buffer(v.op.operand_values[0])
        if all(_leaves(op, buf) for op in block.ops[lo + 1:hi]):
            second.set_operand(idx, same)


def _leaves(op: Operation, buf: Value) -> bool:
    """Whether ``op`` certainly does not write buffer ``buf``."""
    effects = _effects(op)
    return effects is not None and all(_distinct(w, buf) for w in effects[1])


def _touches_memory(group: Operation) -> bool:
    """Whether an op inside ``group`` reads or writes memory (the users move past it)."""
    return any(inner.traits & {"reads", "writes", "frees"}
               for inner in group.walk() if inner is not group)


def _reads_any(op: Operation, values: set[Value]) -> bool:
    return any(v in values for inner in op.walk() for v in inner.operand_values)


def _effects(op: Operation) -> _Effects:
    """The buffers ``op`` may read and write (through views: their base buffers)."""
    if op.traits & _FREE and not op.traits & {"reads", "writes", "checks", "frees"}:
        return frozenset(), frozenset()
    if op.region_list or op.traits & {"checks", "frees"} or \
            not op.traits & {"reads", "writes"}:
        return None
    if isinstance(op, mem.WriteOp | mem.StoreOp | mem.FillOp | mem.CopyOp):
        dest = op.dest  # type: ignore[attr-defined]
        return _memrefs(v for v in op.operand_values if v is not dest), _memrefs([dest])
    bufs = _memrefs(op.operand_values)
    return (bufs if "reads" in op.traits else frozenset(),
            bufs if "writes" in op.traits else frozenset())


def _memrefs(values: Iterable[Value]) -> frozenset[Value]:
    return frozenset(base_buffer(v) for v in values if isinstance(v.type, MemRefType))


def _commute(a: Operation, b: Operation) -> bool:
    """Whether ``a`` and ``b`` (no SSA dependence between them) may swap."""
    ea, eb = _effects(a), _effects(b)
    if ea == (frozenset(), frozenset()) or eb == (frozenset(), frozenset()):
        return True
    if ea is None or eb is None:
        return False
    (ra, wa), (rb, wb) = ea, eb
    return all(_distinct(p, q) for p in wa for q in rb | wb) and \
        all(_distinct(p, q) for p in wb for q in ra)


def _distinct(p: Value, q: Value) -> bool:
    """Whether buffers ``p`` and ``q`` certainly do not overlap: different buffers, one
    of them a fresh allocation, the other an allocation or a function argument."""
    if p is q:
        return False
    roots = (_fresh(p), _fresh(q))
    return any(roots) and all(r or _argument(v) for r, v in zip(roots, (p, q), strict=True))


def _fresh(v: Value) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp)


def _argument(v: Value) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.block.parent_op, FuncOp)
