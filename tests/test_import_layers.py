"""Import layering that issue 20 established: lower layers never import upper ones.

Every import statement counts (lazy imports inside functions and ``TYPE_CHECKING``
imports included), as in the project's import-cycle hook; a module importing one of its
own ancestor packages does not (Python imports them first anyway).  Checked:

* the runtime (``pyasc.runtime``) imports no backend: the CPU backend builds the thread
  pool's object code, and the ``pyasc`` package hands its loader to the runtime
  (``runtime.pool_code``);
* ``pyasc.ir.core`` is below ``pyasc.ir.printer`` (``core.install_printer``);
* the AscendC scalar-kernel emitters import one another in one direction only (shared
  pieces in ``scalar_context``; nested regions are emitted through the context object),
  and so do the vector-kernel emitters (``emit_vector`` calls ``emit_tile``).
"""

from __future__ import annotations

import ast
import functools
import itertools
from pathlib import Path

import pytest

import pyasc

ROOT = Path(pyasc.__file__).resolve().parent


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    """``{module: modules it imports}`` over the ``pyasc`` package."""
    files = {}
    for path in ROOT.rglob("*.py"):
        parts = ("pyasc",) + path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return {name: frozenset(_imports(name, path, files)) for name, path in files.items()}


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != name and not name.startswith(n + "."):
                found.add(n)
    return found


def reachable(start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for m in graph()[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _modules(prefix: str) -> list[str]:
    return sorted(m for m in graph() if m == prefix or m.startswith(prefix + "."))


@pytest.mark.parametrize("module", _modules("pyasc.runtime"))
def test_runtime_imports_no_backend(module):
    upward = sorted(m for m in reachable(module) if m.startswith("pyasc.backend"))
    assert not upward, f"{module} imports {upward}"


def test_ir_core_is_below_the_printer():
    assert "pyasc.ir.printer" not in reachable("pyasc.ir.core")


_EMITTER_GROUPS = {
    "scalar": ("emit_scalar", "emit_control", "emit_carry", "scalar_context"),
    "vector": ("emit_vector", "emit_tile"),
}


@pytest.mark.parametrize("group", sorted(_EMITTER_GROUPS))
def test_ascendc_emitters_import_one_way(group):
    modules = [f"pyasc.backend.ascendc.{m}" for m in _EMITTER_GROUPS[group]]
    both = [(a, b) for a, b in itertools.combinations(modules, 2)
            if b in reachable(a) and a in reachable(b)]
    assert not both, f"emitters importing each other: {both}"
