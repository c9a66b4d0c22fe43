"""Emitters for structured control flow (``loop.for/while/if``) and ``func.assert``.

``loop.for`` becomes a canonical counted loop that LLVM's loop passes and vectorizer
recognize::

    preheader:  tc = trip count (0 if empty; step 0 is a run-time "value" error)
    header:     k = phi [0, preheader], [k + 1, latch];  carried = phi ...
                br (k < tc), body, exit
    body:       iv = lb + k * step; ...; the last block is the latch
    exit:       results = the header phis

Memref values carried through loops and ifs are split into their SSA parts (data
pointer, dims, strides), one phi each (``emit_carried``); parts the type makes static
are dropped again by LLVM.  ``loop.while`` is in ``emit_while``.

A loop that ``parallel.splits`` (the outermost parallel loop of a function) has its
iteration range run by the thread pool instead: ``parallel.emit_parallel`` outlines the
range loop below into a function and calls the pool.

Loops marked ``poll`` by the ``interrupt-poll`` pass count down to a poll for Ctrl-C at
their latch (``emit_poll.backedge``); ``poll = "strips"`` runs the range as an outer
loop over strips of ``emit_poll.STRIP`` iterations, the latch of the strips polling and
each strip the unchanged loop above.  Unmarked loops count their trips on exit
(``emit_poll.counts_trips``).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from pyasc.backend.llvm import emit_poll, parallel
from pyasc.backend.llvm.codegen import (
    FunctionEmitter,
    flatten,
    part_types,
    site_of,
    where,
)
from pyasc.backend.llvm.emit_carried import (
    bind,
    forget_carried,
    part_phis,
    terminator_values,
)
from pyasc.backend.llvm.emit_while import emit_while
from pyasc.backend.llvm.lltypes import I64, i64
from pyasc.backend.llvm.loop_buffers import owning
from pyasc.backend.llvm.memref import iadd, imul
from pyasc.ir.core import Value
from pyasc.ir.ops import func, loop
from pyasc.ir.types import ScalarType

# ------------------------------------------------------------------ loop.for


def _trip_count(fe: FunctionEmitter, op: loop.ForOp, lb: ir.Value, ub: ir.Value,
                step: ir.Value) -> ir.Value:
    b = fe.b
    zero = i64(0)
    if isinstance(step, ir.Constant):
        if step.constant == 0:
            fe.check(ir.Constant(ir.IntType(1), 0), "value",
                     f"{where(op)}: loop step must not be zero")
            return zero
        positive = step.constant > 0
        span = b.sub(ub, lb) if positive else b.sub(lb, ub)
        astep = i64(abs(step.constant))
    else:
        fe.check(b.icmp_signed("!=", step, zero), "value",
                 f"{where(op)}: loop step must not be zero")
        pos = b.icmp_signed(">", step, zero)
        span = b.select(pos, b.sub(ub, lb), b.sub(lb, ub))
        astep = b.select(pos, step, b.sub(zero, step))
    if isinstance(astep, ir.Constant) and astep.constant == 1:
        count = span
    else:
        count = b.add(b.udiv(b.sub(span, i64(1)), astep), i64(1))
    return b.select(b.icmp_signed(">", span, zero), count, zero)


def _emit_for(fe: FunctionEmitter, op: loop.ForOp) -> None:
    lb, ub, step = fe.get(op.lower), fe.get(op.upper), fe.get(op.step)
    tc = _trip_count(fe, op, lb, ub, step)
    forget_carried(fe, op)
    if parallel.splits(fe, op):
        parallel.emit_parallel(fe, op, lb, step, tc, _emit_range)
        if emit_poll.counts_trips(op):  # its chunks count in their own countdowns
            emit_poll.spend(fe, tc)
        return
    _emit_range(fe, op, lb, step, i64(0), tc)


def _emit_range(fe: FunctionEmitter, op: loop.ForOp, lb: ir.Value, step: ir.Value,
                first: ir.Value, end: ir.Value) -> None:
    """The iterations ``k`` in ``[first, end)`` of ``op`` (``iv = lb + k * step``)."""
    mode = op.attributes.get("poll")
    if op.attributes.get("vector_bits"):
        prefer_vector_width(fe.fn, op.attributes["vector_bits"])
    inits = [p for v in op.inits for p in flatten(fe, v)]
    if mode == "strips":
        out = _strips(fe, op, lb, step, first, end, inits)
    else:
        out = _counted(fe, op, lb, step, first, end, inits, poll=mode == "backedge")
        if mode is None and emit_poll.counts_trips(op):
            emit_poll.spend(fe, fe.b.sub(end, first))
    bind(fe, op.outputs, out)


def prefer_vector_width(fn: ir.Function, bits: int) -> None:
    """``"prefer-vector-width"`` on ``fn``: LLVM's X86 tuning prefers 256-bit vectors on
    AVX-512 CPUs such as Ice Lake and Sapphire Rapids unless a function asks otherwise
    (a loop's ``vector_bits``)."""
    # llvmlite's list of function attributes has no key-value pairs: add it unchecked
    set.add(fn.attributes, f'"prefer-vector-width"="{bits}"')


def _counted(fe: FunctionEmitter, op: loop.ForOp, lb: ir.Value, step: ir.Value,
             first: ir.Value, end: ir.Value, inits: Sequence[ir.Value],
             poll: bool) -> list[ir.PhiInstr]:
    """The loop over ``k`` in ``[first, end)`` running ``op``'s body once per ``k``,
    entered with the carried parts ``inits``; returns the carried parts at its exit."""
    b = fe.b
    pre = b.block
    header, body, exit_ = (fe.new_block(n) for n in ("for.header", "for.body", "for.exit"))
    b.branch(header)
    b.position_at_end(header)
    k = b.phi(I64, name="k")
    k.add_incoming(first, pre)
    if fe.in_parallel and fe.iteration is None:  # the outlined loop: its counter keys
        fe.iteration = k                         # the error record (errrecord.py)
    types = [ty for v in op.inits for ty in part_types(v.type)]
    carried = part_phis(fe, types, inits, pre)
    b.cbranch(b.icmp_signed("<", k, end), body, exit_)
    b.position_at_end(body)
    with fe.allocs.scope(), owning(fe, op.inits, op.iter_args, op.body.blocks[0], carried):
        fe.set(op.induction_var, iadd(b, lb, imul(b, k, step)))
        bind(fe, op.iter_args, carried)
        yielded = terminator_values(fe, op.body.blocks[0], "loop.yield")
        parts = [p for v in yielded for p in flatten(fe, v)]
        if poll:
            emit_poll.backedge(fe)
        latch = b.block
        k.add_incoming(b.add(k, i64(1), flags=("nuw", "nsw")), latch)
        for phi, part in zip(carried, parts, strict=True):
            phi.add_incoming(part, latch)
        back = b.branch(header)
        if op.attributes.get("lanes"):
            back.set_metadata("llvm.loop", _lane_loop_id(fe, op.attributes["lanes"]))
        elif op.attributes.get("register_tile"):
            back.set_metadata("llvm.loop", _loop_id(fe, [("llvm.loop.vectorize.enable", False)]))
    b.position_at_end(exit_)
    return carried


def _lane_loop_id(fe: FunctionEmitter, width: int) -> ir.MDValue:
    """A lane loop's ``llvm.loop`` id (``loop.for``'s ``lanes``): vectorize ``width``
    wide, never unroll.  Unrolled first, the lanes became scalars that SLP re-packed as
    4-, 2- and masked 7-wide pieces."""
    return _loop_id(fe, [("llvm.loop.unroll.disable", None), ("llvm.loop.vectorize.enable", True),
                         ("llvm.loop.vectorize.width", width)])


def _loop_id(fe: FunctionEmitter, props: Sequence[tuple[str, bool | int | None]]) -> ir.MDValue:
    """An ``llvm.loop`` id with the properties ``(name, value)`` (value None: the name
    alone; a bool: an ``i1``; an int: an ``i32``).  A register tile's loop (``register_tile``)
    gets ``vectorize.enable = false``: where its sums may be reordered (integers, floats
    under ``fastmath``) the loop vectorizer vectorized ``k`` instead, each of the 256
    accumulators of an int32 tile a vector of 16 partial sums, plus a 4-wide epilogue
    and the scalar loop: three copies of the kernel, 30-40 s of LLVM time.  A loop id
    must refer to itself, which llvmlite's uniqued ``add_metadata`` cannot express: the
    node is built, then closed on itself."""
    module = fe.mc.module
    nodes = []
    for name, value in props:
        operands: list[ir.Value] = [ir.MetaDataString(module, name)]
        if value is not None:
            operands.append(ir.Constant(ir.IntType(1 if isinstance(value, bool) else 32),
                                        int(value)))
        nodes.append(module.add_metadata(operands))
    node = ir.values.MDValue(module, [], name=str(len(module.metadata)))
    node.operands = (node, *nodes)
    return node


def _strips(fe: FunctionEmitter, op: loop.ForOp, lb: ir.Value, step: ir.Value,
            first: ir.Value, end: ir.Value, inits: Sequence[ir.Value]) -> list[ir.PhiInstr]:
    """``[first, end)`` as strips of ``emit_poll.STRIP`` iterations, polling between
    strips; each strip is the plain loop of :func:`_counted`."""
    b = fe.b
    count = b.sub(end, first)
    n = b.select(b.icmp_signed(">", count, i64(0)),
                 b.lshr(b.add(count, i64(emit_poll.STRIP - 1)),
                        i64(emit_poll.STRIP.bit_length() - 1)), i64(0))
    pre = b.block
    header, body, exit_ = (fe.new_block(n) for n in ("strip.header", "strip.body",
                                                     "strip.exit"))
    b.branch(header)
    b.position_at_end(header)
    j = b.phi(I64, name="strip")
    j.add_incoming(i64(0), pre)
    carried = part_phis(fe, [p.type for p in inits], inits, pre)
    b.cbranch(b.icmp_signed("<", j, n), body, exit_)
    b.position_at_end(body)
    start = b.add(first, b.mul(j, i64(emit_poll.STRIP)))
    stop = b.add(start, i64(emit_poll.STRIP))
    stop = b.select(b.icmp_signed("<", stop, end), stop, end)
    out = _counted(fe, op, lb, step, start, stop, carried, poll=False)
    emit_poll.spend(fe, b.sub(stop, start))
    with owning(fe, op.inits, op.iter_args, op.body.blocks[0], carried):
        emit_poll.backedge(fe)
    latch = b.block
    j.add_incoming(b.add(j, i64(1), flags=("nuw", "nsw")), latch)
    for phi, part in zip(carried, out, strict=True):
        phi.add_incoming(part, latch)
    b.branch(header)
    b.position_at_end(exit_)
    return carried


# ------------------------------------------------------------------ loop.if


def _emit_if(fe: FunctionEmitter, op: loop.IfOp) -> None:
    b = fe.b
    then_bb, else_bb, merge = (fe.new_block(n) for n in ("if.then", "if.else", "if.end"))
    b.cbranch(fe.get(op.cond), then_bb, else_bb)
    incoming: list[tuple[ir.Block, list[ir.Value]]] = []
    for region, bb in ((op.then_region, then_bb), (op.else_region, else_bb)):
        b.position_at_end(bb)
        with fe.allocs.scope():
            vals = terminator_values(fe, region.blocks[0], "loop.yield")
            incoming.append((b.block, [p for v in vals for p in flatten(fe, v)]))
            b.branch(merge)
    b.position_at_end(merge)
    types = [ty for r in op.outputs for ty in part_types(r.type)]
    parts = []
    for i, ty in enumerate(types):
        phi = b.phi(ty)
        for pred, vals in incoming:
            phi.add_incoming(vals[i], pred)
        parts.append(phi)
    bind(fe, op.outputs, parts)


# ------------------------------------------------------------------ func.assert


def _emit_assert(fe: FunctionEmitter, op: func.AssertOp) -> None:
    values = [_as_i64(fe, v) for v in op.values]
    fe.check(fe.get(op.cond), op.attributes["kind"], op.attributes["message"], values,
             site_of(op))


def _as_i64(fe: FunctionEmitter, v: Value) -> ir.Value:
    """An integer value reported by a check, as int64 (sign- or zero-extended)."""
    x = fe.get(v)
    width = x.type.width
    if width == 64:
        return x
    t = v.type
    unsigned = isinstance(t, ScalarType) and t.is_unsigned
    return fe.b.zext(x, I64) if unsigned else fe.b.sext(x, I64)


CONTROL_EMITTERS = {
    loop.ForOp: _emit_for,
    loop.WhileOp: emit_while,
    loop.IfOp: _emit_if,
    func.AssertOp: _emit_assert,
}
"""``{op class: emit function}`` for structured control flow and run-time checks."""
