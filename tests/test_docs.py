"""What the docs tell users is what the code does (examples, paths, commands, claims)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from pyasc import errors, hybrid
from pyasc.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", page.read_text(), re.S)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_examples_are_python(page):
    for block in _blocks(page, "python"):
        ast.parse(block)  # a SyntaxError names the line


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_ir_locations_in_examples_are_absolute_paths_as_printed(page):
    for path in re.findall(r'loc\("([^"]*)"', page.read_text()):
        assert path.startswith("/"), f"{page.name}: loc(\"{path}\"...) is not what pyasc prints"


@hybrid
def identity_tail(x):
    return x[1:]


def test_ir_locations_are_printed_as_the_functions_file():
    assert f'loc("{__file__}":' in identity_tail.ir(np.ones(4))


def test_error_hints_name_only_commands_that_exist():
    texts = [(ROOT / "docs" / "errors.md").read_text()]
    texts += [cls.default_hint for cls in errors.ALL_ERRORS]
    for text in texts:
        for command in re.findall(r"`pyasc ([a-z][\w-]*)", text):
            assert command in COMMANDS, f"'pyasc {command}' is not a command: {text}"


def test_a_returned_view_shares_memory_as_the_numpy_page_says():
    x = np.arange(6.0)
    assert np.shares_memory(identity_tail(x), x)
    page = (ROOT / "docs" / "numpy-support.md").read_text()
    assert "A view that is *returned* comes back\n  as a view sharing the argument's memory" \
        in page


@hybrid(target="ascend")
def on_npu(x):
    return x + 1


def test_the_readme_says_what_target_ascend_raises(monkeypatch):
    for name in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(errors.PyascError) as info:
        on_npu(np.ones(3))
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| AscendCL runtime"))
    assert f'`target="ascend"` raises {info.value.code} (`{type(info.value).__name__}`)' in row
