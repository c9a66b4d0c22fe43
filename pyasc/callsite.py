"""The user's view of an error: their call site, their frames, nothing of pyasc's.

Argument errors, decoration-time option errors and the like point at the first stack
frame outside pyasc: the user's call or decorator line, with the column of the call
expression when Python records it (3.11+).  Used by the frontend (binding, options)
and by the runtime (a compiled kernel's argument checks), hence outside both.

Errors leave the public API (``@hybrid``, calling a hybrid function, its inspection
methods) through :func:`public_api` (or the same ``try`` inlined in the call path),
which passes them to :func:`user_error`: a coded error without a location gets the
user's call site; pyasc's own frames are dropped from the traceback (as JAX and
TensorFlow filter theirs; the entry point's own frame stays, as theirs does: its line
says how to see the rest) and the internal exceptions it was raised from are not
printed, unless ``PYASC_TRACEBACK=full``.  Only coded errors and the exceptions of a
kernel's run-time checks (:func:`check_failed`: ``IndexError`` for an index out of
bounds...) are filtered: exceptions of the user's own code (``target="interpret"``) and
of pyasc bugs keep their whole traceback.  ``KeyboardInterrupt`` is never touched.

A frame belongs to pyasc when its code lives in the package or its module is a
``pyasc`` module: the callers the runtime and the dispatcher generate with ``exec``
run with ``__name__`` set to the generating module for this reason (their file name is
``<string>``, like any exec'd user code).  Frames are inspected only when an error is
raised, never on a successful call.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TypeVar

from pyasc.errors import PyascError

TRACEBACK_VARIABLE = "PYASC_TRACEBACK"
"""``PYASC_TRACEBACK=full`` keeps pyasc's frames and chained exceptions in tracebacks."""
_CHECK_MARK = "__pyasc_check__"
F = TypeVar("F", bound=Callable[..., Any])

_PACKAGE_DIR = Path(__file__).resolve().parent


def _inside_pyasc(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__")
    if isinstance(module, str) and (module == "pyasc" or module.startswith("pyasc.")):
        return True
    return library_file(frame.f_code.co_filename)


def library_file(filename: str) -> bool:
    """Whether ``filename`` is a source file of the pyasc package (``pyasc.ops``...)."""
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def _user_frame() -> FrameType | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _inside_pyasc(frame):
        frame = frame.f_back
    return frame


def at_caller(err: PyascError) -> PyascError:
    """Attach the user's call-site location to ``err`` (if it has none) and return it."""
    frame = _user_frame()
    if frame is None:
        return err
    lineno, col, end = frame.f_lineno, 0, None
    positions = _positions(frame)
    if positions is not None and positions[0] == lineno:
        col, end = positions[2] or 0, positions[3] if positions[1] == lineno else None
    return err.with_location(frame.f_code.co_filename, lineno, col, end)


def _positions(frame: FrameType) -> tuple | None:
    """(lineno, end_lineno, col, end_col) of the frame's current instruction."""
    code = frame.f_code
    if not hasattr(code, "co_positions"):
        return None
    for i, pos in enumerate(code.co_positions()):
        if i == frame.f_lasti // 2:
            return pos
    return None


def check_failed(cls: type[Exception], message: str) -> Exception:
    """The exception a kernel's failed run-time check raises (``cls(message)``), marked
    as caused by the user's data so that :func:`user_error` shows the user's frames."""
    exc = cls(message)
    setattr(exc, _CHECK_MARK, True)
    return exc


def for_user(exc: BaseException) -> bool:
    """Whether ``exc`` is an error the user caused: coded, or a run-time check's."""
    return isinstance(exc, PyascError) or getattr(exc, _CHECK_MARK, False) is True


def full_tracebacks() -> bool:
    """Whether ``PYASC_TRACEBACK=full`` asks for pyasc's frames too."""
    return os.environ.get(TRACEBACK_VARIABLE, "").strip().lower() == "full"


def user_error(exc: BaseException) -> BaseException:
    """``exc`` ready to leave the public API (see the module docstring); returns it."""
    if isinstance(exc, PyascError):
        at_caller(exc)
    if full_tracebacks():
        return exc
    exc.__cause__ = None  # the message says what went wrong; the chain is pyasc's own
    exc.__suppress_context__ = True
    return exc.with_traceback(_without_pyasc(exc.__traceback__))


def _without_pyasc(tb: TracebackType | None) -> TracebackType | None:
    kept = []
    while tb is not None:
        if not _inside_pyasc(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for entry in reversed(kept):
        out = TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def public_api(fn: F) -> F:
    """Decorator for a public entry point: errors the user caused leave it through
    :func:`user_error`."""
    @functools.wraps(fn)
    def public(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not for_user(exc):
                raise
            user_error(exc)
            raise exc  # pyasc's frames are hidden: PYASC_TRACEBACK=full shows them
    return public  # type: ignore[return-value]
