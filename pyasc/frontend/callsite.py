"""Locating errors at the user's call site (for errors not tied to a function body).

Argument errors, decoration-time option errors and the like point at the first stack
frame outside the ``pyasc`` package: the user's call or decorator line, with the column
of the call expression when Python records it (3.11+).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyasc.errors import PyascError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _inside_pyasc(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def _user_frame():
    frame = sys._getframe(1)
    while frame is not None and _inside_pyasc(frame.f_code.co_filename):
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


def _positions(frame) -> tuple | None:
    """(lineno, end_lineno, col, end_col) of the frame's current instruction."""
    code = frame.f_code
    if not hasattr(code, "co_positions"):
        return None
    for i, pos in enumerate(code.co_positions()):
        if i == frame.f_lasti // 2:
            return pos
    return None
