"""The call's list of *tracked* allocations: result memory chosen at run time.

A result may be (a view of) one of several allocations, the one control flow chose
(``r = t.reshape(2, a, b) if c else np.zeros(...)``, ``r = t[5:15]`` for a ``t`` made
in each iteration of a loop), or an argument's memory.  Such allocations escape the
function, so the kernel never frees them on its own (``passes/dealloc.py``); which of
them a result ends up in is only known at run time, and an allocation made in a loop
is made once per iteration.  So each execution of a tracked ``mem.alloc`` (the ops of
``EntryPlan.tracked``) links its memory into one list per call, through a header in
front of the data::

    base = aligned_alloc(64, HEADER + size)    base[0]: the previous head of the list
    data = base + HEADER                       base[1]: size (bytes, padded)

At ``func.return`` the kernel *settles* the list (:func:`settle`): for each result of
``EntryPlan.settle`` it stores into its buffer slot the base of the allocation its data
pointer lies in (ends included: an empty view may point just past the end; NULL when
it lies in none, e.g. in an argument), and frees every allocation no result lies in.
Live allocations never overlap, so the test is exact; the runtime owns each stored
base once (``runtime.results.own``: several results may lie in one allocation).  An
error exit frees the whole list (:func:`free_all`).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter
from pyasc.backend.llvm.lltypes import I1, I8, I64, PTR, i64

HEADER = 64
"""Bytes in front of a tracked allocation's data: keeps the data 64-byte aligned."""


def start(fe: FunctionEmitter) -> None:
    """Make the (empty) list of this call, if the plan tracks any allocation; error
    exits free it (one call of a helper function: there are many exits)."""
    if fe.tracked:
        fe.track_head = fe.entry_alloca(PTR)
        fe.entry_builder().store(ir.Constant(PTR, None), fe.track_head, align=8)
        fe.exit_hooks.append(free_all)


def link(fe: FunctionEmitter, base: ir.Value, size: ir.Value) -> ir.Value:
    """Put the fresh allocation ``base`` (``size`` data bytes) at the head of the list;
    returns the pointer of its data."""
    b = fe.b
    assert fe.track_head is not None
    b.store(b.load(fe.track_head, typ=PTR, align=8), base, align=8)
    b.store(size, _at(b, base, 8), align=8)
    b.store(base, fe.track_head, align=8)
    return _at(b, base, HEADER)


def free_all(fe: FunctionEmitter) -> None:
    """Free every allocation in the list (an error exit: no result is returned)."""
    assert fe.track_head is not None
    fe.b.call(_free_list(fe), [fe.b.load(fe.track_head, typ=PTR, align=8)])


def _free_list(fe: FunctionEmitter) -> ir.Function:
    """``void pyasc.free_tracked(ptr head)``, defined once per module."""
    name = "pyasc.free_tracked"
    fn = fe.mc.module.globals.get(name)
    if isinstance(fn, ir.Function):
        return fn
    fn = ir.Function(fe.mc.module, ir.FunctionType(ir.VoidType(), [PTR]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")  # cold: one copy, off the error paths
    helper = FunctionEmitter(fe.mc, fn, {})
    helper.track_head = helper.entry_alloca(PTR)
    helper.entry_builder().store(fn.args[0], helper.track_head, align=8)
    _walk(helper, [])
    helper.b.ret_void()
    return fn


def settle(fe: FunctionEmitter, results: Sequence[tuple[ir.Value, ir.Value]]) -> None:
    """For each ``(data pointer, buffer slot)`` store the base of the allocation the
    pointer lies in (or NULL) into the slot; free the allocations no result lies in."""
    for _, slot in results:
        fe.b.store(ir.Constant(PTR, None), slot, align=8)
    if fe.track_head is not None:
        _walk(fe, results)


def _walk(fe: FunctionEmitter, results: Sequence[tuple[ir.Value, ir.Value]]) -> None:
    """Loop over the list: record the allocations ``results`` lie in, free the others."""
    b = fe.b
    free = fe.mc.function("free", ir.VoidType(), [PTR], ("nounwind",))
    pre = b.block
    head, body, drop, step, done = (fe.new_block(n) for n in
                                    ("track.head", "track.body", "track.free", "track.next",
                                     "track.done"))
    first = b.load(fe.track_head, typ=PTR, align=8)
    b.branch(head)
    b.position_at_end(head)
    node = b.phi(PTR, name="node")
    node.add_incoming(first, pre)
    b.cbranch(b.icmp_unsigned("==", node, ir.Constant(PTR, None)), done, body)
    b.position_at_end(body)
    nxt = b.load(node, typ=PTR, align=8)  # read before a free
    lo = b.ptrtoint(_at(b, node, HEADER), I64)
    hi = b.add(lo, b.load(_at(b, node, 8), typ=I64, align=8))
    kept: ir.Value = ir.Constant(I1, 0)
    for data, slot in results:
        d = b.ptrtoint(data, I64)
        inside = b.and_(b.icmp_unsigned("<=", lo, d), b.icmp_unsigned("<=", d, hi))
        b.store(b.select(inside, node, b.load(slot, typ=PTR, align=8)), slot, align=8)
        kept = b.or_(kept, inside)
    b.cbranch(kept, step, drop)
    b.position_at_end(drop)
    b.call(free, [node])
    b.branch(step)
    b.position_at_end(step)
    node.add_incoming(nxt, step)
    b.branch(head)
    b.position_at_end(done)


def _at(b: ir.IRBuilder, base: ir.Value, offset: int) -> ir.Value:
    return b.gep(base, [i64(offset)], inbounds=True, source_etype=I8)

