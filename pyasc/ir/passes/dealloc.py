"""Deallocation placement on loop-level IR (the last step of ``lower-to-loops``).

Candidates are every ``mem.alloc`` result and every owned tensor buffer recorded by
bufferization (tensor results of loops/ifs/calls and tensor iteration arguments).  For
a candidate ``c`` defined in block ``B``:

1. its *aliases* are ``c`` plus, transitively, results of view ops (``mem.subview``,
   ``mem.transpose``, ``mem.reshape``) of an alias, memref results of a ``func.call``
   taking an alias, and the loop/if results and region arguments an alias flows into
   through loop inits, ``loop.yield`` and ``loop.condition``;
2. ``c`` *escapes* — and is not freed here — if an alias is an operand of ``B``'s own
   terminator (returned, or yielded out of ``B`` into a loop result or the next
   iteration) or if bufferization handed ``c`` over to a loop as an init;
3. otherwise ``mem.dealloc(c)`` goes right after the last op of ``B`` containing a use
   of an alias (at the start of ``B`` for an unused argument, right after ``c``'s
   definition for an unused result).

Tensor buffers never escape except by hand-over, so every one is freed exactly once.
User buffers (``np.empty`` inside a loop, yielded out of it) that escape a region are
not freed here: the CPU backend frees those the function does not return when it
returns (:func:`never_freed`; ``backend/llvm/tracking.py``).
"""

from __future__ import annotations

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import MemRefType


def _flows(op: Operation) -> list[tuple[Value, Value]]:
    """(source, may-alias target) pairs created by ``op``."""
    pairs: list[tuple[Value, Value]] = []
    if op.has_trait("view"):
        pairs.append((op.operand_values[0], op.result))
    elif isinstance(op, func.CallOp):
        pairs += [(a, r) for a in op.operand_values for r in op.result_values]
    elif isinstance(op, loop.ForOp):
        body = op.body.blocks[0]
        pairs += [(i, t) for k, i in enumerate(op.inits)
                  for t in (body.args[k + 1], op.result_values[k])]
    elif isinstance(op, loop.WhileOp):
        pairs += list(zip(op.inits, op.before.blocks[0].args, strict=True))
    elif isinstance(op, loop.YieldOp | loop.ConditionOp):
        pairs += _terminator_flows(op)
    return [(s, t) for s, t in pairs if isinstance(t.type, MemRefType)]


def _terminator_flows(op: Operation) -> list[tuple[Value, Value]]:
    block = op.parent
    parent = block.parent_op if block is not None else None
    values = op.operand_values
    if isinstance(op, loop.ConditionOp):
        assert isinstance(parent, loop.WhileOp)
        targets = [parent.after.blocks[0].args, parent.result_values]
        values = values[1:]
    elif isinstance(parent, loop.ForOp):
        targets = [parent.body.blocks[0].args[1:], parent.result_values]
    elif isinstance(parent, loop.WhileOp):
        targets = [parent.before.blocks[0].args]
    elif isinstance(parent, loop.IfOp):
        targets = [parent.result_values]
    else:
        return []
    return [(v, t[k]) for t in targets for k, v in enumerate(values)]


def _alias_graph(fn: FuncOp) -> dict[Value, list[Value]]:
    graph: dict[Value, list[Value]] = {}
    for op in fn.walk():
        for src, dst in _flows(op):
            graph.setdefault(src, []).append(dst)
    return graph


def _aliases(c: Value, graph: dict[Value, list[Value]]) -> set[Value]:
    seen = {c}
    work = [c]
    while work:
        for nxt in graph.get(work.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                work.append(nxt)
    return seen


def _home(v: Value) -> tuple[Block, Operation | None]:
    """The block defining ``v`` and its defining op (``None`` for a block argument)."""
    if isinstance(v, BlockArgument):
        return v.block, None
    assert isinstance(v, OpResult) and v.op.parent is not None
    return v.op.parent, v.op


def _placement(c: Value, graph: dict[Value, list[Value]]) -> tuple[Block, int] | None:
    """Where ``mem.dealloc(c)`` goes (block, insertion index), or ``None`` if ``c``
    escapes its block."""
    block, def_op = _home(c)
    term = block.terminator
    last = def_op
    for alias in _aliases(c, graph):
        for user, _ in alias.uses:
            if user is term:
                return None
            anc = block.ancestor_of(user)
            if anc is not None and (last is None or anc.order_key > last.order_key):
                last = anc
    return block, (block.index_of(last) if last is not None else -1) + 1


def insert_deallocs(fn: FuncOp, owned: set[Value], transferred: set[Value]) -> None:
    """Add ``mem.dealloc`` ops to ``fn`` following the module docstring's rules."""
    graph = _alias_graph(fn)
    allocs = [op.result for op in fn.walk() if isinstance(op, mem.AllocOp)]
    candidates = list(dict.fromkeys(allocs + sorted(owned, key=_order_key(fn))))
    plans: list[tuple[Block, int, Value]] = []
    for c in candidates:
        if c in transferred or any(isinstance(u, mem.DeallocOp) for u, _ in c.uses):
            continue  # handed over, or already freed (running the pass twice)
        where = _placement(c, graph)
        if where is not None:
            plans.append((*where, c))
    # Insert from the back of each block so earlier indices stay valid.
    for block, idx, c in sorted(plans, key=lambda p: p[1], reverse=True):
        block.insert(idx, mem.DeallocOp([c], loc=_loc_near(block, idx)))


def _order_key(fn: FuncOp):
    """Deterministic order of owned values (by program position) for stable output."""
    order: dict[Value, int] = {}
    for op in fn.walk():
        for region in op.region_list:
            for block in region.blocks:
                for a in block.args:
                    order.setdefault(a, len(order))
        for r in op.result_values:
            order.setdefault(r, len(order))
    return lambda v: order.get(v, len(order))


def _loc_near(block: Block, idx: int):
    return block.ops[idx - 1].loc if idx > 0 else (block.ops[0].loc if block.ops else None)


def may_be_freed(fn: FuncOp) -> set[Value]:
    """The ``mem.alloc`` results of ``fn`` that some ``mem.dealloc`` may free (itself or
    one of its aliases, as the rules above define them)."""
    return _allocs_whose_aliases_meet(fn, {op.buffer for op in fn.walk()
                                           if isinstance(op, mem.DeallocOp)})


def never_freed(fn: FuncOp) -> set[Value]:
    """The ``mem.alloc`` results of ``fn`` that escape a block (rule 2) yet no alias of
    which is freed or returned: dropped after a loop or an ``if`` (``r = t`` in a loop
    whose ``r`` is copied by an early ``return``); the caller must free them."""
    ret = fn.entry.terminator
    dropped = set(ret.operand_values) if ret is not None else set()
    dropped |= {op.buffer for op in fn.walk() if isinstance(op, mem.DeallocOp)}
    allocs = {op.result for op in fn.walk() if isinstance(op, mem.AllocOp)}
    return allocs - _allocs_whose_aliases_meet(fn, dropped)


def _allocs_whose_aliases_meet(fn: FuncOp, values: set[Value]) -> set[Value]:
    graph = _alias_graph(fn)
    return {op.result for op in fn.walk() if isinstance(op, mem.AllocOp)
            and _aliases(op.result, graph) & values}
