"""Fresh processes: ``import pyasc`` stays light, and a disk-cache hit calls the stored
kernel without running (or even importing) the frontend's compiler, the passes, the
code generator or LLVM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("lark", "llvmlite.binding", "llvmlite.ir", "pyasc.frontend.compiler",
         "pyasc.frontend.lowering", "pyasc.ir.builder", "pyasc.ir.parser", "pyasc.ir.passes",
         "pyasc.ir.ops", "pyasc.backend.llvm.generate", "pyasc.backend.llvm.codegen",
         "pyasc.backend.ascendc")
"""Modules a disk-cache hit must not import (prefixes; the key reads the version of the
``llvmlite`` package, which costs nothing)."""
LIGHT_IMPORT = (*HEAVY, "llvmlite", "pyasc.ir", "pyasc.backend.llvm", "pyasc.runtime.cpu")
"""... and what ``import pyasc`` must not import."""

KERNELS = '''
import numpy as np
from pyasc import hybrid

BIAS = 0.5


@hybrid(target="cpu")
def relu(x):
    return np.maximum(x, 0) + BIAS


@hybrid(target="cpu")
def total(x, axis):
    return x.sum(axis=axis)


def make_closure(k):
    @hybrid(target="cpu")
    def add_k(x):
        return x + k
    return add_k
'''

SCRIPT = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import kernels
x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
t0 = time.perf_counter()
relu = kernels.relu(x)
first = time.perf_counter() - t0
out = {"relu": relu.tolist(), "first": first,
       "closures": [kernels.make_closure(k)(x).tolist() for k in (1, 2)],
       "totals": [kernels.total(x, a).tolist() for a in (0, 1)],
       "built_ir": [len(f._specs) for f in (kernels.relu, kernels.total)],
       "by_value": sorted(map(list, kernels.total._by_value)),
       "modules": sorted(m for m in sys.modules if m.startswith(HEAVY))}
out["inspect"] = '"func.func"' in kernels.relu.ir(x) and \
    "define" in kernels.relu.llvm_ir(x)  # IR on demand, also for a kernel loaded by key
print(json.dumps(out))
'''


def _run(code: str, *args: str, cache: Path) -> dict:
    env = dict(os.environ, PYASC_CACHE_DIR=str(cache))
    env.pop("PYASC_TARGET", None)
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kernels(tmp_path: Path) -> Path:
    folder = tmp_path / "mod"
    folder.mkdir()
    (folder / "kernels.py").write_text(textwrap.dedent(KERNELS))
    return folder


def test_import_pyasc_imports_no_compiler():
    code = f"import json, sys, pyasc\nHEAVY = {LIGHT_IMPORT!r}\n" \
           "print(json.dumps(sorted(m for m in sys.modules if m.startswith(HEAVY))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_a_fresh_process_hit_runs_no_frontend(tmp_path):
    folder = _kernels(tmp_path)
    code = f"HEAVY = {HEAVY!r}\n" + SCRIPT
    cold = _run(code, str(folder), cache=tmp_path / "cache")
    warm = _run(code, str(folder), cache=tmp_path / "cache")
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    for run in (cold, warm):
        assert run["relu"] == (np.maximum(x, 0) + 0.5).tolist()
        assert run["closures"] == [(x + 1).tolist(), (x + 2).tolist()]
        assert run["totals"] == [x.sum(0).tolist(), x.sum(1).tolist()]
        assert run["by_value"] == [["axis"]]
        assert run["inspect"]
    assert cold["built_ir"] == [1, 2] and "pyasc.frontend.compiler" in cold["modules"]
    assert warm["built_ir"] == [0, 0], "the hit built IR"
    assert warm["modules"] == [], f"the hit imported {warm['modules']}"
    assert warm["first"] < cold["first"]


def test_broken_call_data_is_rebuilt(tmp_path):
    folder = _kernels(tmp_path)
    code = f"HEAVY = {HEAVY!r}\n" + SCRIPT
    cache = tmp_path / "cache"
    _run(code, str(folder), cache=cache)
    for manifest in (cache / "cpu").rglob("*.json"):
        data = json.loads(manifest.read_text())
        data["call_data"] = {"template": {"shape": ["bogus"], "params": []}}
        manifest.write_text(json.dumps(data))
    again = _run(code, str(folder), cache=cache)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    assert again["relu"] == (np.maximum(x, 0) + 0.5).tolist()
    assert again["built_ir"] == [1, 2]  # compiled again ...
    healed = _run(code, str(folder), cache=cache)
    assert healed["built_ir"] == [0, 0]  # ... and stored good entries
