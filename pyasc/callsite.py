"""Locating errors at the user's call site (for errors not tied to a function body).

Argument errors, decoration-time option errors and the like point at the first stack
frame outside pyasc: the user's call or decorator line, with the column of the call
expression when Python records it (3.11+).  Used by the frontend (binding, options)
and by the runtime (a compiled kernel's argument checks), hence outside both.

A frame belongs to pyasc when its code lives in the package or its module is a
``pyasc`` module: the callers the runtime and the dispatcher generate with ``exec``
run with ``__name__`` set to the generating module for this reason (their file name is
``<string>``, like any exec'd user code).  Frames are inspected only when an error is
raised, never on a successful call.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType

from pyasc.errors import PyascError

_PACKAGE_DIR = Path(__file__).resolve().parent


def _inside_pyasc(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__")
    if isinstance(module, str) and (module == "pyasc" or module.startswith("pyasc.")):
        return True
    try:
        return Path(frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE_DIR)
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
