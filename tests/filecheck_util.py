"""FileCheck-style checking of IR text, with the ``filecheck`` package from PyPI.

An IR text test is one ``.ir`` file holding a ``// RUN: pass1,pass2`` line, the input
module, and ``// CHECK:`` lines (the IR grammar ignores ``//`` comments, so the file
parses as the input module).  :func:`run_ir_text_test` parses it, runs the passes, and
checks the printed result against the file's CHECK lines.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

from filecheck.matcher import Matcher
from filecheck.options import Options

_RUN_RE = re.compile(r"^\s*//\s*RUN:\s*(.*)$", re.MULTILINE)


def filecheck(output: str, check_file: Path) -> tuple[int, str]:
    """Match ``output`` against the CHECK lines of ``check_file``.

    Returns FileCheck's exit code (0 on success) and its diagnostics.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / "output.ir"
        out_file.write_text(output + "\n")
        err = io.StringIO()
        # The matcher reports on sys.stderr (and prints some tracing to stdout).
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            opts = Options(match_filename=str(check_file), input_file=str(out_file))
            code = Matcher.from_opts(opts).run()
    return code, err.getvalue()


def pipeline_of(text: str) -> list[str]:
    """The pass names of the ``// RUN:`` line (comma separated)."""
    m = _RUN_RE.search(text)
    if m is None:
        raise ValueError("IR text test has no '// RUN:' line")
    return [name.strip() for name in m.group(1).split(",") if name.strip()]


def run_ir_text_test(path: Path) -> str:
    """Run the test in ``path``; returns the output IR; raises AssertionError on mismatch."""
    from pyasc.ir import parse_module
    from pyasc.ir.passes import run_pipeline

    text = path.read_text()
    module = parse_module(text)
    run_pipeline(module, pipeline_of(text))
    output = str(module)
    code, diagnostics = filecheck(output, path)
    assert code == 0, f"{path.name}: FileCheck failed\n{diagnostics}\n--- output:\n{output}"
    return output
