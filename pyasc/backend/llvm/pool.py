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

from pyasc.backend.llvm.interrupt_rt import InterruptRuntime, PoolView
from pyasc.backend.llvm.pool_caller import PoolCaller
from pyasc.backend.llvm.pool_state import MAX_THREADS
from pyasc.backend.llvm.pool_workers import PoolWorkers


def pool_ir() -> str:
    """LLVM IR text of the pool module."""
    return str(_Pool().module)


class _Pool(PoolWorkers, PoolCaller):
    """Builds the pool module: state globals, libc declarations, the functions."""

    def __init__(self) -> None:
        super().__init__()
        self._functions()

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
