"""Ctrl-C (SIGINT) in compiled code: the Python side.

A running kernel polls (every ``emit_poll.BUDGET`` iterations of its loops, see
``pyasc.backend.llvm.emit_poll``) the process's interrupt state, kept by the runtime
module next to the thread pool (``pyasc.backend.llvm.interrupt_rt``).  When SIGINT
arrived, the poll on Python's main thread runs Python's pending signal handlers right
there, as the interpreter would between two bytecodes: the default handler raises
``KeyboardInterrupt``, which the kernel takes as a request to stop; it frees what it
allocated, its pool workers stop at their next poll, and :func:`raise_pending` raises
the exception at the user's call.  A handler of the user's own runs during the kernel;
if it returns, the kernel goes on.  Kernels on other threads are not interrupted
(Python delivers signals to the main thread only).  An ignored SIGINT (``SIG_IGN``)
stays ignored.  Arrays the kernel writes in place may be partially written.

This module binds the runtime module once it is loaded (:func:`bind`, from
``threads``): it hands over the C-API functions the poll calls and the main thread's
id, and again in a forked child, whose main thread is the one that forked.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import NoReturn

SYMBOLS = {"epoch": "pyasc.rt.epoch", "poll": "pyasc.rt.poll",
           "configure": "pyasc.rt.interrupt_configure", "take": "pyasc.rt.interrupt_take",
           "hooked": "pyasc.rt.interrupt_hooked"}
"""The runtime module's interrupt functions, by role."""

API_FUNCTIONS = ("PyGILState_Ensure", "PyGILState_Release", "PyErr_CheckSignals",
                 "PyErr_Fetch")
"""C-API functions the poll calls, in the order ``configure`` receives them."""


class _Runtime:
    """ctypes callers for the runtime module's interrupt functions."""

    def __init__(self, addresses: dict[str, int]) -> None:
        self._configure = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
            addresses[SYMBOLS["configure"]])
        self._take = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(
            addresses[SYMBOLS["take"]])
        self._hooked = ctypes.CFUNCTYPE(ctypes.c_int32)(addresses[SYMBOLS["hooked"]])
        self._api = (ctypes.c_void_p * len(API_FUNCTIONS))(
            *[ctypes.cast(getattr(ctypes.pythonapi, n), ctypes.c_void_p).value
              for n in API_FUNCTIONS])

    def configure(self) -> None:
        """Tell the runtime the C-API and the current main thread (Linux + CPython only:
        elsewhere no thread runs Python handlers from a kernel, nothing is hooked)."""
        supported = sys.platform.startswith("linux") and sys.implementation.name == "cpython"
        main = threading.main_thread().ident if supported else 0
        self._configure(ctypes.addressof(self._api), main or 0)

    def take(self) -> tuple[int, int, int] | None:
        out = (ctypes.c_void_p * 3)()
        return (out[0] or 0, out[1] or 0, out[2] or 0) if self._take(out) else None

    def hooked(self) -> bool:
        return bool(self._hooked())


_bound: list[_Runtime] = []  # the process's runtime module (bound once, by threads)


def bind(addresses: dict[str, int]) -> None:
    """Configure the runtime module just loaded (``addresses``: its symbols)."""
    runtime = _Runtime(addresses)
    runtime.configure()
    _bound[:] = [runtime]
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=runtime.configure)


def raise_pending() -> NoReturn:
    """Raise what a signal handler raised while a kernel ran (the kernel returned
    ``ERR_INTERRUPT``), at the caller; ``KeyboardInterrupt`` if nothing was kept."""
    taken = _bound[0].take() if _bound else None
    if taken is not None:
        restore = ctypes.pythonapi.PyErr_Restore
        restore.argtypes, restore.restype = [ctypes.c_void_p] * 3, None
        restore(*(ctypes.c_void_p(p or None) for p in taken))  # raises it (PyDLL)
    raise KeyboardInterrupt


def hooked() -> bool:
    """Whether pyasc's SIGINT hook is the process's C-level handler right now (it is
    installed by the first long kernel on the main thread)."""
    return bool(_bound) and _bound[0].hooked()

