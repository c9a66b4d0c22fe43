"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml)
are kept, and no module's imports (lazy ones inside functions and ``TYPE_CHECKING``
ones included) lead back to it.  A few layering facts of issue 20 are also checked by
name, so a break says exactly what broke: the runtime imports no backend (the thread
pool's loader is handed to it, ``runtime.pool_code``), ``ir.core`` is below the
printer (``core.install_printer``), and the AscendC emitters import one way."""

from __future__ import annotations

import ast
import functools
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pyasc"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports anywhere in its body."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
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
            while n and n not in modules:
                n = n.rpartition(".")[0]
            # importing one's own package face is how a submodule is reached, not a circle
            if n and n != name and not name.startswith(n + "."):
                found.add(n)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: _imports(p, set(paths)) for m, p in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    u = stack.pop()
                    on_stack.discard(u)
                    comp.append(u)
                    if u == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_import_linter_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    proc = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def reachable(start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    graph = import_graph()
    seen, todo = set(), [start]
    while todo:
        for m in graph[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _modules(prefix: str) -> list[str]:
    return sorted(m for m in import_graph() if m == prefix or m.startswith(prefix + "."))


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
