"""Control flow of scalar kernels: ``loop.for/while/if`` as C++ loops and branches.

Loop-carried values live in mutable variables declared before the loop (arrays in
carrier arrays, ``emit_carry``); a ``yield`` first copies every yielded value into a
temporary and then assigns, so swaps (``a, b = b, a``) are correct.  The loop a kernel
splits across blocks iterates over its block's contiguous chunk of the trip count
(``GetBlockIdx``/``GetBlockNum``).  Region bodies are emitted through the context
(``em.block_op``), so this module never imports the kernel emitter (``emit_scalar``).
"""

from __future__ import annotations

from pyasc.backend.ascendc import emit_carry as carry
from pyasc.backend.ascendc.emit_carry import Target
from pyasc.backend.ascendc.scalar_context import Emit, ScalarContext, c_mul
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import loop
from pyasc.ir.rewrite import constant_value


def _assign(em: ScalarContext, targets: list[Target], values: list[Value],
            op: Operation) -> None:
    pairs = carry.assign(em, targets, values, op)
    targets = [t for t, _ in pairs]  # type: ignore[misc]
    values = [v for _, v in pairs]
    srcs = [em.get(v) for v in values]
    if len(targets) > 1 and set(srcs) & set(targets):
        temps = []
        for t, v, s in zip(targets, values, srcs, strict=True):
            name = em.names.new(t + "_next")
            em.w.line(f"const {ctype(v.type)} {name} = {s};", op.loc,  # type: ignore[arg-type]
                      directive=False)
            temps.append(name)
        srcs = temps
    for t, s in zip(targets, srcs, strict=True):
        if t != s:
            em.w.line(f"{t} = {s};", op.loc, directive=False)


def _body(em: ScalarContext, block, targets: list[Target]) -> None:  # noqa: ANN001
    """Emit a region's ops; its ``loop.yield`` assigns ``targets``.  Workspace slices
    taken in the region are given back at its end (nothing allocated there escapes)."""
    mark = None
    if any(op.name == "mem.alloc" and op.result in em.k.arena for op in block.ops):
        mark = em.names.new("arenaMark")
        em.w.line(f"const int64_t {mark} = arenaTop;")
    for op in block.ops:
        if isinstance(op, loop.YieldOp):
            if mark is not None:
                em.w.line(f"arenaTop = {mark};")
            _assign(em, targets, op.operand_values, op)
        else:
            em.block_op(op)


def _cond(iv: str, ub: str, step_v: Value, step: str) -> str:
    c = constant_value(step_v)
    if isinstance(c, int):
        return f"{iv} < {ub}" if c > 0 else f"{iv} > {ub}"
    return f"({step} > 0 ? {iv} < {ub} : {iv} > {ub})"


def emit_for(em: ScalarContext, op: Operation) -> None:
    assert isinstance(op, loop.ForOp)
    lb, ub, step = (em.get(v) for v in (op.lower, op.upper, op.step))
    carried = [carry.slot(em, r, init, "acc", op) for r, init in zip(op.outputs, op.inits,
                                                                      strict=True)]
    body = op.body.blocks[0]
    for arg, target in zip(body.args[1:], carried, strict=True):
        carry.bind(em, arg, target)
    iv = em.names.new(body.args[0].name_hint or "i")
    em.vals[body.args[0]] = iv
    if op is em.k.parallel:
        _parallel_head(em, op, iv, lb, ub, step)
        return
    head = f"for (int64_t {iv} = {lb}; {_cond(iv, ub, op.step, step)}; {iv} += {step})"
    with em.w.block(head, op.loc, directive=False):
        _body(em, body, carried)


def _parallel_head(em: ScalarContext, op: loop.ForOp, iv: str, lb: str, ub: str,
                   step: str) -> None:
    w = em.w
    trip = em.names.new("trip")
    count = _trip_count(lb, ub, step)
    w.line(f"const int64_t {trip} = {count};", op.loc, directive=False)
    w.line(f"const int64_t {trip}PerBlock = ({trip} + GetBlockNum() - 1) / GetBlockNum();  "
           "// iterations are independent: each block runs a chunk")
    if em.k.split_rows:
        _line_chunks(em, op, trip, lb, step)
    else:
        w.line(f"const int64_t {trip}Begin = GetBlockIdx() * {trip}PerBlock;")
        w.line(f"const int64_t {trip}End = {trip} < {trip}Begin + {trip}PerBlock ? {trip} : "
               f"{trip}Begin + {trip}PerBlock;")
    k = em.names.new("k")
    with w.block(f"for (int64_t {k} = {trip}Begin; {k} < {trip}End; ++{k})", op.loc,
                 directive=False):
        w.line(f"const int64_t {iv} = {lb} + {k} * {step};")
        _body(em, op.body.blocks[0], [])


def _line_chunks(em: ScalarContext, op: loop.ForOp, trip: str, lb: str, step: str) -> None:
    """``<trip>Begin/End``: the block's chunk, its ends moved to the next iteration whose
    rows start a 64-byte line of every GM array the loop writes (``k.split_rows``), so
    no two blocks write one line; with no such iteration block 0 runs them all."""
    w, c = em.w, em.names.new("c")
    em.helpers.add("lines")
    neg = constant_value(op.step)
    # the first row of the later chunk (step > 0), or one past its highest row (step < 0)
    row = f"{lb} + {c} * {step}"
    row = row if isinstance(neg, int) and neg > 0 else \
        f"{row} + 1" if isinstance(neg, int) else f"({step} > 0 ? {row} : {row} + 1)"
    size = f"({step} < 0 ? -{step} : {step})" if not isinstance(neg, int) else str(abs(neg))
    starts, grains = [], []
    for buf, axis in em.k.split_rows:
        d = em.mems[buf]
        rows = c_mul(d.strides[axis], str(d.elem.itemsize))
        starts.append(f"PyascLineStart({c_mul(row, rows)})")
        if axis > 0:  # each outer row holds a piece of the chunk: it must start a line too
            starts.append(f"PyascLineStart({c_mul(d.strides[axis - 1], str(d.elem.itemsize))})")
        grains.append(c_mul(size, rows))
    w.line(f"int64_t {trip}First = {trip};  // the first iteration after 0 starting a line "
           "of every GM array the loop writes (data caches write back whole lines)")
    with w.block(f"for (int64_t {c} = 1; {c} <= 64 && {c} < {trip}; ++{c})"):
        with w.block(f"if ({' && '.join(starts)})"):
            w.line(f"{trip}First = {c};")
            w.line("break;")
    w.line(f"int64_t {trip}Grain = 1;")
    for g in grains:
        w.line(f"{trip}Grain = PyascLineGrain({trip}Grain, {g});")
    for end, at in (("Begin", "GetBlockIdx()"), ("End", "(GetBlockIdx() + 1)")):
        w.line(f"const int64_t {trip}{end} = PyascLineAlign({at} * {trip}PerBlock, "
               f"{trip}First, {trip}Grain, {trip});")


def _trip_count(lb: str, ub: str, step: str) -> str:
    """C++ for ``len(range(lb, ub, step))``, folded where the operands are literals."""
    def lit(x: str) -> bool:
        return x.lstrip("-").isdigit()

    if lit(lb) and lit(ub) and lit(step):
        a, b, c = int(lb), int(ub), int(step)
        return str(len(range(a, b, c)))
    if lit(step):
        c = int(step)
        lo, hi = (lb, ub) if c > 0 else (ub, lb)
        span = hi if lo == "0" else f"{hi} - {lo}"
        per = abs(c)
        body = span if per == 1 else f"({span} + {per - 1}) / {per}"
        return f"{hi} > {lo} ? {body} : 0"
    return (f"{step} > 0 ? ({ub} > {lb} ? ({ub} - {lb} + {step} - 1) / {step} : 0) : "
            f"({lb} > {ub} ? ({lb} - {ub} - {step} - 1) / (-{step}) : 0)")


def emit_while(em: ScalarContext, op: Operation) -> None:
    assert isinstance(op, loop.WhileOp)
    before, after = op.before.blocks[0], op.after.blocks[0]
    args = [carry.slot(em, a, init, "arg", op) for a, init in zip(before.args, op.inits,
                                                                  strict=True)]
    results = [carry.slot(em, r, None, "res", op) for r in op.outputs]
    for a, target in zip(after.args, results, strict=True):
        carry.bind(em, a, target)
    with em.w.block("while (true)", op.loc, directive=False):
        for inner in before.ops:
            if isinstance(inner, loop.ConditionOp):
                cond, *vals = inner.operand_values
                _assign(em, results, vals, inner)
                em.w.line(f"if (!({em.get(cond)})) break;", inner.loc, directive=False)
            else:
                em.block_op(inner)
        _body(em, after, args)


def emit_if(em: ScalarContext, op: Operation) -> None:
    assert isinstance(op, loop.IfOp)
    results = [carry.slot(em, r, None, "res", op) for r in op.outputs]
    with em.w.block(f"if ({em.get(op.cond)})", op.loc, directive=False):
        _body(em, op.then_region.blocks[0], results)
    else_block = op.else_region.blocks[0]
    if else_block.ops and (results or len(else_block.ops) > 1):
        # a versioned loop split across blocks: the unchanged loop (the checks failed
        # before it) runs whole, in block 0 only, and raises where it always did
        guard = " if (GetBlockIdx() == 0)" if em.k.parallel is not None and \
            op.then_region.blocks[0].ancestor_of(em.k.parallel) is not None else ""
        with em.w.block(f"else{guard}"):
            _body(em, else_block, results)


CONTROL_EMITTERS: dict[type, Emit] = {
    loop.ForOp: emit_for, loop.WhileOp: emit_while, loop.IfOp: emit_if,
}
