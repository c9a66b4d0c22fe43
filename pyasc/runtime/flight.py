"""Single flight: the first thread asking for a key computes it; the others wait for it.

Everything pyasc builds once per key on a first call goes through a
:class:`SingleFlight` (a ``@hybrid`` function's IR per specialization key, its kernel
per key and target, its call entry; an ascend-sim library per build key), so threads
making the same first call at once get the one result one of them computed.  The rules:

* the table's lock is held only to register, look up and remove a flight, never while
  computing: different keys are computed at the same time, and a computation may start
  flights for other keys;
* a thread asking again for a key its own computation is computing (re-entry) computes
  it itself, as waiting for itself would never end;
* when a computation raises, its waiters compute the key themselves (so each thread gets
  its own exception, located at its own call, never one object shared by threads);
* a computation stores its result where later callers look first (a dict); the flight
  only covers the time until it is stored, so ``compute`` should look there first too
  (another flight may have stored it between the caller's look and its flight).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any


class _Flight:
    """One computation in progress: its owner thread and its outcome once done."""

    __slots__ = ("done", "failed", "owner", "value")

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.failed = False
        self.value: Any = None


class SingleFlight:
    """Per-key single flight (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Flight] = {}

    def run(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` for ``key``, or the result of the thread already computing it."""
        while True:
            with self._lock:
                flight = self._flights.get(key)
                if flight is None:
                    flight = self._flights[key] = _Flight()
                    break
            if flight.owner == threading.get_ident():
                return compute()  # re-entry: this thread is the one computing the key
            flight.done.wait()
            if not flight.failed:
                return flight.value
            # the owner's computation raised: try again (this thread may become the owner)
        try:
            flight.value = compute()
        except BaseException:
            flight.failed = True
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()
        return flight.value

    def running(self) -> int:
        """Flights in progress (for tests and diagnostics)."""
        with self._lock:
            return len(self._flights)
