"""The CPU thread pool as LLVM IR against libc's pthread functions (no C compiler needed).

Kernels run the iteration range of a parallel loop through one external function::

    int32 pyasc.rt.parallel_for(int32 (*body)(int64 lo, int64 hi, void *ctx),
                                void *ctx, int64 n, int64 cost, void *state)

``body`` runs iterations ``[lo, hi)`` of ``[0, n)`` in order and returns 0 or the error
code of its first failing iteration; ``cost`` is the compiler's estimate of one
iteration's work (see ``parallel.py``); ``state`` is the calling kernel's poll state
(``emit_poll.py``), or NULL when the loop never polls.  The call runs
``body(0, n, ctx)`` on the calling thread, with no synchronisation at all, when any of
these holds:

* ``n * cost`` is below the pool's minimum work (``configure``; default
  ``threads.DEFAULT_MIN_WORK``), or ``n < 2``;
* the wanted thread count is 1: ``PYASC_NUM_THREADS`` (read with ``getenv`` at each
  such call: a positive decimal integer, else ignored),
  by default the number of usable cores given to ``configure``; at most
  ``threads.MAX_THREADS``;
* the pool is busy (another thread's loop, or a parallel loop nested in one: try-lock,
  never wait), or it has been shut down.

Otherwise up to ``threads - 1`` persistent workers (started on first need, kept for the
process) and the caller share the range, split into ``min(n, 4 * threads)`` contiguous
chunks claimed from an atomic counter.  Chunk ``c`` is ``[c*q + min(c, r), ...)`` with
``n = q * chunks + r``.  Every chunk stops at its first failure; the result is the code
of the lowest failing chunk, which is the first failing iteration of the whole range,
so the error does not depend on the thread count (chunks after a failed one are
skipped).  Which iterations *ran* besides those before the first failure does depend on
it; ``parallel.py`` only splits loops for which that cannot be observed.

Synchronisation: a job is published by storing ``ticket = generation << 16 | workers``
(release) under the pool mutex and broadcasting ``wake``; a worker spins on the ticket
for :data:`SPIN` pause instructions (about 60 us on this AMD EPYC) before sleeping on
``wake``, so back-to-back loops do not pay a futex wake-up each.  A worker whose index
is below the ticket's ``workers`` runs chunks, then decrements ``pending``; the last one
signals ``done`` under the mutex, where the caller (after its own spin) waits.  Workers
block every signal, so CPython's handlers keep running on Python threads only.

Ctrl-C (``interrupt_rt.py``, which lives in this module): a job records the thread that
published it (``job.origin``).  Chunks poll like any loop; when a signal handler raised
on the main thread, the workers running the main thread's job stop at their next poll
(their chunk fails with ``ERR_INTERRUPT``).  A caller waiting for workers wakes every
:data:`WAIT_NS` to poll ``state`` itself, so its handlers run even when its own chunks
are done; then the call returns ``ERR_INTERRUPT`` whatever the chunks returned.

All state is zero-initialised module globals (glibc's ``PTHREAD_MUTEX_INITIALIZER`` and
``PTHREAD_COND_INITIALIZER`` are all zero bytes), so ``pyasc.rt.pool_after_fork`` can
reset the pool in a forked child by zeroing it: the child has none of the workers.
"""

from __future__ import annotations

import platform

from llvmlite import ir

from pyasc.backend.llvm.interrupt_rt import InterruptRuntime, PoolView
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
from pyasc.runtime.threads import ENTRY, MAX_THREADS

CHUNKS_PER_THREAD = 4
"""Chunks per participating thread: dynamic balance on a noisy machine, few atomics."""

SPIN = 1 << 11
"""Pause instructions a waiting thread spins before sleeping.  A pause costs ~30 ns on
AMD Zen (measured: 16384 took ~480 us) and ~40 ns on recent Intel cores; spinning much
longer than a futex wake-up (~10-50 us) only burns a core other processes could use."""

_SYNC_BYTES = 64  # >= sizeof(pthread_mutex_t) = 40 and sizeof(pthread_cond_t) = 48
_SIGSET_BYTES = 128
_SIG_BLOCK = 0
_NO_ERROR = (1 << 64) - 1
_LIBC = {  # name: (return type, parameter types)
    "pthread_mutex_lock": (I32, [PTR]), "pthread_mutex_unlock": (I32, [PTR]),
    "pthread_mutex_trylock": (I32, [PTR]), "pthread_cond_wait": (I32, [PTR, PTR]),
    "pthread_cond_broadcast": (I32, [PTR]), "pthread_cond_signal": (I32, [PTR]),
    "pthread_create": (I32, [PTR, PTR, PTR, PTR]), "pthread_join": (I32, [I64, PTR]),
    "pthread_sigmask": (I32, [I32, PTR, PTR]), "getenv": (PTR, [PTR]),
    "strtol": (I64, [PTR, PTR, I32]), "pthread_self": (I64, []),
    "pthread_cond_timedwait": (I32, [PTR, PTR, PTR]), "clock_gettime": (I32, [I32, PTR]),
}
WAIT_NS = 20_000_000
"""A caller waiting for workers wakes this often to poll for interrupts (``poll``)."""
_CLOCK_REALTIME = 0  # the clock of the pool's (default-initialised) condition variables
BODY_TYPE = ir.FunctionType(I32, [I64, I64, PTR])
"""``int32 body(int64 lo, int64 hi, void *ctx)``."""


def pool_ir() -> str:
    """LLVM IR text of the pool module."""
    return str(_Pool().module)


class _Pool:
    """Builds the pool module: state globals, libc declarations, the functions."""

    def __init__(self) -> None:
        self.module = ir.Module(name="pyasc.rt.pool")
        sync = ir.ArrayType(I8, _SYNC_BYTES)
        self.mutex, self.wake, self.done, self.busy = (
            self._global(n, sync) for n in ("mutex", "wake", "done", "busy"))
        self.ticket = self._global("ticket", I64)  # spun on by workers: own cache line
        self.next = self._global("next", I64)
        self.pending = self._global("pending", I64)
        self.err = self._global("err", I64)
        self.job = {n: self._global(f"job.{n}", t, align=8)
                    for n, t in (("fn", PTR), ("ctx", PTR), ("n", I64), ("chunks", I64))}
        self.quit, self.started, self.default, self.min_work, self.dispatched = (
            self._global(n, I64, align=8)
            for n in ("quit", "started", "default", "min_work", "dispatched"))
        self.threads = self._global("threads", ir.ArrayType(I64, MAX_THREADS), align=8)
        self.origin = self._global("job.origin", I64, align=8)  # the thread that published
        self.libc = {n: declare(self.module, n, r, p) for n, (r, p) in _LIBC.items()}
        self.name = self._string("PYASC_NUM_THREADS")
        self._functions()

    # -- module pieces
    def _global(self, name: str, ty: ir.Type, align: int = 64) -> ir.GlobalVariable:
        g = ir.GlobalVariable(self.module, ty, name=f"pool.{name}")
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, None)
        g.align = align
        g.type = PTR
        return g

    def _string(self, text: str) -> ir.GlobalVariable:
        data = bytearray(text.encode() + b"\0")
        ty = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(self.module, ty, name="pool.env_name")
        g.linkage, g.global_constant, g.initializer = "private", True, ir.Constant(ty, data)
        g.type = PTR
        return g

    def _functions(self) -> None:
        self.want = self._want_threads()
        self.run_chunks = self._run_chunks()
        self.worker = self._worker()
        self.ensure = self._ensure_workers()
        self.interrupts = InterruptRuntime(self.module, PoolView(
            self.origin, self.threads, self.started, MAX_THREADS))
        self._parallel_for()
        self._configure()
        self._shutdown()
        self._after_fork()
        self._stats()

    # -- small emission helpers
    def _call(self, b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
        return b.call(self.libc[name], list(args))

    def _load(self, b: ir.IRBuilder, g: ir.Value, ty: ir.Type = I64,
              order: str | None = None) -> ir.Value:
        if order is None:
            return b.load(g, typ=ty, align=8)
        return b.load_atomic(g, order, 8, typ=ty)

    def _pause(self, b: ir.IRBuilder) -> None:
        if platform.machine() in ("x86_64", "AMD64", "i686"):
            pause = self.module.globals.get("llvm.x86.sse2.pause") or ir.Function(
                self.module, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse2.pause")
            b.call(pause, [])

    def _locked(self, b: ir.IRBuilder, body) -> None:
        self._call(b, "pthread_mutex_lock", self.mutex)
        body()
        self._call(b, "pthread_mutex_unlock", self.mutex)

    def _counted(self, b: ir.IRBuilder, count: ir.Value, name: str):
        """Start ``for (i = 0; i < count; i++)``: returns (i, latch block, exit block);
        the caller emits the body then ``_close``."""
        pre = b.block
        head, body, exit_ = (b.function.append_basic_block(f"{name}.{s}")
                             for s in ("head", "body", "exit"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=name)
        i.add_incoming(i64(0), pre)
        b.cbranch(b.icmp_signed("<", i, count), body, exit_)
        b.position_at_end(body)
        return i, head, exit_

    @staticmethod
    def _close(b: ir.IRBuilder, i: ir.PhiInstr, head: ir.Block, exit_: ir.Block) -> None:
        i.add_incoming(b.add(i, i64(1)), b.block)
        b.branch(head)
        b.position_at_end(exit_)

    # -- the functions
    def _want_threads(self) -> ir.Function:
        """``PYASC_NUM_THREADS`` if it is a positive integer, else the default; capped."""
        fn, b = cold_function(self.module, "pool.want_threads", I64, [])
        default = self._load(b, self.default)
        text = self._call(b, "getenv", self.name)
        end = b.alloca(PTR)
        b.store(text, end)
        isnull = b.icmp_unsigned("==", text, ir.Constant(PTR, None))
        parse, done = fn.append_basic_block("parse"), fn.append_basic_block("done")
        entry = b.block
        b.cbranch(isnull, done, parse)
        b.position_at_end(parse)
        value = self._call(b, "strtol", b.select(isnull, self.name, text), end,
                           ir.Constant(I32, 10))
        stop = b.load(end, typ=PTR, align=8)
        whole = b.and_(b.icmp_unsigned("!=", stop, text),
                       b.icmp_unsigned("==", b.load(stop, typ=I8, align=1), ir.Constant(I8, 0)))
        valid = b.and_(whole, b.icmp_signed(">=", value, i64(1)))
        parsed = b.select(valid, value, default)
        b.branch(done)
        b.position_at_end(done)
        out = b.phi(I64)
        out.add_incoming(default, entry)
        out.add_incoming(parsed, parse)
        capped = b.select(b.icmp_signed(">", out, i64(MAX_THREADS)), i64(MAX_THREADS), out)
        b.ret(b.select(b.icmp_signed("<", capped, i64(1)), i64(1), capped))
        return fn

    def _run_chunks(self) -> ir.Function:
        """Claim chunks until none is left; record the lowest failing chunk's code."""
        fn, b = cold_function(self.module, "pool.run_chunks", ir.VoidType(), [])
        body_fn, ctx = self._load(b, self.job["fn"], PTR), self._load(b, self.job["ctx"], PTR)
        n, chunks = self._load(b, self.job["n"]), self._load(b, self.job["chunks"])
        q, r = b.sdiv(n, chunks), b.srem(n, chunks)
        loop, work, skip, out = (fn.append_basic_block(s) for s in ("claim", "work", "skip",
                                                                    "out"))
        b.branch(loop)
        b.position_at_end(loop)
        c = b.atomic_rmw("add", self.next, i64(1), "monotonic")
        b.cbranch(b.icmp_signed(">=", c, chunks), out, skip)
        b.position_at_end(skip)
        failed = b.lshr(self._load(b, self.err, order="monotonic"), i64(32))
        b.cbranch(b.icmp_unsigned(">", c, failed), loop, work)
        b.position_at_end(work)
        small = b.select(b.icmp_signed("<", c, r), c, r)
        lo = b.add(b.mul(c, q), small)
        hi = b.add(b.add(lo, q), b.zext(b.icmp_signed("<", c, r), I64))
        rc = b.call(Callee(body_fn, BODY_TYPE), [lo, hi, ctx])
        record = fn.append_basic_block("record")
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), record, loop)
        b.position_at_end(record)
        packed = b.or_(b.shl(c, i64(32)), b.zext(rc, I64))
        b.atomic_rmw("umin", self.err, packed, "monotonic")
        b.branch(loop)
        b.position_at_end(out)
        b.ret_void()
        return fn

    def _worker(self) -> ir.Function:
        """``void *worker(void *arg)``, ``arg = generation << 16 | index``."""
        fn, b = cold_function(self.module, "pool.worker", PTR, [PTR])
        sigset = b.alloca(ir.ArrayType(I8, _SIGSET_BYTES))
        memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
        b.call(memset, [sigset, ir.Constant(I8, 0xFF), i64(_SIGSET_BYTES), ir.Constant(I1, 0)])
        self._call(b, "pthread_sigmask", ir.Constant(I32, _SIG_BLOCK), sigset,
                   ir.Constant(PTR, None))
        arg = b.ptrtoint(fn.args[0], I64)
        index, first_seen = b.and_(arg, i64(0xFFFF)), b.lshr(arg, i64(16))
        top = fn.append_basic_block("top")
        entry = b.block
        b.branch(top)
        b.position_at_end(top)
        seen = b.phi(I64, name="seen")
        seen.add_incoming(first_seen, entry)
        ticket, quit_ = self._await_ticket(b, seen)
        got, leave = fn.append_basic_block("got"), fn.append_basic_block("leave")
        b.cbranch(quit_, leave, got)
        b.position_at_end(leave)
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(got)
        mine = b.icmp_signed("<", index, b.and_(ticket, i64(0xFFFF)))
        run, again = fn.append_basic_block("run"), fn.append_basic_block("again")
        b.cbranch(mine, run, again)
        b.position_at_end(run)
        b.call(self.run_chunks, [])
        self._finish(b)
        b.branch(again)
        b.position_at_end(again)
        seen.add_incoming(b.lshr(ticket, i64(16)), again)
        b.branch(top)
        return fn

    def _await_ticket(self, b: ir.IRBuilder, seen: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Spin, then sleep, until the ticket's generation differs from ``seen`` or the
        pool quits; returns (ticket, i1 quit)."""
        fn = b.function
        changed = fn.append_basic_block("ticket.changed")
        i, head, exit_ = self._counted(b, i64(SPIN), "spin")
        spun = self._load(b, self.ticket, order="acquire")
        spin_block = b.block
        more = fn.append_basic_block("spin.more")
        b.cbranch(b.icmp_unsigned("!=", b.lshr(spun, i64(16)), seen), changed, more)
        b.position_at_end(more)
        self._pause(b)
        self._close(b, i, head, exit_)
        self._call(b, "pthread_mutex_lock", self.mutex)
        sleep_head, sleep_body, sleep_exit = (fn.append_basic_block(f"sleep.{s}")
                                              for s in ("head", "body", "exit"))
        b.branch(sleep_head)
        b.position_at_end(sleep_head)
        slept = self._load(b, self.ticket, order="acquire")
        same = b.icmp_unsigned("==", b.lshr(slept, i64(16)), seen)
        running = b.icmp_signed("==", self._load(b, self.quit, order="monotonic"), i64(0))
        b.cbranch(b.and_(same, running), sleep_body, sleep_exit)
        b.position_at_end(sleep_body)
        self._call(b, "pthread_cond_wait", self.wake, self.mutex)
        b.branch(sleep_head)
        b.position_at_end(sleep_exit)
        self._call(b, "pthread_mutex_unlock", self.mutex)
        stopped = b.not_(running)
        b.branch(changed)
        b.position_at_end(changed)
        ticket = b.phi(I64, name="ticket")
        ticket.add_incoming(spun, spin_block)
        ticket.add_incoming(slept, sleep_exit)
        quit_ = b.phi(I1, name="quit")
        quit_.add_incoming(ir.Constant(I1, 0), spin_block)
        quit_.add_incoming(stopped, sleep_exit)
        return ticket, quit_

    def _finish(self, b: ir.IRBuilder) -> None:
        """Decrement ``pending``; the last participant signals ``done`` under the mutex."""
        left = b.atomic_rmw("sub", self.pending, i64(1), "acq_rel")
        last = b.icmp_signed("==", left, i64(1))
        with b.if_then(last):
            self._locked(b, lambda: self._call(b, "pthread_cond_signal", self.done))

    def _ensure_workers(self) -> ir.Function:
        """Start workers until ``want`` exist (called with ``busy`` held, no job in
        flight); returns how many exist, capped at ``want``."""
        fn, b = cold_function(self.module, "pool.ensure_workers", I64, [I64])
        want = fn.args[0]
        generation = b.lshr(self._load(b, self.ticket, order="acquire"), i64(16))
        head, body, exit_ = (fn.append_basic_block(s) for s in ("head", "body", "exit"))
        b.branch(head)
        b.position_at_end(head)
        have = self._load(b, self.started)
        b.cbranch(b.icmp_signed("<", have, want), body, exit_)
        b.position_at_end(body)
        slot = b.gep(self.threads, [i64(0), have], inbounds=True,
                     source_etype=ir.ArrayType(I64, MAX_THREADS))
        arg = b.inttoptr(b.or_(b.shl(generation, i64(16)), have), PTR)
        rc = self._call(b, "pthread_create", slot, ir.Constant(PTR, None), self.worker, arg)
        created = fn.append_basic_block("created")
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), created, exit_)
        b.position_at_end(created)
        b.store(b.add(have, i64(1)), self.started, align=8)
        b.branch(head)
        b.position_at_end(exit_)
        final = self._load(b, self.started)
        b.ret(b.select(b.icmp_signed("<", final, want), final, want))
        return fn

    def _parallel_for(self) -> None:
        fn, b = cold_function(self.module, ENTRY, I32, [PTR, PTR, I64, I64, PTR],
                              external=True)
        body_fn, ctx, n, cost, state = fn.args
        inline = fn.append_basic_block("inline")
        workers = self._admit(b, n, cost, inline)
        threads = b.add(workers, i64(1))
        chunks = b.mul(threads, i64(CHUNKS_PER_THREAD))
        chunks = b.select(b.icmp_signed("<", n, chunks), n, chunks)
        for key, value in (("fn", body_fn), ("ctx", ctx), ("n", n), ("chunks", chunks)):
            b.store(value, self.job[key], align=8)
        b.store(i64(0), self.next, align=8)
        b.store(i64(_NO_ERROR), self.err, align=8)
        b.store(workers, self.pending, align=8)
        store_atomic(b, self._call(b, "pthread_self"), self.origin, "monotonic")
        self._publish(b, workers)
        b.call(self.run_chunks, [])
        aborted = self._await_workers(b, state)
        err = self._load(b, self.err)
        self._call(b, "pthread_mutex_unlock", self.busy)
        b.atomic_rmw("add", self.dispatched, i64(1), "monotonic")
        ok = b.icmp_unsigned("==", err, i64(_NO_ERROR))
        rc = b.select(ok, ir.Constant(I32, 0), b.trunc(err, I32))
        b.ret(b.select(aborted, ir.Constant(I32, ERR_INTERRUPT), rc))
        b.position_at_end(inline)
        b.ret(b.call(Callee(body_fn, BODY_TYPE), [i64(0), n, ctx]))

    def _admit(self, b: ir.IRBuilder, n: ir.Value, cost: ir.Value,
               inline: ir.Block) -> ir.Value:
        """Branch to ``inline`` unless the loop is split; returns the worker count (with
        ``busy`` held)."""
        fn = b.function

        def unless(cond: ir.Value, name: str) -> None:
            go = fn.append_basic_block(name)
            b.cbranch(cond, go, inline)
            b.position_at_end(go)

        limit = b.sdiv(i64((1 << 63) - 1), b.select(b.icmp_signed(">", cost, i64(1)), cost,
                                                    i64(1)))
        work = b.select(b.icmp_signed(">", n, limit), i64((1 << 63) - 1), b.mul(n, cost))
        unless(b.and_(b.icmp_signed(">=", n, i64(2)),
                      b.icmp_signed(">=", work, self._load(b, self.min_work))), "big")
        want = b.call(self.want, [])
        want = b.select(b.icmp_signed("<", n, want), n, want)
        unless(b.icmp_signed(">", want, i64(1)), "threaded")
        unless(b.icmp_signed("==", self._call(b, "pthread_mutex_trylock", self.busy),
                             ir.Constant(I32, 0)), "owned")
        release = fn.append_basic_block("release")
        go = fn.append_basic_block("running")
        b.cbranch(b.icmp_signed("==", self._load(b, self.quit, order="monotonic"), i64(0)),
                  go, release)
        b.position_at_end(go)
        workers = b.call(self.ensure, [b.sub(want, i64(1))])
        ready = fn.append_basic_block("ready")
        b.cbranch(b.icmp_signed(">", workers, i64(0)), ready, release)
        b.position_at_end(release)
        self._call(b, "pthread_mutex_unlock", self.busy)
        b.branch(inline)
        b.position_at_end(ready)
        return workers

    def _publish(self, b: ir.IRBuilder, workers: ir.Value) -> None:
        def bump() -> None:
            generation = b.add(b.lshr(self._load(b, self.ticket), i64(16)), i64(1))
            store_atomic(b, b.or_(b.shl(generation, i64(16)), workers), self.ticket,
                          "release")
            self._call(b, "pthread_cond_broadcast", self.wake)

        self._locked(b, bump)

    def _await_workers(self, b: ir.IRBuilder, state: ir.Value) -> ir.Value:
        """Spin, then sleep on ``done``, until ``pending`` is 0; returns i1 "the caller
        was interrupted meanwhile".  The sleep wakes every :data:`WAIT_NS` to poll
        ``state`` (the calling kernel's poll state, NULL when the loop never polls): a
        caller whose own chunks are done still runs the signal handlers, and once one
        raised, the workers stop at their next poll."""
        fn = b.function
        aborted, ts = _entry_alloca(fn, I1), _entry_alloca(fn, ir.ArrayType(I64, 2))
        b.store(ir.Constant(I1, 0), aborted)
        i, head, exit_ = self._counted(b, i64(SPIN), "wait")
        finished = fn.append_basic_block("finished")
        cont = fn.append_basic_block("wait.more")
        zero = b.icmp_signed("==", self._load(b, self.pending, order="acquire"), i64(0))
        b.cbranch(zero, finished, cont)
        b.position_at_end(cont)
        self._pause(b)
        self._close(b, i, head, exit_)
        self._call(b, "pthread_mutex_lock", self.mutex)
        sleep_head, sleep_body, sleep_exit = (fn.append_basic_block(f"done.{s}")
                                              for s in ("head", "body", "exit"))
        b.branch(sleep_head)
        b.position_at_end(sleep_head)
        left = self._load(b, self.pending, order="acquire")
        b.cbranch(b.icmp_signed("!=", left, i64(0)), sleep_body, sleep_exit)
        b.position_at_end(sleep_body)
        self._call(b, "pthread_cond_timedwait", self.done, self.mutex, self._deadline(b, ts))
        polled = fn.append_basic_block("done.poll")
        b.cbranch(b.icmp_unsigned("==", state, ir.Constant(PTR, None)), sleep_head, polled)
        b.position_at_end(polled)  # without the mutex: a handler may take long
        self._call(b, "pthread_mutex_unlock", self.mutex)
        rc = b.call(self.interrupts.poll, [state])
        stopped = b.icmp_signed("!=", rc, ir.Constant(I32, 0))
        b.store(b.or_(b.load(aborted), stopped), aborted)
        self._call(b, "pthread_mutex_lock", self.mutex)
        b.branch(sleep_head)
        b.position_at_end(sleep_exit)
        self._call(b, "pthread_mutex_unlock", self.mutex)
        b.branch(finished)
        b.position_at_end(finished)
        return b.load(aborted)

    def _deadline(self, b: ir.IRBuilder, ts: ir.Value) -> ir.Value:
        """``ts`` (a ``struct timespec``) set :data:`WAIT_NS` from now on
        ``CLOCK_REALTIME``."""
        self._call(b, "clock_gettime", ir.Constant(I32, _CLOCK_REALTIME), ts)
        nsec_at = b.gep(ts, [i64(1)], inbounds=True, source_etype=I64)
        nsec = b.add(b.load(nsec_at, typ=I64, align=8), i64(WAIT_NS))
        carry = b.icmp_signed(">=", nsec, i64(1_000_000_000))
        b.store(b.add(b.load(ts, typ=I64, align=8), b.zext(carry, I64)), ts, align=8)
        b.store(b.select(carry, b.sub(nsec, i64(1_000_000_000)), nsec), nsec_at, align=8)
        return ts

    def _configure(self) -> None:
        """``void configure(int64 default_threads, int64 min_work)`` (a value < 0 keeps
        the current setting)."""
        fn, b = cold_function(self.module, "pyasc.rt.pool_configure", ir.VoidType(), [I64, I64],
                               external=True)
        for value, g in zip(fn.args, (self.default, self.min_work), strict=True):
            keep = self._load(b, g)
            b.store(b.select(b.icmp_signed("<", value, i64(0)), keep, value), g, align=8)
        b.ret_void()

    def _shutdown(self) -> None:
        """Wait for a running loop, stop and join every worker; later loops run inline."""
        fn, b = cold_function(self.module, "pyasc.rt.pool_shutdown", ir.VoidType(), [],
                              external=True)
        self._call(b, "pthread_mutex_lock", self.busy)

        def stop() -> None:
            store_atomic(b, i64(1), self.quit, "monotonic")
            self._call(b, "pthread_cond_broadcast", self.wake)

        self._locked(b, stop)
        i, head, exit_ = self._counted(b, self._load(b, self.started), "join")
        slot = b.gep(self.threads, [i64(0), i], inbounds=True,
                     source_etype=ir.ArrayType(I64, MAX_THREADS))
        self._call(b, "pthread_join", b.load(slot, typ=I64, align=8), ir.Constant(PTR, None))
        self._close(b, i, head, exit_)
        b.store(i64(0), self.started, align=8)
        self._call(b, "pthread_mutex_unlock", self.busy)
        b.ret_void()

    def _after_fork(self) -> None:
        """Reset the pool in a forked child (no workers exist there)."""
        fn, b = cold_function(self.module, "pyasc.rt.pool_after_fork", ir.VoidType(), [],
                              external=True)
        memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
        for g in (self.mutex, self.wake, self.done, self.busy):
            b.call(memset, [g, ir.Constant(I8, 0), i64(_SYNC_BYTES),
                            ir.Constant(I1, 0)])
        for g in (self.ticket, self.pending, self.started, self.next):
            b.store(i64(0), g, align=8)
        b.ret_void()

    def _stats(self) -> None:
        """``void stats(int64 out[4])``: loops split so far, workers started, default
        threads, minimum work."""
        fn, b = cold_function(self.module, "pyasc.rt.pool_stats", ir.VoidType(), [PTR],
                              external=True)
        out = fn.args[0]
        values = (self._load(b, self.dispatched, order="monotonic"), self._load(b, self.started),
                  self._load(b, self.default), self._load(b, self.min_work))
        for k, value in enumerate(values):
            b.store(value, b.gep(out, [i64(k)], source_etype=I64), align=8)
        b.ret_void()




def _entry_alloca(fn: ir.Function, ty: ir.Type) -> ir.Value:
    """A stack slot made once at function entry (an alloca in a loop grows the stack)."""
    b = ir.IRBuilder(fn.entry_basic_block)
    b.position_at_start(fn.entry_basic_block)
    return opaque(b.alloca(ty))

