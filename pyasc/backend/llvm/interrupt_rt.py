"""The runtime half of interrupting kernels (SIGINT), in LLVM IR, in the pool's module.

Compiled kernels poll (``emit_poll.py``); this module decides.  Its pieces:

``epoch``
    A counter bumped by the SIGINT hook (and once more when a call starts unwinding).
    Each kernel call reads it once into its *poll state* (``{snap, budget}`` on its
    stack); a poll whose ``snap`` differs from ``epoch`` takes the slow path.

``i64 pyasc.rt.epoch()`` / ``i32 pyasc.rt.poll(ptr state)``
    What kernels call: the epoch at call start, and the slow path every ``BUDGET``
    iterations.  ``poll`` returns 0 (continue) or ``ERR_INTERRUPT`` (unwind):

    * on Python's main thread, when the epoch moved: take the GIL, run the pending
      Python signal handlers (``PyErr_CheckSignals``, exactly what the interpreter does
      between bytecodes), release the GIL.  A handler that raised (``KeyboardInterrupt``
      from Python's default handler, or anything a user's handler raises) is fetched
      into the *stash*, the epoch is bumped once more and the call unwinds; a handler
      that returned lets the kernel go on, as interpreted code would;
    * on any other thread: unwind only as a pool worker running a chunk of the main
      thread's loop while the main thread unwinds (stash set); everything else goes
      on, as Python delivers signals to the main thread only;
    * on the main thread, at most every ``VERIFY_NS``: make sure the hook is installed
      (see below); if it had to be (re)installed, run the handlers once, so a SIGINT
      that arrived meanwhile is not missed.

the hook
    A C-level SIGINT handler chained in front of the one the process had: it calls the
    previous handler first (CPython's, which marks the signal pending for Python), then
    bumps ``epoch``.  It is installed lazily by the main thread's first slow poll (short
    kernels never pay anything), never over ``SIG_IGN`` or ``SIG_DFL`` (a program that
    ignores SIGINT, or asked for the default action, keeps it), and re-installed after
    ``signal.signal`` replaced it (IPython and Jupyter do that around every cell).  The
    Python-level handler table is untouched: ``signal.getsignal`` answers as before.

the stash
    The exception a handler raised, as ``PyErr_Fetch`` left it; the Python runtime takes
    it (``pyasc.rt.interrupt_take``) and raises it at the user's call.

Linux only (glibc's ``struct sigaction`` layout, ``CLOCK_MONOTONIC_COARSE``); elsewhere
the runtime never configures the main thread, so no thread takes the main-thread path.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm.lltypes import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    Callee,
    cold_function,
    declare,
    i64,
    opaque,
    store_atomic,
)
from pyasc.runtime.abi import ERR_INTERRUPT
from pyasc.runtime.interrupt import API_FUNCTIONS, SYMBOLS

SIGINT = 2
SA_SIGINFO = 4
SIG_IGN = 1
CLOCK_MONOTONIC_COARSE = 6
VERIFY_NS = 100_000_000
"""Least time between two checks that the hook is installed (one ``sigaction`` call,
~0.3 us, on the main thread only)."""

_SIGACTION_BYTES = 152  # glibc on x86-64 and aarch64: handler, mask[128], flags, restorer
_FLAGS_OFFSET = 136
_LIBC = {"sigaction": (I32, [I32, PTR, PTR]), "pthread_self": (I64, []),
         "clock_gettime": (I32, [I32, PTR])}
_API_TYPES = {"PyGILState_Ensure": ir.FunctionType(I32, []),
              "PyGILState_Release": ir.FunctionType(ir.VoidType(), [I32]),
              "PyErr_CheckSignals": ir.FunctionType(I32, []),
              "PyErr_Fetch": ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR])}
STOP = ir.Constant(I32, ERR_INTERRUPT)
GO = ir.Constant(I32, 0)


class PoolView:
    """What the interrupt code reads of the pool: the thread that published the
    current job, the worker thread handles and how many were started."""

    def __init__(self, origin: ir.Value, threads: ir.Value, started: ir.Value,
                 max_threads: int) -> None:
        self.origin, self.threads, self.started = origin, threads, started
        self.max_threads = max_threads


class InterruptRuntime:
    """Adds the interrupt globals and functions to ``module`` (the pool's)."""

    def __init__(self, module: ir.Module, pool: PoolView) -> None:
        self.module, self.pool = module, pool
        self.epoch = self._global("epoch", I64, align=64)  # own cache line
        self.main = self._global("main", I64)
        self.api = self._global("api", ir.ArrayType(PTR, len(API_FUNCTIONS)))
        self.stash = self._global("stash", ir.ArrayType(PTR, 3))
        self.prev = self._global("prev", I64)  # previous handler | 1 if SA_SIGINFO
        self.verified = self._global("verified", I64)  # coarse ns of the last check
        self.libc = {n: declare(self.module, n, r, p) for n, (r, p) in _LIBC.items()}
        self.hook = self._hook()
        self.verify = self._verify()
        self.handlers = self._run_handlers()
        self.is_worker = self._is_worker()
        self._epoch_fn()
        self.poll = self._poll()
        self._configure()
        self._take()
        self._hooked()

    # -- module pieces (the pool module's conventions)
    def _global(self, name: str, ty: ir.Type, align: int = 8) -> ir.GlobalVariable:
        g = ir.GlobalVariable(self.module, ty, name=f"interrupt.{name}")
        g.linkage, g.initializer, g.align = "internal", ir.Constant(ty, None), align
        g.type = PTR
        return g

    def _slot(self, b: ir.IRBuilder, array: ir.Value, k: int | ir.Value, n: int) -> ir.Value:
        k = i64(k) if isinstance(k, int) else k
        return b.gep(array, [i64(0), k], inbounds=True, source_etype=ir.ArrayType(PTR, n))

    def _api(self, b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
        index = API_FUNCTIONS.index(name)
        ptr = b.load(self._slot(b, self.api, index, len(API_FUNCTIONS)), typ=PTR, align=8)
        return b.call(Callee(ptr, _API_TYPES[name]), list(args))

    def _self_is_main(self, b: ir.IRBuilder) -> ir.Value:
        main = b.load_atomic(self.main, "monotonic", 8, typ=I64)
        me = b.call(self.libc["pthread_self"], [])
        return b.and_(b.icmp_unsigned("!=", main, i64(0)), b.icmp_unsigned("==", me, main))

    def _stashed(self, b: ir.IRBuilder) -> ir.Value:
        first = b.load_atomic(self._slot(b, self.stash, 0, 3), "monotonic", 8, typ=PTR)
        return b.icmp_unsigned("!=", first, ir.Constant(PTR, None))

    def _bump(self, b: ir.IRBuilder) -> None:
        b.atomic_rmw("add", self.epoch, i64(1), "seq_cst")

    # -- the functions
    def _hook(self) -> ir.Function:
        """``void hook(int sig, siginfo_t *info, void *uctx)``: the previous handler
        first (so Python's pending flag is set when a poll sees the epoch move), then
        the epoch.  Async-signal-safe: loads, calls, one atomic add."""
        fn, b = cold_function(self.module, "interrupt.hook", ir.VoidType(), [I32, PTR, PTR])
        sig, info, uctx = fn.args
        word = b.load_atomic(self.prev, "acquire", 8, typ=I64)
        target = b.inttoptr(b.and_(word, i64(~1)), PTR)
        three, one, done = (fn.append_basic_block(s) for s in ("siginfo", "plain", "done"))
        has_target = fn.append_basic_block("chain")
        b.cbranch(b.icmp_unsigned("==", word, i64(0)), done, has_target)
        b.position_at_end(has_target)
        b.cbranch(b.trunc(word, I1), three, one)
        b.position_at_end(three)
        b.call(Callee(target, ir.FunctionType(ir.VoidType(), [I32, PTR, PTR])),
               [sig, info, uctx])
        b.branch(done)
        b.position_at_end(one)
        b.call(Callee(target, ir.FunctionType(ir.VoidType(), [I32])), [sig])
        b.branch(done)
        b.position_at_end(done)
        self._bump(b)
        b.ret_void()
        return fn

    def _verify(self) -> ir.Function:
        """``i1 verify()``: install the hook in front of the current SIGINT handler
        unless it is already there, ``SIG_DFL`` (0) or ``SIG_IGN``; true if it had to.
        Called on the main thread only, which is the thread ``signal.signal`` runs on,
        so the two never race."""
        fn, b = cold_function(self.module, "interrupt.verify", I1, [])
        action = ir.ArrayType(I8, _SIGACTION_BYTES)
        cur, new = opaque(b.alloca(action)), opaque(b.alloca(action))
        signal = ir.Constant(I32, SIGINT)
        b.call(self.libc["sigaction"], [signal, ir.Constant(PTR, None), cur])
        handler = b.ptrtoint(b.load(cur, typ=PTR, align=8), I64)
        hook = b.ptrtoint(self.hook, I64)
        keep = b.or_(b.icmp_unsigned("==", handler, hook),
                     b.icmp_unsigned("<=", handler, i64(SIG_IGN)))
        install, done = fn.append_basic_block("install"), fn.append_basic_block("done")
        b.cbranch(keep, done, install)
        b.position_at_end(install)
        flags_at = b.gep(cur, [i64(_FLAGS_OFFSET)], inbounds=True, source_etype=I8)
        flags = b.load(flags_at, typ=I32, align=4)
        siginfo = b.zext(b.icmp_unsigned("!=", b.and_(flags, ir.Constant(I32, SA_SIGINFO)),
                                         ir.Constant(I32, 0)), I64)
        store_atomic(b, b.or_(handler, siginfo), self.prev, "release")
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
        b.call(memcpy, [new, cur, i64(_SIGACTION_BYTES), ir.Constant(I1, 0)])
        b.store(self.hook, new, align=8)
        b.store(b.or_(flags, ir.Constant(I32, SA_SIGINFO)),
                b.gep(new, [i64(_FLAGS_OFFSET)], inbounds=True, source_etype=I8), align=4)
        b.call(self.libc["sigaction"], [signal, new, ir.Constant(PTR, None)])
        b.ret(ir.Constant(I1, 1))
        b.position_at_end(done)
        b.ret(ir.Constant(I1, 0))
        return fn

    def _run_handlers(self) -> ir.Function:
        """``i32 handlers(ptr state, i64 epoch)`` on the main thread: note ``epoch`` as
        seen, then run Python's pending signal handlers under the GIL; stash what they
        raise.  Unwinds at once while a stashed exception waits (a second poll of a
        call that is already unwinding)."""
        fn, b = cold_function(self.module, "interrupt.handlers", I32, [PTR, I64])
        state, seen = fn.args
        b.store(seen, state, align=8)
        run, stop = fn.append_basic_block("run"), fn.append_basic_block("stop")
        without = fn.append_basic_block("no_python")
        b.cbranch(self._stashed(b), stop, without)
        b.position_at_end(without)
        ensure = b.load(self._slot(b, self.api, 0, len(API_FUNCTIONS)), typ=PTR, align=8)
        go = fn.append_basic_block("go")
        b.cbranch(b.icmp_unsigned("==", ensure, ir.Constant(PTR, None)), go, run)
        b.position_at_end(go)
        b.ret(GO)
        b.position_at_end(run)
        gil = self._api(b, "PyGILState_Ensure")
        raised = b.icmp_signed("!=", self._api(b, "PyErr_CheckSignals"), GO)
        fetch, release = fn.append_basic_block("fetch"), fn.append_basic_block("release")
        b.cbranch(raised, fetch, release)
        b.position_at_end(fetch)
        self._api(b, "PyErr_Fetch", *(self._slot(b, self.stash, k, 3) for k in range(3)))
        self._bump(b)  # pool workers of this call see it and stop (see poll)
        b.branch(release)
        b.position_at_end(release)
        self._api(b, "PyGILState_Release", gil)
        b.ret(b.select(raised, STOP, GO))
        b.position_at_end(stop)
        b.ret(STOP)
        return fn

    def _is_worker(self) -> ir.Function:
        """``i1 is_worker(i64 thread)``: one of the pool's started workers."""
        fn, b = cold_function(self.module, "interrupt.is_worker", I1, [I64])
        started = b.load_atomic(self.pool.started, "monotonic", 8, typ=I64)
        entry = b.block
        head, body, out = (fn.append_basic_block(s) for s in ("head", "body", "out"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(i64(0), entry)
        b.cbranch(b.icmp_signed("<", i, started), body, out)
        b.position_at_end(body)
        threads_type = ir.ArrayType(I64, self.pool.max_threads)
        slot = b.gep(self.pool.threads, [i64(0), i], inbounds=True, source_etype=threads_type)
        found = fn.append_basic_block("found")
        i.add_incoming(b.add(i, i64(1)), body)
        b.cbranch(b.icmp_unsigned("==", b.load(slot, typ=I64, align=8), fn.args[0]), found,
                  head)
        b.position_at_end(found)
        b.ret(ir.Constant(I1, 1))
        b.position_at_end(out)
        b.ret(ir.Constant(I1, 0))
        return fn

    def _epoch_fn(self) -> None:
        fn, b = cold_function(self.module, SYMBOLS["epoch"], I64, [], external=True)
        b.ret(b.load_atomic(self.epoch, "acquire", 8, typ=I64))

    def _poll(self) -> ir.Function:
        """``i32 poll(ptr state)``: the slow path of a kernel's poll (module docstring)."""
        fn, b = cold_function(self.module, SYMBOLS["poll"], I32, [PTR], external=True)
        state = fn.args[0]
        now_epoch = b.load_atomic(self.epoch, "acquire", 8, typ=I64)
        moved = b.icmp_unsigned("!=", now_epoch, b.load(state, typ=I64, align=8))
        main = self._self_is_main(b)
        on_main, other, quiet = (fn.append_basic_block(s) for s in ("main", "other", "quiet"))
        b.cbranch(main, on_main, other)
        b.position_at_end(on_main)
        handle = fn.append_basic_block("handle")
        b.cbranch(moved, handle, quiet)
        b.position_at_end(handle)
        b.ret(b.call(self.handlers, [state, now_epoch]))
        b.position_at_end(quiet)
        b.ret(self._maybe_verify(b, state, now_epoch))
        b.position_at_end(other)
        stop = b.and_(moved, self._stashed(b))
        origin = b.load_atomic(self.pool.origin, "monotonic", 8, typ=I64)
        stop = b.and_(stop, b.icmp_unsigned("==", origin,
                                            b.load_atomic(self.main, "monotonic", 8, typ=I64)))
        check, note = fn.append_basic_block("worker"), fn.append_basic_block("note")
        b.cbranch(stop, check, note)
        b.position_at_end(check)
        worker = b.call(self.is_worker, [b.call(self.libc["pthread_self"], [])])
        unwind = fn.append_basic_block("unwind")
        b.cbranch(worker, unwind, note)
        b.position_at_end(unwind)
        b.ret(STOP)
        b.position_at_end(note)
        b.store(now_epoch, state, align=8)
        b.ret(GO)
        return fn

    def _maybe_verify(self, b: ir.IRBuilder, state: ir.Value, now_epoch: ir.Value) -> ir.Value:
        """On the main thread with nothing new: check the hook every ``VERIFY_NS``."""
        fn = b.function
        ts = opaque(b.alloca(ir.ArrayType(I64, 2)))
        b.call(self.libc["clock_gettime"], [ir.Constant(I32, CLOCK_MONOTONIC_COARSE), ts])
        sec = b.load(ts, typ=I64, align=8)
        nsec = b.load(b.gep(ts, [i64(1)], inbounds=True, source_etype=I64), typ=I64, align=8)
        now = b.add(b.mul(sec, i64(1_000_000_000)), nsec)
        last = b.load(self.verified, typ=I64, align=8)
        due = b.or_(b.icmp_unsigned("==", last, i64(0)),
                    b.icmp_signed(">=", b.sub(now, last), i64(VERIFY_NS)))
        check, done, missed = (fn.append_basic_block(s) for s in ("verify", "verified",
                                                                  "missed"))
        b.cbranch(due, check, done)
        b.position_at_end(check)
        b.store(now, self.verified, align=8)
        b.cbranch(b.call(self.verify, []), missed, done)
        b.position_at_end(missed)  # SIGINT while unhooked went to Python only: look now
        b.ret(b.call(self.handlers, [state, now_epoch]))
        b.position_at_end(done)
        return GO

    def _configure(self) -> None:
        """``void configure(ptr api, i64 main)``: the C-API functions (``API_FUNCTIONS``
        order) and Python's main thread (0: no thread runs Python handlers)."""
        fn, b = cold_function(self.module, SYMBOLS["configure"], ir.VoidType(), [PTR, I64],
                              external=True)
        api, main = fn.args
        for k in range(len(API_FUNCTIONS)):
            src = b.gep(api, [i64(k)], inbounds=True, source_etype=PTR)
            b.store(b.load(src, typ=PTR, align=8), self._slot(b, self.api, k,
                                                              len(API_FUNCTIONS)), align=8)
        store_atomic(b, main, self.main, "release")
        b.store(i64(0), self.verified, align=8)  # check the hook at the next poll
        b.ret_void()

    def _take(self) -> None:
        """``i32 take(ptr out3)``: move the stash (type, value, traceback) to ``out3``;
        1 if there was one."""
        fn, b = cold_function(self.module, SYMBOLS["take"], I32, [PTR], external=True)
        had = b.zext(self._stashed(b), I32)
        for k in range(3):
            slot = self._slot(b, self.stash, k, 3)
            b.store(b.load(slot, typ=PTR, align=8),
                    b.gep(fn.args[0], [i64(k)], inbounds=True, source_etype=PTR), align=8)
            store_atomic(b, ir.Constant(PTR, None), slot, "release")
        b.ret(had)

    def _hooked(self) -> None:
        """``i32 hooked()``: 1 if the hook is the process's SIGINT handler now."""
        fn, b = cold_function(self.module, SYMBOLS["hooked"], I32, [], external=True)
        cur = opaque(b.alloca(ir.ArrayType(I8, _SIGACTION_BYTES)))
        b.call(self.libc["sigaction"], [ir.Constant(I32, SIGINT), ir.Constant(PTR, None), cur])
        handler = b.load(cur, typ=PTR, align=8)
        b.ret(b.zext(b.icmp_unsigned("==", handler, self.hook), I32))


