"""Polls for Ctrl-C in generated loops: a countdown per function, a runtime call when
it runs out (the runtime side is ``interrupt_rt.py``, the Python side
``pyasc.runtime.interrupt``).

Loops the ``interrupt-poll`` pass marked ``poll`` end each iteration with::

    budget -= 1
    if budget <= 0:                       ; marked unlikely
        budget = BUDGET
        rc = pyasc.rt.poll(state)         ; 0 or ERR_INTERRUPT
        if rc: free the live temporaries, return rc

and, in a function that polls, an unmarked loop right inside a marked one (or at the
top of the function) subtracts its trip count on exit, so the countdown measures work
(iterations of the loops inside, too) and a poll comes every :data:`BUDGET` iterations
or so, whatever the nest looks like.  (Loops inside unmarked loops count nothing: the
small constant nests the pass leaves unmarked are unrolled and vectorized with the loop
around them, which a counter there would disturb.)  ``budget`` is a stack
slot nothing else sees, so LLVM keeps it in a register: a marked iteration costs a
decrement and a predictable branch, an unmarked loop one subtraction.

``state`` is the call's ``{snap, budget}``: the epoch the call has seen and the
countdown handed to and from internal callees (``pyasc.fn.*`` take it as their last
parameter).  The kernel's core creates it on entry (one ``pyasc.rt.epoch()`` call, in
kernels that poll or call functions); the outlined body of a parallel loop makes its
own from the caller's snap, because it runs on other threads.

The call goes through ``pyasc.poll``, a stub of the module that saves every register
(``preserve_allcc``): the rarely taken call then costs the loop no spills (measured: a
sort's outer loops were ~5% slower calling the runtime directly).  ``poll`` and
``epoch`` are declared to touch only their argument and memory the kernel cannot see
(``memory(argmem: readwrite, inaccessiblemem: readwrite)``): they clobber none of the
kernel's loads and stores, so LLVM optimizes around them as before.  The price: a
Python signal handler run by ``poll`` must not change or free arrays that the running
kernel uses.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm import poll_stub
from pyasc.backend.llvm.codegen import FunctionEmitter
from pyasc.backend.llvm.jit import host_cpu
from pyasc.backend.llvm.lltypes import I32, I64, PTR, i64
from pyasc.ir.core import Operation
from pyasc.ir.ops import loop
from pyasc.runtime.interrupt import SYMBOLS

BUDGET = 1 << 18
"""Iterations between two polls (~0.1-1 ms of scalar work; a poll costs ~10 ns)."""

STRIP = 1 << 12
"""Iterations per strip of a loop marked ``poll = "strips"``."""

STATE = ir.LiteralStructType([I64, I64])
"""``{i64 snap, i64 budget}``."""

_EFFECTS = "memory(argmem: readwrite, inaccessiblemem: readwrite)"
_SIGNATURES = {"poll": (I32, [PTR]), "epoch": (I64, [])}


def polls_in(op: Operation) -> bool:
    """Whether ``op`` or an op inside it is a loop marked ``poll``."""
    return any(inner.attributes.get("poll") for inner in op.walk())


def has_loops(op: Operation) -> bool:
    """Whether ``op`` contains a loop (an internal callee then counts its trips)."""
    return any(isinstance(inner, (loop.ForOp, loop.WhileOp)) for inner in op.walk())


def _runtime(fe: FunctionEmitter, role: str) -> ir.Function:
    name = SYMBOLS[role]
    existing = fe.mc.module.globals.get(name)
    if existing is not None:
        return existing
    ret, params = _SIGNATURES[role]
    fn = ir.Function(fe.mc.module, ir.FunctionType(ret, params), name=name)
    fn.attributes.add("nounwind")
    # llvmlite's list of function attributes predates memory(...): add it unchecked
    set.add(fn.attributes, _EFFECTS)
    return fn


def _poll_stub(fe: FunctionEmitter) -> ir.Function:
    """``pyasc.poll``: calls ``pyasc.rt.poll`` and keeps every register the caller may
    hold values in (``preserve_allcc``; how, per machine: ``poll_stub``), so values the
    loop keeps in registers stay there across the rarely taken call instead of being
    spilled around it in the hot path."""
    module = fe.mc.module
    existing = module.globals.get(poll_stub.NAME)
    if existing is not None:
        return existing
    how = poll_stub.kind(host_cpu()[1])
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), name=poll_stub.NAME)
    if how != "c":
        fn.calling_convention = "preserve_allcc"
    for attribute in ("nounwind", "noinline", "cold"):
        fn.attributes.add(attribute)
    set.add(fn.attributes, _EFFECTS)  # as the runtime's poll (see _runtime)
    if how == "asm":  # a declaration here, defined by the module's assembly
        fe.mc.module_asm.append(poll_stub.x86_64_stub(_runtime(fe, "poll").name))
        return fn
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(_runtime(fe, "poll"), [fn.args[0]]))
    return fn


def _field(b: ir.IRBuilder, state: ir.Value, k: int) -> ir.Value:
    return b.gep(state, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                 source_etype=STATE)


def new_state(fe: FunctionEmitter, snap: ir.Value) -> ir.Value:
    """A fresh ``{snap, BUDGET}`` on ``fe``'s stack, set on function entry."""
    slot = fe.entry_alloca(STATE)
    b = fe.entry_builder()
    b.store(snap, _field(b, slot, 0), align=8)
    b.store(i64(BUDGET), _field(b, slot, 1), align=8)
    return slot


def state(fe: FunctionEmitter) -> ir.Value:
    """The call's poll state, created on entry of a kernel's core when first needed."""
    if fe.poll_state is None:
        snap = fe.entry_builder().call(_runtime(fe, "epoch"), [])
        fe.poll_state = new_state(fe, snap)
    return fe.poll_state


def snap(fe: FunctionEmitter) -> ir.Value:
    """The epoch the call has seen (for a parallel loop's outlined body)."""
    return fe.b.load(_field(fe.b, state(fe), 0), typ=I64, align=8)


def _budget(fe: FunctionEmitter) -> ir.Value:
    if fe.poll_budget is None:
        st = state(fe)
        slot = fe.entry_alloca(I64)
        b = fe.entry_builder()
        b.store(b.load(_field(b, st, 1), typ=I64, align=8), slot, align=8)
        fe.poll_budget = slot
    return fe.poll_budget


def backedge(fe: FunctionEmitter, weight: int = 1) -> None:
    """Count ``weight`` iterations; poll when the countdown runs out (module
    docstring)."""
    b = fe.b
    slot = _budget(fe)
    left = b.sub(b.load(slot, typ=I64, align=8), i64(weight))
    b.store(left, slot, align=8)
    slow, cont = fe.new_block("poll"), fe.new_block("polled")
    b.cbranch(b.icmp_signed("<=", left, i64(0)), slow, cont).set_weights([1, 1 << 20])
    b.position_at_end(slow)
    b.store(i64(BUDGET), slot, align=8)
    rc = b.call(_poll_stub(fe), [state(fe)])
    fe.exit_unless(b.icmp_signed("==", rc, ir.Constant(I32, 0)), rc)
    b.branch(cont)
    b.position_at_end(cont)


def counts_trips(op: Operation) -> bool:
    """Whether the unmarked loop ``op`` counts its trips (see the module docstring)."""
    parent = op.parent_op
    while parent is not None and not isinstance(parent, (loop.ForOp, loop.WhileOp)):
        parent = parent.parent_op
    return parent is None or parent.attributes.get("poll") == "backedge"


def spend(fe: FunctionEmitter, count: ir.Value) -> None:
    """Count ``count`` iterations (in functions that poll)."""
    if not fe.polling:
        return
    b = fe.b
    slot = _budget(fe)
    b.store(b.sub(b.load(slot, typ=I64, align=8), count), slot, align=8)


def before_call(fe: FunctionEmitter) -> ir.Value:
    """The state to pass to an internal callee, holding this function's countdown."""
    st = state(fe)
    if fe.polling:
        fe.b.store(fe.b.load(_budget(fe), typ=I64, align=8), _field(fe.b, st, 1), align=8)
    return st


def after_call(fe: FunctionEmitter) -> None:
    """Take the countdown back from the state after an internal call returned."""
    if fe.polling:
        b = fe.b
        b.store(b.load(_field(b, state(fe), 1), typ=I64, align=8), _budget(fe), align=8)


def before_return(fe: FunctionEmitter) -> None:
    """An internal callee hands its countdown back to its caller."""
    if fe.poll_budget is not None:
        b = fe.b
        b.store(b.load(fe.poll_budget, typ=I64, align=8), _field(b, state(fe), 1), align=8)
