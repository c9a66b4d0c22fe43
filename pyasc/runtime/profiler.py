"""``pyasc.profiler``: what every pyasc call inside a ``with Profile()`` block cost.

::

    from pyasc import profiler

    with profiler.Profile() as p:
        relu(x)
    print(p.report())                    # a table, the most expensive function first
    p.export_chrome_trace("trace.json")  # compile and run slices per thread (Perfetto)
    p.stats()                            # the same figures as data

A call records its function, target and specialization, whether its kernel came from
the in-memory cache, the disk cache or a compilation (with the compile time), its host
wall time and the calling thread's CPU time, the bytes of its array arguments and
results and, on ``ascend-sim``, the simulator's counters (GM <-> UB bytes, calls per
AscendC API) and, on the ascend targets, the kernels it launched (name and block_dim
of each launch).  On ``target="ascend"`` the run time includes the stream synchronization
the call waits for (results are host arrays).  Profiles nest and collect calls from
every thread.  With no profile active a call pays one test of a module global.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from pyasc.runtime.profiler_report import (
    CallRecord,
    CompileRecord,
    aggregate,
    chrome_trace,
    table,
)


class _Active:
    """The profiles recording now (a tuple, replaced whole: readers take no lock)."""

    sessions: tuple[Profile, ...] = ()


ACTIVE = _Active()
_LOCK = threading.Lock()
_WATCHERS: list[Callable[[bool], None]] = []
_CALL = threading.local()  # the compile of the call this thread is profiling


class Profile:
    """A recording of the pyasc calls made while it is active (``with Profile() as p``),
    from any thread."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.compiles: list[CompileRecord] = []
        self._lock = threading.Lock()
        self.origin_ns = time.perf_counter_ns()

    def __enter__(self) -> Profile:
        with _LOCK:
            ACTIVE.sessions = (*ACTIVE.sessions, self)
            _tell_watchers()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with _LOCK:
            ACTIVE.sessions = tuple(s for s in ACTIVE.sessions if s is not self)
            _tell_watchers()

    def _add(self, record: CallRecord | CompileRecord) -> None:
        with self._lock:
            (self.calls if isinstance(record, CallRecord) else self.compiles).append(record)

    def stats(self) -> list[dict[str, Any]]:
        """Per (function, target, signature): calls, cache outcomes, times, bytes and
        summed counters, the most expensive first."""
        with self._lock:
            return aggregate(list(self.calls))

    def report(self) -> str:
        """:meth:`stats` as a readable table."""
        return table(self.stats())

    def export_chrome_trace(self, path: str) -> None:
        """Write the calls and compiles as Chrome trace JSON (Perfetto opens it)."""
        with self._lock:
            chrome_trace(path, list(self.calls), list(self.compiles), self.origin_ns)


def watch(setter: Callable[[bool], None]) -> None:
    """Call ``setter(recording)`` now and whenever profiling starts or stops: the call
    path keeps the answer in a module global, the cheapest test Python has (reading
    ``ACTIVE.sessions`` on every call cost ~20 ns, 5% of the fastest call)."""
    with _LOCK:
        _WATCHERS.append(setter)
        setter(bool(ACTIVE.sessions))


def _tell_watchers() -> None:
    for setter in _WATCHERS:
        setter(bool(ACTIVE.sessions))


def note_compile(function: str, target: str, source: str, start_ns: int) -> None:
    """Record that a kernel was made ready (called on cache misses only)."""
    sessions = ACTIVE.sessions
    if not sessions:
        return
    wall = time.perf_counter_ns() - start_ns
    record = CompileRecord(function, target, source, start_ns, wall, threading.get_ident())
    for s in sessions:
        s._add(record)
    _CALL.compile = (source, getattr(_CALL, "compile", ("", 0))[1] + wall)


def profiled_call(function: str, target: str, run: Any, args: tuple, kwargs: dict,
                  find_kernel: Any) -> Any:
    """Run ``run(args, kwargs)`` recording it in every active profile; ``find_kernel()``
    gives the kernel (or ``None``) and its signature text afterwards."""
    _CALL.compile = ("memory", 0)
    cpu0, t0 = time.thread_time_ns(), time.perf_counter_ns()
    out = run(args, kwargs)
    wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - cpu0
    source, compile_ns = _CALL.compile
    kernel, signature = find_kernel()
    counters = dict(getattr(kernel, "last_counters", None) or {})
    launches = tuple(getattr(kernel, "last_kernels", None) or ())
    record = CallRecord(function, target, signature, source, compile_ns, t0, wall, cpu,
                        _nbytes((args, tuple(kwargs.values()))), _nbytes(out),
                        threading.get_ident(), counters, launches)
    for s in ACTIVE.sessions:
        s._add(record)
    return out


def _nbytes(value: object) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, tuple | list):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0) or 0) if hasattr(value, "__pyasc_device_array__") \
        else 0


__all__ = ["ACTIVE", "CallRecord", "CompileRecord", "Profile", "note_compile",
           "profiled_call", "watch"]
