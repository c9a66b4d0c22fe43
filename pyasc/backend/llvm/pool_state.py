"""State and emission helpers of the CPU thread pool's LLVM module (``pool.py``).

The protocol's constants, the globals every pool function shares (mutexes, the ticket,
the job, counters), the libc declarations, and small IRBuilder helpers (counted loops,
locked sections, ``pause``) used by the workers' side (``pool_workers.py``) and the
caller's side (``pool_caller.py``).
"""

from __future__ import annotations

import platform

from llvmlite import ir

from pyasc.backend.llvm.lltypes import I8, I32, I64, PTR, declare, i64
from pyasc.runtime.threads import MAX_THREADS

CHUNKS_PER_THREAD = 4
"""Chunks per participating thread: dynamic balance on a noisy machine, few atomics."""

SPIN = 1 << 11
"""Pause instructions a waiting thread spins before sleeping.  A pause costs ~30 ns on
AMD Zen (measured: 16384 took ~480 us) and ~40 ns on recent Intel cores; spinning much
longer than a futex wake-up (~10-50 us) only burns a core other processes could use."""

SYNC_BYTES = 64  # >= sizeof(pthread_mutex_t) = 40 and sizeof(pthread_cond_t) = 48
SIGSET_BYTES = 128
SIG_BLOCK = 0
NO_ERROR = (1 << 64) - 1
LIBC = {  # name: (return type, parameter types)
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
CLOCK_REALTIME = 0  # the clock of the pool's (default-initialised) condition variables
BODY_TYPE = ir.FunctionType(I32, [I64, I64, PTR])
"""``int32 body(int64 lo, int64 hi, void *ctx)``."""


class PoolState:
    """The pool module with its state globals and libc declarations."""

    def __init__(self) -> None:
        self.module = ir.Module(name="pyasc.rt.pool")
        sync = ir.ArrayType(I8, SYNC_BYTES)
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
        self.libc = {n: declare(self.module, n, r, p) for n, (r, p) in LIBC.items()}
        self.name = self._string("PYASC_NUM_THREADS")

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
