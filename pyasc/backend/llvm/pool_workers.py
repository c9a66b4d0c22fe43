"""The workers' side of the CPU thread pool's LLVM module (``pool.py``).

``want_threads`` (``PYASC_NUM_THREADS`` or the default), ``run_chunks`` (claim chunks
from the atomic counter, record the lowest failing chunk), the worker thread's loop
(spin then sleep on the ticket, run its share, signal the last ``done``) and
``ensure_workers`` (start threads on first need).
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm.lltypes import I1, I8, I32, I64, PTR, Callee, cold_function, i64
from pyasc.backend.llvm.pool_state import (
    BODY_TYPE,
    MAX_THREADS,
    SIG_BLOCK,
    SIGSET_BYTES,
    SPIN,
    PoolState,
)


class PoolWorkers(PoolState):
    """Emits the functions the worker threads run."""

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
        sigset = b.alloca(ir.ArrayType(I8, SIGSET_BYTES))
        memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
        b.call(memset, [sigset, ir.Constant(I8, 0xFF), i64(SIGSET_BYTES), ir.Constant(I1, 0)])
        self._call(b, "pthread_sigmask", ir.Constant(I32, SIG_BLOCK), sigset,
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
