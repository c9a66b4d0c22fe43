"""The process's CPU thread pool: loading its code, its settings and its statistics.

Kernels with a parallel loop call the undefined symbol :data:`ENTRY`
(``pyasc.rt.parallel_for``, contract in ``pyasc.backend.llvm.pool``), kernels whose
loops poll for Ctrl-C call the interrupt functions of the same object
(``pyasc.runtime.interrupt``).  The object loader (``objload``) and MCJIT resolve them
through :func:`runtime_symbol`, which loads the object code on first need.  A kernel
with neither never loads it; loading it starts no thread.

The runtime imports no backend: the object code is built, cached and loaded by the CPU
backend (``pyasc.backend.llvm.runtime_code``: from the disk cache, else generated and
compiled once per machine and pyasc build, ~20-60 ms, and stored there), whose loader
the ``pyasc`` package registers in ``pool_code`` when it is imported, before any module
of it runs, this one included.

There is one pool per process on purpose: workers are shared by every kernel, and a
loop finding the pool busy (another thread's loop, or a loop nested in one) runs on its
own thread instead of waiting or oversubscribing.  Its lifetime:

* ``atexit``: :meth:`ThreadPool.shutdown` waits for a running loop and joins the
  workers, so their code is never unmapped under them at interpreter exit;
* ``os.fork``: the child resets the pool (it has none of the workers; fresh ones start
  on first need).

Settings:

* ``PYASC_NUM_THREADS`` -- read by the pool (``getenv``) at every loop large enough to
  split, so a change applies to the next call: threads per loop, caller included; ``1``
  means no thread is ever started; unset, empty or ``0`` means the default.  Capped at
  :data:`MAX_THREADS`.  Any other value that is not a positive integer (``abc``, ``-1``,
  ``1.5``) is ignored, and Python warns about it (:class:`InvalidEnvironmentWarning`,
  once per value) wherever it reads the variable: when the pool loads, when a call's
  kernel is compiled or loaded (:func:`check_environment`, from the frontend's
  ``dispatch.make_entry``) and in :func:`num_threads`; the pool's
  native code cannot warn, so a bad value set while kernels are already loaded is only
  reported at the next of those.  As with any C library reading the environment, change
  it while no kernel is running in another thread.
* default thread count -- the CPUs in this process's affinity mask
  (``os.sched_getaffinity``) when the pool is loaded;
* minimum work -- :data:`DEFAULT_MIN_WORK` cost units (see ``parallel.py``);
  :func:`minimum_work` changes it (tests use 0 to split every parallel loop).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyasc.errors import InvalidEnvironmentWarning
from pyasc.runtime import interrupt, pool_code

ENTRY = "pyasc.rt.parallel_for"
SYMBOLS = (ENTRY, "pyasc.rt.pool_configure", "pyasc.rt.pool_shutdown",
           "pyasc.rt.pool_after_fork", "pyasc.rt.pool_stats",
           *interrupt.SYMBOLS.values())
"""The pool object's external functions (with the interrupt runtime's, which lives in
the same object: ``pyasc.runtime.interrupt``)."""

ENV = "PYASC_NUM_THREADS"
MAX_THREADS = 256
"""Most threads one loop uses (workers + the caller)."""

DEFAULT_MIN_WORK = 1 << 18
"""Smallest ``trip count * iteration cost`` that is split (about 30 us of scalar work:
below that, waking a worker costs more than it saves)."""

_STRTOL = re.compile(r"\s*[+-]?\d+\Z", re.ASCII)  # C isspace, ASCII digits
_LOAD_LOCK = threading.Lock()


@dataclass(frozen=True)
class PoolStats:
    """``splits``: loops run on several threads so far; ``workers``: started threads;
    ``default_threads`` and ``min_work``: the current settings."""

    splits: int
    workers: int
    default_threads: int
    min_work: int


class ThreadPool:
    """The loaded pool code and ctypes callers for its control functions."""

    def __init__(self, code: Any) -> None:
        self.code = code  # keeps the machine code mapped (for the process's life)
        a = code.addresses
        i64 = ctypes.c_int64
        self._configure = ctypes.CFUNCTYPE(None, i64, i64)(a["pyasc.rt.pool_configure"])
        self._shutdown = ctypes.CFUNCTYPE(None)(a["pyasc.rt.pool_shutdown"])
        self._after_fork = ctypes.CFUNCTYPE(None)(a["pyasc.rt.pool_after_fork"])
        self._stats = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(a["pyasc.rt.pool_stats"])

    def address(self, name: str) -> int:
        """The address of one of :data:`SYMBOLS`."""
        return int(self.code.addresses[name])

    def configure(self, default_threads: int = -1, min_work: int = -1) -> None:
        """Change the settings (a negative value keeps the current one)."""
        self._configure(default_threads, min_work)

    def stats(self) -> PoolStats:
        out = (ctypes.c_int64 * 4)()
        self._stats(out)
        return PoolStats(*(int(x) for x in out))

    def shutdown(self) -> None:
        """Wait for a running loop, join the workers; later loops run inline."""
        self._shutdown()

    def after_fork(self) -> None:
        self._after_fork()


def pool() -> ThreadPool:
    """The process's pool, loaded (and configured) on first use."""
    with _LOAD_LOCK:
        return _pool()


@functools.cache
def _pool() -> ThreadPool:
    check_environment()
    p = ThreadPool(pool_code.load())
    p.configure(default_threads(), DEFAULT_MIN_WORK)
    interrupt.bind({name: p.address(name) for name in interrupt.SYMBOLS.values()})
    atexit.register(p.shutdown)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=p.after_fork)
    return p


def runtime_symbol(name: str) -> int | None:
    """The address of pool symbol ``name`` for a kernel being loaded, else ``None``."""
    return pool().address(name) if name in SYMBOLS else None


def default_threads() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def num_threads() -> int:
    """The threads a large parallel loop would use now (the pool's rule, in Python)."""
    wanted = requested_threads(os.environ.get(ENV))
    return wanted if wanted is not None else min(pool().stats().default_threads, MAX_THREADS)


def requested_threads(text: str | None) -> int | None:
    """The thread count ``PYASC_NUM_THREADS=text`` asks for, read as the pool reads it
    (``strtol``: C whitespace and a sign before ASCII digits, nothing after; capped), or
    ``None`` for the default (unset, empty or ``0``).  Any other value is ignored with an
    :class:`InvalidEnvironmentWarning`, once per value."""
    if text is None or not text.strip():
        return None
    if _STRTOL.match(text):
        n = int(text)
        if n >= 1:
            return min(n, MAX_THREADS)
        if n == 0:
            return None
    _warn_bad_threads(text)
    return None


def check_environment() -> None:
    """Warn now if ``PYASC_NUM_THREADS`` is set to a value the pool ignores."""
    requested_threads(os.environ.get(ENV))


@functools.lru_cache(maxsize=64)
def _warn_bad_threads(text: str) -> None:
    # cached: one warning per distinct value, however many kernels are loaded
    warnings.warn(InvalidEnvironmentWarning(
        f"{ENV}={text!r} is not a thread count; it is ignored and loops use the default "
        f"thread count", hint=f"valid values: a positive integer (threads per loop, at "
        f"most {MAX_THREADS}), or 0 / empty / unset for the default"), stacklevel=4)


def stats() -> PoolStats:
    """The pool's counters and settings."""
    return pool().stats()


@contextmanager
def minimum_work(units: int) -> Iterator[None]:
    """Split loops whose ``trip count * cost`` is at least ``units`` inside the block."""
    p = pool()
    before = p.stats().min_work
    p.configure(min_work=max(0, units))
    try:
        yield
    finally:
        p.configure(min_work=before)
