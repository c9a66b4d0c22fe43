"""IR text tests: each ``tests/ir/text/*.ir`` runs its ``// RUN:`` passes and FileChecks
the result (see ``tests/filecheck_util.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from filecheck_util import filecheck, pipeline_of, run_ir_text_test

from pyasc.ir import parse_module
from pyasc.ir.passes import PASS_REGISTRY

TEXT_DIR = Path(__file__).parent / "text"
CASES = sorted(TEXT_DIR.glob("*.ir"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_ir_text(path: Path) -> None:
    output = run_ir_text_test(path)
    assert str(parse_module(output)) == output  # pass output round-trips too


def test_every_pass_has_text_tests() -> None:
    assert len(CASES) >= 25
    used = {name for path in CASES for name in pipeline_of(path.read_text())}
    assert {"canonicalize", "cse", "dce"} <= used
    assert used <= set(PASS_REGISTRY)


def test_filecheck_reports_mismatches(tmp_path: Path) -> None:
    checks = tmp_path / "c.ir"
    checks.write_text('// CHECK: "arith.add"(%x, %y)\n// CHECK-NOT: "arith.mul"\n')
    assert filecheck('%s = "arith.add"(%x, %y)', checks)[0] == 0
    code, message = filecheck('%s = "arith.add"(%y, %x)', checks)
    assert code != 0 and "arith.add" in message
    assert filecheck('%s = "arith.add"(%x, %y)\n%t = "arith.mul"(%s, %s)', checks)[0] != 0


def test_run_line_is_required(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="RUN"):
        pipeline_of('"builtin.module"() ({\n}) : () -> ()')
