"""Emitters for structured control flow (``loop.for/while/if``) and ``func.assert``.

``loop.for`` becomes a canonical counted loop that LLVM's loop passes and vectorizer
recognize::

    preheader:  tc = trip count (0 if empty; step 0 is a run-time "value" error)
    header:     k = phi [0, preheader], [k + 1, latch];  carried = phi ...
                br (k < tc), body, exit
    body:       iv = lb + k * step; ...; the last block is the latch
    exit:       results = the header phis

Memref values carried through loops and ifs are split into their SSA parts (data
pointer, dims, strides), one phi each; parts the type makes static are dropped again
by LLVM.

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
    n_parts,
    part_types,
    site_of,
    unflatten,
    where,
)
from pyasc.backend.llvm.lltypes import I64, i64
from pyasc.backend.llvm.loop_buffers import owning
from pyasc.backend.llvm.memref import iadd, imul
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.passes import interrupt_while
from pyasc.ir.passes.interrupt_while import counted
from pyasc.ir.types import ScalarType, Type


def _phis(fe: FunctionEmitter, types: Sequence[Type], inits: Sequence[Value],
          pred: ir.Block) -> list[ir.PhiInstr]:
    phis = []
    for t, v in zip(types, inits, strict=True):
        for ty, part in zip(part_types(t), flatten(fe, v), strict=True):
            phi = fe.b.phi(ty)
            phi.add_incoming(part, pred)
            phis.append(phi)
    return phis


def _part_phis(fe: FunctionEmitter, types: Sequence[ir.Type], parts: Sequence[ir.Value],
               pred: ir.Block) -> list[ir.PhiInstr]:
    """One phi per flattened part (types from ``part_types``), entered with ``parts``."""
    phis = []
    for ty, part in zip(types, parts, strict=True):
        phi = fe.b.phi(ty)
        phi.add_incoming(part, pred)
        phis.append(phi)
    return phis


def _bind(fe: FunctionEmitter, targets: Sequence[Value], parts: Sequence[ir.Value]) -> None:
    """Bind ``targets`` (block args or op results) to flattened ``parts``."""
    i = 0
    for v in targets:
        n = n_parts(v.type)
        fe.set(v, unflatten(fe, v.type, parts[i:i + n]))
        i += n


def _terminator_values(fe: FunctionEmitter, block: Block, name: str) -> list[Value]:
    term = fe.emit_block(block)
    if term is None or term.name != name:
        raise InternalCompilerError(f"region must end in {name}, found "
                                    f"{term.name if term else 'nothing'}")
    return term.operand_values


def _forget_carried(fe: FunctionEmitter, op: Operation) -> None:
    """Buffers a loop carries or frees from outside may be gone in a later iteration."""
    outer = [d.buffer for d in op.walk() if isinstance(d, mem.DeallocOp)
             and not _defined_inside(op, d.buffer)]
    fe.allocs.forget(list(op.operand_values) + outer)


def _defined_inside(op: Operation, v: Value) -> bool:
    owner = v.owner
    if isinstance(owner, Block):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)


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
    _forget_carried(fe, op)
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
    _bind(fe, op.outputs, out)


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
    carried = _part_phis(fe, types, inits, pre)
    b.cbranch(b.icmp_signed("<", k, end), body, exit_)
    b.position_at_end(body)
    with fe.allocs.scope(), owning(fe, op.inits, op.iter_args, op.body.blocks[0], carried):
        fe.set(op.induction_var, iadd(b, lb, imul(b, k, step)))
        _bind(fe, op.iter_args, carried)
        yielded = _terminator_values(fe, op.body.blocks[0], "loop.yield")
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
    carried = _part_phis(fe, [p.type for p in inits], inits, pre)
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


# ------------------------------------------------------------------ loop.while


def _emit_while(fe: FunctionEmitter, op: loop.WhileOp) -> None:
    if op.attributes.get("poll") == "counted":
        _emit_counted_while(fe, op)
        return
    _forget_carried(fe, op)
    b = fe.b
    pre = b.block
    before, after, exit_ = (fe.new_block(n) for n in ("while.before", "while.after",
                                                     "while.exit"))
    b.branch(before)
    b.position_at_end(before)
    before_block = op.before.blocks[0]
    carried = _phis(fe, [a.type for a in before_block.args], op.inits, pre)
    with fe.allocs.scope():
        _bind(fe, before_block.args, carried)
        term = fe.emit_block(before_block)
        if not isinstance(term, loop.ConditionOp):
            raise InternalCompilerError("while's before-region must end in loop.condition")
        vals = term.values
        b.cbranch(fe.get(term.cond), after, exit_)
        b.position_at_end(after)
        for arg, v in zip(op.after.blocks[0].args, vals, strict=True):
            fe.set(arg, fe.values[v])
        args = op.after.blocks[0].args if vals == list(before_block.args) else []
        with fe.allocs.scope(), owning(fe, op.inits if args else [], args,
                                        op.after.blocks[0], carried):
            nxt = _terminator_values(fe, op.after.blocks[0], "loop.yield")
            parts = [p for v in nxt for p in flatten(fe, v)]
            if op.attributes.get("poll"):
                emit_poll.backedge(fe)
            for phi, part in zip(carried, parts, strict=True):
                phi.add_incoming(part, b.block)
            b.branch(before)
        b.position_at_end(exit_)
        for r, v in zip(op.outputs, vals, strict=True):
            fe.set(r, fe.values[v])
        _spend_while(fe, op)


def _spend_while(fe: FunctionEmitter, op: loop.WhileOp) -> None:
    """An unmarked ``while`` counts its trips like an unmarked ``for``: the ``bound`` a
    pass gave it, or a counted loop's counter advance (one bounded by array extents)."""
    if op.attributes.get("poll") or not emit_poll.counts_trips(op):
        return
    bound, info = op.attributes.get("bound"), counted(op)
    if bound is not None:  # at most that many ran
        emit_poll.spend(fe, i64(bound))
    elif info is not None:
        b = fe.b
        emit_poll.spend(fe, b.sub(fe.get(op.outputs[info.counter]),
                                  fe.get(op.inits[info.counter])))


def _emit_counted_while(fe: FunctionEmitter, op: loop.WhileOp) -> None:
    """A counted ``while`` compares its counter with a limit, a strip ahead, instead of
    ``n``; where that stops it, the condition is evaluated again with ``n`` and, if it
    holds, the loop polls, moves the limit and starts over from its header, whose
    second back-edge LLVM turns into an outer loop over strips
    (``interrupt_while.py``)."""
    info = counted(op)
    if info is None:
        raise InternalCompilerError("a while marked counted is not a counted loop")
    _forget_carried(fe, op)
    b, n = fe.b, fe.get(info.limit)
    span = i64(interrupt_while.STRIP * info.step)
    pre = b.block
    before, after, check, again, exit_ = (fe.new_block(f"counted.{s}") for s in (
        "before", "after", "check", "again", "exit"))
    lim0 = _limit(b, fe.get(op.inits[info.counter]), n, span)
    b.branch(before)
    b.position_at_end(before)
    block = op.before.blocks[0]
    carried = _phis(fe, [a.type for a in block.args], op.inits, pre)
    lim = b.phi(I64, name="limit")
    lim.add_incoming(lim0, pre)
    _bind(fe, block.args, carried)
    vals = _condition(fe, block, {info.limit: lim}, after, check)
    b.position_at_end(check)  # a strip's end, or the loop's
    _condition(fe, block, {}, again, exit_, keep=False)
    b.position_at_end(again)  # the same state again, with the next strip's limit
    with owning(fe, op.inits, op.after.blocks[0].args, op.after.blocks[0], carried):
        emit_poll.backedge(fe, interrupt_while.STRIP)
    lim.add_incoming(_limit(b, fe.get(block.args[info.counter]), n, span), b.block)
    for phi in carried:
        phi.add_incoming(phi, b.block)
    b.branch(before)
    b.position_at_end(after)
    for arg, v in zip(op.after.blocks[0].args, vals, strict=True):
        fe.set(arg, fe.values[v])
    with fe.allocs.scope(), owning(fe, op.inits, op.after.blocks[0].args,
                                    op.after.blocks[0], carried):
        nxt = _terminator_values(fe, op.after.blocks[0], "loop.yield")
        for phi, part in zip(carried, [p for v in nxt for p in flatten(fe, v)], strict=True):
            phi.add_incoming(part, b.block)
        lim.add_incoming(lim, b.block)
        b.branch(before)
    b.position_at_end(exit_)
    for r, v in zip(op.outputs, vals, strict=True):
        fe.set(r, fe.values[v])
    if emit_poll.counts_trips(op):
        emit_poll.spend(fe, b.sub(fe.get(op.outputs[info.counter]), fe.get(op.inits[info.counter])))


def _condition(fe: FunctionEmitter, block: Block, override: dict[Value, ir.Value],
               yes: ir.Block, no: ir.Block, keep: bool = True) -> list[Value]:
    """Emit ``block`` (a ``before`` region) with the values in ``override`` replaced and
    branch on its condition; ``keep=False`` restores what it bound (a second copy)."""
    saved = {v: fe.values.get(v) for v in override}
    inner = [r for op in block.ops for o in op.walk() for r in o.result_values]
    earlier = {r: fe.values.get(r) for r in inner} if not keep else {}
    fe.values.update(override)
    term = fe.emit_block(block)
    if not isinstance(term, loop.ConditionOp):
        raise InternalCompilerError("while's before-region must end in loop.condition")
    fe.b.cbranch(fe.get(term.cond), yes, no)
    for v, x in {**saved, **earlier}.items():
        fe.values[v] = x
    return term.values


def _limit(b: ir.IRBuilder, k: ir.Value, n: ir.Value, span: ir.Value) -> ir.Value:
    """``k + min(n - k, span)``: ``min(n, k + span)`` without overflow."""
    left = b.sub(n, k)
    return b.add(k, b.select(b.icmp_signed("<", left, span), left, span))


# ------------------------------------------------------------------ loop.if


def _emit_if(fe: FunctionEmitter, op: loop.IfOp) -> None:
    b = fe.b
    then_bb, else_bb, merge = (fe.new_block(n) for n in ("if.then", "if.else", "if.end"))
    b.cbranch(fe.get(op.cond), then_bb, else_bb)
    incoming: list[tuple[ir.Block, list[ir.Value]]] = []
    for region, bb in ((op.then_region, then_bb), (op.else_region, else_bb)):
        b.position_at_end(bb)
        with fe.allocs.scope():
            vals = _terminator_values(fe, region.blocks[0], "loop.yield")
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
    _bind(fe, op.outputs, parts)


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
    loop.WhileOp: _emit_while,
    loop.IfOp: _emit_if,
    func.AssertOp: _emit_assert,
}
"""``{op class: emit function}`` for structured control flow and run-time checks."""
