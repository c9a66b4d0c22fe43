"""Every example in ``examples/`` checks itself (its ``check()`` compares with numpy and
returns what it checked) on ``interpret``, ``cpu`` and ``ascend-sim``, and runs as a
script (``python examples/NAME.py``) printing what it checked."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
SMALL = {  # check() arguments that keep the interpreted and simulated runs short
    "nms": {"sizes": (1, 40, 120)},
    "custom_loss": {"n": 4},
    "embedding_matmul": {"size": "small", "repeat": 3},
    "contiguous": {"n": 40, "repeat": 3},
    "timing": {"n": 4096, "number": 5},
    "bilateral_filter": {"sizes": (12, 16)},
    "adaptive_pool": {"shapes": [(1, 2, 14, 14), (2, 1, 15, 9)]},
    "custom_conv": {"shapes": [((1, 3, 7, 6), (4, 3, 3, 2))]},
}
CHECKED = [name for name in EXAMPLES if name not in ("gelu", "softmax")]  # (demo only)
# examples computing float64 data (the seed's bilateral filter's float64 kernel, float64
# inputs or operator state): E50041 on the device (docs/ascendc-backend.md#float64), so
# on ascend-sim they run as if the SoC table allowed float64, as before the policy
# (tests/backend/ascendc/test_float64_policy.py checks the refusal and the demotion)
FLOAT64 = ("bilateral_filter", "contiguous", "custom_conv", "custom_loss")


def load(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"checked_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("target", ["interpret", "cpu", "ascend-sim"])
@pytest.mark.parametrize("name", CHECKED)
def test_example_checks_itself(name, target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    if target == "ascend-sim" and name in FLOAT64:
        import dataclasses

        from pyasc.backend.ascendc import soc
        monkeypatch.setitem(soc.SOCS, soc.DEFAULT_SOC,
                            dataclasses.replace(soc.SOCS[soc.DEFAULT_SOC], float64=True))
    lines = load(name).check(**SMALL.get(name, {}))
    assert lines and "equal" in lines[0], lines


@pytest.mark.parametrize("name", CHECKED)
def test_example_runs_as_a_script(name, tmp_path):
    env = dict(os.environ, PYASC_TARGET="cpu")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "equal" in proc.stdout, proc.stdout


def test_every_example_is_in_the_demo():
    from pyasc.cli import _load_cases

    files = {case["file"] for case in _load_cases(ROOT / "examples")}
    assert files == {f"{name}.py" for name in EXAMPLES}


def test_dynamic_examples_compile_once(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    adaptive, nms = load("adaptive_pool"), load("nms")
    assert adaptive.check()[-1] == f"adaptive_pool: 1 compilation(s) for " \
        f"{len(adaptive.SHAPES)} shapes"
    assert nms.check(sizes=(3, 30, 90), thresholds=(0.4,))[-1].startswith("nms: 1 kernel(s)")
