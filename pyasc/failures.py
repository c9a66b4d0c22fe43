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
  ``OutOfMemoryError``;
* ``raise:<Name>|<formats>`` (:func:`raise_kind`): a ``raise`` statement of the
  built-in exception ``<Name>`` (:data:`RAISABLE`), rendered as an assertion is.  Its
  message is a template of the f-string's run-time values, which a kernel reports as
  integers: ``formats`` says, per value, what it was (``py:int``, ``np:float32``...),
  floats as their bits (float16 widened to float32 first), so the text is exactly
  Python's ``f"{x}"`` of that value (``{x!r}`` of an ``np.float32`` included).
"""

from __future__ import annotations

import builtins
import linecache
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


RAISABLE = frozenset({
    "Exception", "ArithmeticError", "AssertionError", "FloatingPointError", "IndexError",
    "LookupError", "NotImplementedError", "OverflowError", "RuntimeError", "TypeError",
    "ValueError", "ZeroDivisionError",
})
"""Built-in exceptions compiled code may ``raise`` (their text is their message)."""

_RAISE = "raise:"


def raise_kind(name: str, formats: Sequence[str] = ()) -> str:
    """The check kind of ``raise <name>(f"...")`` whose run-time values are
    ``formats`` (``py:int|float|bool`` or ``np:<dtype name>`` each)."""
    return f"{_RAISE}{name}|{','.join(formats)}"


def parse_raise_kind(kind: str) -> tuple[type[Exception], tuple[str, ...]] | None:
    """``(exception class, formats)`` of a :func:`raise_kind`, else ``None``."""
    if not kind.startswith(_RAISE):
        return None
    name, _, formats = kind[len(_RAISE):].partition("|")
    if name not in RAISABLE:
        return None
    return getattr(builtins, name), tuple(f for f in formats.split(",") if f)


def decode_value(bits: int, fmt: str) -> object:
    """The Python or numpy scalar a kernel reported as the integer ``bits``."""
    kind, _, name = fmt.partition(":")
    dtype = np.dtype({"int": "int64", "float": "float64", "bool": "bool"}.get(name, name))
    raw = np.array(int(bits) & ((1 << 64) - 1), dtype=np.uint64)  # any sign extension
    if dtype.kind == "f":  # float64 as its bits; narrower floats as float32 bits
        wide = np.dtype("float64" if dtype.itemsize == 8 else "float32")
        value = raw.astype(f"uint{8 * wide.itemsize}").view(wide).astype(dtype)[()]
    else:  # integers wrap to their width, as the kernel's value was
        value = raw.astype(dtype)[()]
    return value.item() if kind == "py" else value


def _raise_text(message: str, formats: Sequence[str], values: Sequence[int]) -> str:
    try:
        return message.format(*(decode_value(v, f) for v, f in zip(values, formats,
                                                                    strict=True)))
    except (IndexError, KeyError, ValueError, TypeError):  # still show something
        return fill(message, values)


def check_failure(kind: str, message: str, values: Sequence[int] = (),
                  site: Site | None = None) -> Exception:
    """The exception for the failed check ``kind`` with ``message`` (a template when
    ``values`` are given) at ``site``."""
    site = site or Site()
    raised = parse_raise_kind(kind)
    if raised is not None:
        return check_failed(raised[0], site.prefix(_raise_text(message, raised[1], values)))
    text = fill(message, values)
    cls = ERROR_KINDS.get(kind, RuntimeError)
    if issubclass(cls, PyascError):
        return cls(text, filename=site.file, lineno=site.line or None,
                   col_offset=max(site.col - 1, 0) if site.line else None,
                   source_line=site.source)
    return check_failed(cls, site.prefix(text))  # marked: the user's frames are shown


__all__ = ["ERROR_KINDS", "RAISABLE", "Site", "check_failure", "decode_value", "fill",
           "parse_raise_kind", "raise_kind"]
