"""The caller's side of the CPU thread pool's LLVM module (``pool.py``).

``pyasc.rt.parallel_for`` (admission: inline unless the loop is split; publishing a job;
waiting for the workers while polling for interrupts) and the lifecycle functions
``pool_configure``, ``pool_shutdown``, ``pool_after_fork`` and ``pool_stats``.
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
    i64,
    opaque,
    store_atomic,
)
from pyasc.backend.llvm.pool_state import (
    BODY_TYPE,
    CHUNKS_PER_THREAD,
    CLOCK_REALTIME,
    MAX_THREADS,
    NO_ERROR,
    SPIN,
    SYNC_BYTES,
    WAIT_NS,
    PoolState,
)
from pyasc.runtime.abi import ERR_INTERRUPT
from pyasc.runtime.threads import ENTRY


class PoolCaller(PoolState):
    """Emits ``parallel_for`` and the pool's lifecycle functions."""

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
        b.store(i64(NO_ERROR), self.err, align=8)
        b.store(workers, self.pending, align=8)
        store_atomic(b, self._call(b, "pthread_self"), self.origin, "monotonic")
        self._publish(b, workers)
        b.call(self.run_chunks, [])
        aborted = self._await_workers(b, state)
        err = self._load(b, self.err)
        self._call(b, "pthread_mutex_unlock", self.busy)
        b.atomic_rmw("add", self.dispatched, i64(1), "monotonic")
        ok = b.icmp_unsigned("==", err, i64(NO_ERROR))
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
        self._call(b, "clock_gettime", ir.Constant(I32, CLOCK_REALTIME), ts)
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
            b.call(memset, [g, ir.Constant(I8, 0), i64(SYNC_BYTES),
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
