"""Emitter of ``loop.while``: a header evaluating the ``before`` region, a body, an exit.

A ``while`` marked ``poll = "counted"`` by ``interrupt-while`` (a counted loop: a counter
compared with a limit) compares its counter with a limit a strip ahead instead, and polls
for Ctrl-C once per strip (``interrupt_while.py``).  Unmarked loops count their trips on
exit like ``loop.for`` (``emit_poll.counts_trips``).
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm import emit_poll
from pyasc.backend.llvm.codegen import FunctionEmitter, flatten
from pyasc.backend.llvm.emit_carried import bind, forget_carried, phis, terminator_values
from pyasc.backend.llvm.lltypes import I64, i64
from pyasc.backend.llvm.loop_buffers import owning
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Block, Value
from pyasc.ir.ops import loop
from pyasc.ir.passes import interrupt_while
from pyasc.ir.passes.interrupt_while import counted


def emit_while(fe: FunctionEmitter, op: loop.WhileOp) -> None:
    """Emit ``op`` (module docstring)."""
    if op.attributes.get("poll") == "counted":
        _emit_counted_while(fe, op)
        return
    forget_carried(fe, op)
    b = fe.b
    pre = b.block
    before, after, exit_ = (fe.new_block(n) for n in ("while.before", "while.after",
                                                     "while.exit"))
    b.branch(before)
    b.position_at_end(before)
    before_block = op.before.blocks[0]
    carried = phis(fe, [a.type for a in before_block.args], op.inits, pre)
    with fe.allocs.scope():
        bind(fe, before_block.args, carried)
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
            nxt = terminator_values(fe, op.after.blocks[0], "loop.yield")
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
    forget_carried(fe, op)
    b, n = fe.b, fe.get(info.limit)
    span = i64(interrupt_while.STRIP * info.step)
    pre = b.block
    before, after, check, again, exit_ = (fe.new_block(f"counted.{s}") for s in (
        "before", "after", "check", "again", "exit"))
    lim0 = _limit(b, fe.get(op.inits[info.counter]), n, span)
    b.branch(before)
    b.position_at_end(before)
    block = op.before.blocks[0]
    carried = phis(fe, [a.type for a in block.args], op.inits, pre)
    lim = b.phi(I64, name="limit")
    lim.add_incoming(lim0, pre)
    bind(fe, block.args, carried)
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
        nxt = terminator_values(fe, op.after.blocks[0], "loop.yield")
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
