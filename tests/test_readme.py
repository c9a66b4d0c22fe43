"""The README's test command is exactly what CI runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [c.strip() for c in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_ci_runs_the_readme_test_command():
    test_cmds = [c for c in readme_commands() if "pytest" in c]
    assert len(test_cmds) == 1
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    assert test_cmds[0] in ci_lines


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_readme_lists_every_decorator_option():
    from pyasc.jit.options import OPTION_NAMES

    options_table = readme_section("Options").split("Environment variables")[0]
    rows = re.findall(r"^\| `(\w+)` \|", options_table, re.M)
    assert sorted(rows) == sorted(OPTION_NAMES)


ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*$")


def _env_reads(path: Path) -> set[str]:
    """Variables a module reads: ``os.environ.get/[]``, ``os.getenv``, ``env.get`` of
    an environment mapping, with a literal or a module constant; and constants named
    ``*_VARIABLE``/``ENV`` (the package's names for the variables it reads)."""
    tree = ast.parse(path.read_text())
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
              for t in n.targets if isinstance(t, ast.Name)}
    found = {v for k, v in consts.items() if k == "ENV" or k.endswith("_VARIABLE")}

    def key(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return consts.get(node.id) if isinstance(node, ast.Name) else None

    def environment(node: ast.AST) -> bool:
        text = ast.unparse(node)
        return "environ" in text or text == "env"

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr == "getenv" or f.attr == "get" and environment(f.value):
                found.add(key(node.args[0]))
        elif isinstance(node, ast.Subscript) and environment(node.value):
            found.add(key(node.slice))
    return {v for v in found if v and ENV_NAME.match(v)}


def package_env_variables() -> set[str]:
    package = ROOT / "pyasc"
    names: set[str] = set()
    for path in package.rglob("*.py"):
        names |= _env_reads(path)
    for path in package.rglob("*.h"):  # the ascend-sim host model reads some natively
        names |= set(re.findall(r'getenv\("(\w+)"\)', path.read_text()))
    return names


def test_readme_lists_every_environment_variable_the_package_reads():
    found = package_env_variables()
    assert {"PYASC_TARGET", "PYASC_NUM_THREADS", "PYASC_CACHE_DIR", "PYASC_DUMP_IR",
            "PYASC_DISABLE_PASSES", "PYASC_TRACEBACK", "PYASC_SIM_THREADS"} <= found
    section = readme_section("Options")
    missing = sorted(v for v in found if f"`{v}`" not in section)
    assert not missing, f"add these environment variables to the README's Options: {missing}"
