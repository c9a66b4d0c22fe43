"""Helpers for frontend text tests: FileCheck-style matching of IR text."""

from __future__ import annotations

import contextlib
import io
import tempfile
import textwrap
from pathlib import Path

from filecheck.matcher import Matcher
from filecheck.options import Options


def filecheck(ir: str, checks: str) -> None:
    """Assert that ``ir`` matches the ``CHECK`` lines in ``checks`` (FileCheck syntax)."""
    with tempfile.TemporaryDirectory() as tmp:
        check_file = Path(tmp) / "checks.txt"
        check_file.write_text(textwrap.dedent(checks))
        input_file = Path(tmp) / "input.ir"
        input_file.write_text(ir + "\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
            opts = Options(match_filename=str(check_file), input_file=str(input_file))
            code = Matcher.from_opts(opts).run()
    assert code == 0, f"FileCheck failed:\n{err.getvalue()}\n--- IR:\n{ir}"


def ops(ir: str) -> list[str]:
    """The op names of an IR text, in order."""
    import re

    return re.findall(r'"([a-z_]+\.[a-z_]+)"\(', ir)
