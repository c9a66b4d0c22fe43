"""The copy rule of ``layout``: one contiguous copy of a strided input that is read in
several passes with a non-unit inner stride (rule in ``layout``'s module docstring)."""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.loopgen import LoopGen, static_strides
from pyasc.ir.types import DYN, MemRefType

COPY_MIN_ELEMENTS = 4096
"""Smaller static inputs stay in place: they fit in the L1 cache whatever their strides."""


def _writes_only_own_buffers(fn: FuncOp) -> bool:
    for op in fn.walk():
        if isinstance(op, func.CallOp):
            return False
        if op.has_trait("writes") and not op.has_trait("frees"):
            dest = base_buffer(op.operand_values[1])  # mem.store/write/copy/fill: dest
            if not (isinstance(dest, OpResult) and isinstance(dest.op, mem.AllocOp)):
                return False
    return True


def _is_input(v: Value, fn: FuncOp) -> bool:
    """A parameter, or a view of one made in the entry block."""
    if isinstance(v, OpResult) and v.op.parent is not fn.entry:
        return False
    base = base_buffer(v)
    return isinstance(base, BlockArgument) and base.block is fn.entry


def _enclosing_loops(op: Operation) -> list[Operation]:
    out: list[Operation] = []
    anc = op.parent_op
    while anc is not None and not isinstance(anc, FuncOp):
        if isinstance(anc, loop.ForOp | loop.WhileOp):
            out.append(anc)
        anc = anc.parent_op
    return out


def _reaches(v: Value, targets: set[Value], memo: dict[Value, bool]) -> bool:
    """True if one of ``targets`` (loop-defined values) flows into ``v``."""
    if v in targets:
        return True
    if v not in memo:
        memo[v] = False
        if isinstance(v, BlockArgument):  # an induction variable or carried value
            owner = v.block.parent_op
            sources = [] if owner is None or isinstance(owner, FuncOp) \
                else owner.operand_values
        else:
            assert isinstance(v, OpResult)
            sources = [o for inner in v.op.walk() for o in inner.operand_values]
        memo[v] = any(_reaches(o, targets, memo) for o in sources)
    return memo[v]


def _loop_values(lp: Operation) -> set[Value]:
    return {a for region in lp.region_list for a in region.blocks[0].args}


def _bad(load: mem.LoadOp, lp: Operation | None) -> bool:
    """True if the innermost loop ``lp`` steps the load over a non-unit stride.  A load
    in a loop with loops inside (``mx = x[i, 0]`` before a row's loops) runs once per
    iteration, not as a stream: never a reason to copy the input."""
    if lp is None or any(isinstance(o, loop.ForOp | loop.WhileOp) for o in lp.walk()
                         if o is not lp):
        return False
    strides = static_strides(load.source.type)  # type: ignore[arg-type]
    targets, memo = _loop_values(lp), {}
    return any(_reaches(v, targets, memo) and (s == DYN or abs(s) != 1)
               for v, s in zip(load.indices, strides, strict=True))


def _passes(loads: list[mem.LoadOp]) -> int:
    """How many passes over the input the loads make (rule 3)."""
    inner: set[Operation | None] = set()
    total = 0
    for ld in loads:
        loops = _enclosing_loops(ld)
        memo: dict[Value, bool] = {}
        rereads = any(not any(_reaches(v, _loop_values(lp), memo) for v in ld.indices)
                      for lp in loops)
        total += 2 if rereads else 0
        inner.add(loops[0] if loops else None)
    return total + len(inner)


def _worth_copying(v: Value, loads: list[mem.LoadOp]) -> bool:
    t = v.type
    assert isinstance(t, MemRefType)
    n = t.num_elements()
    if n is not None and n < COPY_MIN_ELEMENTS:
        return False
    if not any(_bad(ld, (_enclosing_loops(ld) or [None])[0]) for ld in loads):
        return False
    return _passes(loads) >= 2


def _copy(fn: FuncOp, v: Value, loads: list[mem.LoadOp]) -> None:
    """Copy ``v`` into a fresh buffer right after its definition, redirect ``loads``
    and free the copy after the last entry-block op that reads it."""
    entry = fn.entry
    at = entry.index_of(v.op) + 1 if isinstance(v, OpResult) else 0
    gen = LoopGen(Builder(entry, at, fn.loc))
    t = v.type
    assert isinstance(t, MemRefType)
    dims = gen.dims(v)
    buf = gen.alloc(t.shape, t.element, dims, (v.name_hint or base_buffer(v).name_hint
                                                or "in") + "_c")
    gen.nest(dims, lambda ivs: gen.store(gen.load(v, ivs), buf, ivs), parallel=True)
    consts = Block()
    gen.flush_constants(consts)
    for op in list(consts.ops):  # constants go first: they must dominate the copy
        consts.detach(op)
        entry.insert(0, op)
    for ld in loads:
        ld.set_operand(0, buf)
    last = max(entry.index_of(entry.ancestor_of(ld)) for ld in loads)  # type: ignore[arg-type]
    entry.insert(last + 1, mem.DeallocOp([buf], loc=entry.ops[last].loc))


def copy_strided_inputs(fn: FuncOp) -> int:
    """Apply the copy rule to every input of ``fn``; returns how many were copied."""
    if not _writes_only_own_buffers(fn):
        return 0
    loads: dict[Value, list[mem.LoadOp]] = {}
    for op in fn.walk():
        if isinstance(op, mem.LoadOp) and _is_input(op.source, fn):
            loads.setdefault(op.source, []).append(op)
    copied = 0
    for v, lds in loads.items():
        if _worth_copying(v, lds):
            _copy(fn, v, lds)
            copied += 1
    return copied
