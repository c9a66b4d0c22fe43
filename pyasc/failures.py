"""The Python exception for a failed run-time check, the same on every target.

A kernel (CPU code, the AscendC simulator's status words, the IR interpreter) reports
which check failed and, for checks that carry them, the run-time values its message
names.  :func:`check_failure` turns that into the exception the user sees:

* kind ``bounds``: :class:`~pyasc.errors.IndexOutOfBoundsError` (E50004, an
  ``IndexError``) located at the indexing expression, rendered like every pyasc
  diagnostic (``file:line:col``, the source line, a caret, a hint);
* kind ``shape``: :class:`~pyasc.errors.ShapeInferenceError` (E50002, a
  ``ValueError``), rendered the same way, its message naming the actual sizes;
* ``assert`` -> ``AssertionError``, ``value`` -> ``ValueError``: the message prefixed
  with ``file:line:col`` and followed by the source line; ``memory``/``oom`` ->
  ``OutOfMemoryError``.
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence
from dataclasses import dataclass

from pyasc.callsite import check_failed
from pyasc.errors import (
    IndexOutOfBoundsError,
    OutOfMemoryError,
    PyascError,
    ShapeInferenceError,
)

ERROR_KINDS: dict[str, type[Exception]] = {
    "assert": AssertionError, "bounds": IndexOutOfBoundsError, "shape": ShapeInferenceError,
    "value": ValueError, "memory": OutOfMemoryError, "oom": OutOfMemoryError,
}
"""Python exception raised for each kind of run-time error a kernel reports."""


@dataclass(frozen=True)
class Site:
    """Where a check is in the user's source (``line == 0``: unknown)."""

    file: str | None = None
    line: int = 0
    col: int = 0  # 1-based, as IR locations
    source: str | None = None  # the source line, read when the check was compiled

    @classmethod
    def of(cls, file: str | None, line: int, col: int) -> Site:
        """A site whose source line is read now (``linecache``), if the file exists."""
        text = linecache.getline(file, line).rstrip("\n") if file and line else ""
        return cls(file, line, col, text or None)

    def prefix(self, message: str) -> str:
        """``file:line:col: message`` followed by the stripped source line."""
        if not self.file:
            return message
        out = f"{self.file}:{self.line}:{self.col}: {message}"
        return out + (f"\n    {self.source.strip()}" if self.source else "")


def fill(template: str, values: Sequence[int]) -> str:
    """A check's message with its run-time values (no values: the text as it is)."""
    if not values:
        return template
    try:
        return template.format(*(int(v) for v in values))
    except (IndexError, KeyError, ValueError):  # a malformed template is still shown
        return f"{template} {tuple(int(v) for v in values)}"


def check_failure(kind: str, message: str, values: Sequence[int] = (),
                  site: Site | None = None) -> Exception:
    """The exception for the failed check ``kind`` with ``message`` (a template when
    ``values`` are given) at ``site``."""
    site = site or Site()
    text = fill(message, values)
    cls = ERROR_KINDS.get(kind, RuntimeError)
    if issubclass(cls, PyascError):
        return cls(text, filename=site.file, lineno=site.line or None,
                   col_offset=max(site.col - 1, 0) if site.line else None,
                   source_line=site.source)
    return check_failed(cls, site.prefix(text))  # marked: the user's frames are shown


__all__ = ["ERROR_KINDS", "Site", "check_failure", "fill"]
