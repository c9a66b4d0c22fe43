"""Parallel loops: the iteration range of a ``loop.for`` split over the thread pool.

The outermost splittable loop of a function (see :func:`splits`) is *outlined*: its body
becomes an internal function running iterations ``[lo, hi)`` of ``[0, trip count)``::

    i32 @<fn>.parallel<k>.body(i64 lo, i64 hi, ptr ctx)      ; loads ctx, calls:
    i32 @<fn>.parallel<k>(i64 lo, i64 hi, <live-in parts>)   ; noinline

and the loop itself becomes ``rc = pyasc.rt.parallel_for(body, ctx, trip count, cost,
state)`` followed by the usual error propagation (``pool.py`` has that function's
contract; ``state`` is the kernel's poll state when the loop polls for Ctrl-C, else
NULL, and the outlined body then starts its own from the caller's snap, the last field
of ``ctx``: ``emit_poll.py``).
``ctx`` is a stack struct of the SSA parts of every value the body uses from outside
(scalars; memref data pointers, dims and strides), minus compile-time constants and
globals, which the body refers to directly.  The inner function takes those parts as
parameters, so a result buffer that is ``noalias`` in the kernel's core stays
``noalias`` there and LLVM optimizes the body as before (no run-time overlap checks,
constants folded into addresses).  It is kept out of line (one more call per chunk):
inlined, its ``noalias`` parameters would become scope metadata plus
``llvm.experimental.noalias.scope.decl`` calls, for no gain.

Why outlining plus a pool entry in libc-pthread LLVM IR: the body needs no GIL (the
kernels' entries already release it), the pool persists across calls (creating a
thread costs tens of microseconds, more than a small loop), and nothing but llvmlite
is needed at build time.  ``cost`` is a static estimate of one iteration's work (in
roughly scalar operations, ``pyasc.ir.passes.loop_cost``); the pool runs loops with
``trip count * cost`` below its minimum work (``2**18`` by default, about 30 us of
scalar work) inline on the calling thread, so tiny kernels pay one direct call.

Determinism: every iteration computes exactly what it computes sequentially (chunking
does not change an iteration's code or inputs), ``parallel = true`` loops write
disjoint elements, and the error returned is the first failing iteration's (see
``pool.py``), with that iteration's values in the error record (``errrecord.py``: the
body gets the record's address in ``ctx`` and its iteration counter is the key).  An
interrupted call (Ctrl-C) is the exception: which iterations ran then depends on the
threads, as the arrays it was writing may be partially written anyway.
Loops that carry values (reductions) are never split.  A loop that frees a buffer
defined outside it is not split either.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from pyasc.backend.llvm import emit_poll
from pyasc.backend.llvm.codegen import FunctionEmitter, flatten, unflatten
from pyasc.backend.llvm.lltypes import I32, I64, PTR, i64, opaque
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import loop
from pyasc.ir.passes.loop_cost import iteration_cost
from pyasc.ir.passes.parallel_safe import splittable
from pyasc.runtime.threads import ENTRY

EmitRange = Callable[[FunctionEmitter, loop.ForOp, ir.Value, ir.Value, ir.Value, ir.Value],
                     None]
"""``emit_range(fe, op, lb, step, first, end)``: the loop over ``k`` in ``[first, end)``."""



def splits(fe: FunctionEmitter, op: loop.ForOp) -> bool:
    """Whether ``op`` is emitted as a parallel loop: not nested in one, and
    ``splittable`` (``pyasc.ir.passes.parallel_safe``: no carried values, marked
    ``parallel`` or proved independent, no failure that could expose which later
    iterations ran, not freeing a buffer it does not define)."""
    return not fe.in_parallel and splittable(op)


def emit_parallel(fe: FunctionEmitter, op: loop.ForOp, lb: ir.Value, step: ir.Value,
                  trips: ir.Value, emit_range: EmitRange) -> None:
    """Emit ``op`` (for which :func:`splits` holds) as a call of the pool."""
    captured = [(v, flatten(fe, v)) for v in live_ins(op)]
    record = [fe.error_record] if fe.error_record is not None else []
    fields = _fields([lb, step, *record] + [p for _, parts in captured for p in parts])
    polls = emit_poll.polls_in(op)
    if polls:  # the chunks poll against the epoch this call has seen
        fields.append(emit_poll.snap(fe))
    ctx_type = ir.LiteralStructType([p.type for p in fields])
    ctx = fe.entry_alloca(ctx_type)
    for k, part in enumerate(fields):
        fe.b.store(part, _field(fe.b, ctx, ctx_type, k))
    inner = _emit_inner(fe, op, captured, fields, (lb, step), emit_range, polls)
    body = _emit_reader(fe, inner, fields, ctx_type)
    pool = fe.mc.function(ENTRY, I32, [PTR, PTR, I64, I64, PTR], ("nounwind",))
    state = emit_poll.state(fe) if polls else ir.Constant(PTR, None)
    rc = fe.b.call(pool, [body, ctx, trips, i64(iteration_cost(op)), state])
    fe.propagate(rc)


def live_ins(op: Operation) -> list[Value]:
    """Values used inside ``op``'s regions but defined outside, in first-use order."""
    seen: dict[Value, None] = {}
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operand_values:
            if v not in seen and not _inside(op, v):
                seen[v] = None
    return list(seen)


def _inside(op: Operation, v: Value) -> bool:
    owner = v.owner
    if isinstance(owner, Block):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)


def _local(part: ir.Value) -> bool:
    """A value of the emitting function (constants and globals are module-wide)."""
    return isinstance(part, (ir.Instruction, ir.Argument))


def _fields(parts: list[ir.Value]) -> list[ir.Value]:
    out: dict[int, ir.Value] = {}
    for p in parts:
        if _local(p):
            out.setdefault(id(p), p)
    return list(out.values())


def _field(b: ir.IRBuilder, ctx: ir.Value, ty: ir.LiteralStructType, k: int) -> ir.Value:
    return b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                 source_etype=ty)


def _emit_inner(fe: FunctionEmitter, op: loop.ForOp, captured: list, fields: list,
                lb_step: tuple[ir.Value, ir.Value], emit_range: EmitRange,
                polls: bool) -> ir.Function:
    """``i32 inner(lo, hi, fields...)``: iterations ``[lo, hi)`` of ``op``; with
    ``polls`` the last field is the caller's snap, the start of the chunk's own poll
    state (chunks run on other threads)."""
    module = fe.mc.module
    fnty = ir.FunctionType(I32, [I64, I64] + [p.type for p in fields])
    fn = ir.Function(module, fnty, name=module.get_unique_name(f"{fe.fn.name}.parallel"))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # see the module docstring
    remap = {id(p): arg for p, arg in zip(fields, fn.args[2:], strict=True)}
    for p, arg in zip(fields, fn.args[2:], strict=True):
        if isinstance(p, ir.Argument) and "noalias" in p.attributes:
            arg.add_attribute("noalias")
    inner = FunctionEmitter(fe.mc, fn, fe.emitters)
    inner.in_parallel = True
    inner.prealloc = fe.prealloc
    if fe.error_record is not None:
        inner.error_record = remap.get(id(fe.error_record), fe.error_record)
    if polls:
        inner.polling = True
        inner.poll_state = emit_poll.new_state(inner, fn.args[-1])
    for v, parts in captured:
        inner.set(v, unflatten(inner, v.type, [remap.get(id(p), p) for p in parts]))
    lb, step = (remap.get(id(x), x) for x in lb_step)
    emit_range(inner, op, lb, step, fn.args[0], fn.args[1])
    inner.b.ret(ir.Constant(I32, 0))
    return fn


def _emit_reader(fe: FunctionEmitter, inner: ir.Function, fields: list,
                 ctx_type: ir.LiteralStructType) -> ir.Function:
    """``i32 body(lo, hi, ctx)``: load the fields, call ``inner``."""
    fn = ir.Function(fe.mc.module, ir.FunctionType(I32, [I64, I64, PTR]),
                     name=inner.name + ".body")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # called by the pool only
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lo, hi, ctx = fn.args
    loaded = [b.load(_field(b, ctx, ctx_type, k), typ=p.type) for k, p in enumerate(fields)]
    b.ret(b.call(inner, [lo, hi, *loaded]))
    return opaque(fn)
