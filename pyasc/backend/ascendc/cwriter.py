"""A C++ source writer that maps generated statements back to Python lines.

``w.line(text, loc)`` writes one statement; when ``loc`` is a known Python location a
``#line N "file.py"`` directive precedes it, so the compiler (bisheng or the ascend-sim
host build) reports errors, and ascend-sim reports violations, at the user's line.  A
statement without a location after mapped ones first restores the real numbering of
the generated file with ``#line K "<name>.cpp"``.  Python file names are written as base
names (the source does not depend on where the checkout lives); :attr:`files` keeps the
full paths for turning reports back into file names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from pyasc.ir.core import Location


class CWriter:
    """Accumulates lines with indentation and ``#line`` bookkeeping."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: list[str] = []
        self.depth = 0
        self.mapped = False          # the last directive named a Python file
        self.note: tuple[str, int] | None = None   # the Python line last marked
        self.files: dict[str, str] = {}   # base name -> full path

    def raw(self, text: str = "") -> None:
        """A line at column 0 with no location handling (comments, preprocessor)."""
        self._restore()
        self.lines.append(text)

    def line(self, text: str, loc: Location | None = None, directive: bool = True) -> None:
        """An indented statement, mapped to ``loc`` when it is known.

        With ``directive=False`` (statements that cannot fail: plain arithmetic) a
        ``// file.py:N`` comment marks where the Python line changes instead."""
        if loc is not None and loc.known and loc.line > 0:
            base = os.path.basename(loc.file or "")
            self.files.setdefault(base, loc.file or "")
            if directive:
                self.lines.append(f"#line {loc.line} {json.dumps(base)}")
                self.mapped = True
            else:
                self._restore()
                if self.note != (base, loc.line):
                    self.lines.append("  " * self.depth + f"// {base}:{loc.line}")
            self.note = (base, loc.line)
        else:
            self._restore()
        self.lines.append("  " * self.depth + text)

    def _restore(self) -> None:
        if self.mapped:
            # The directive sets the number of the line that follows it.
            self.lines.append(f"#line {len(self.lines) + 2} {json.dumps(self.filename)}")
            self.mapped = False

    @contextmanager
    def block(self, head: str, loc: Location | None = None, tail: str = "}",
              directive: bool = True) -> Iterator[None]:
        """``head {`` ... ``}`` with the body indented."""
        self.line(head + " {", loc, directive)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line(tail)

    def text(self) -> str:
        self._restore()
        return "\n".join(self.lines) + "\n"
