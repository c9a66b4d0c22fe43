"""``pyasc doctor`` run as a command on this machine, which has no NPU, no driver and no
CANN toolkit: ``ascend`` cannot work (exit 1, with the fixes), ``cpu`` and
``ascend-sim`` can (exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyasc.tools.doctor import CHECKS

NOT_HERE = Path("/usr/local/Ascend")
pytestmark = pytest.mark.skipif(NOT_HERE.exists() or any(Path("/dev").glob("davinci[0-9]*")),
                                reason="this machine has an Ascend install")


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ASCEND_", "PYASC_COMPILER", "PYASC_LINKER", "PYASC_ACL"))}
    return subprocess.run([sys.executable, "-m", "pyasc.cli", "doctor", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_ascend_cannot_work_here_and_the_fixes_say_why():
    proc = _doctor("--target", "ascend")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    lines = out.splitlines()
    toolkit = next(i for i, ln in enumerate(lines) if ln.startswith("FAIL    cann-toolkit"))
    assert "no CANN toolkit" in lines[toolkit]
    assert "fix: install the CANN toolkit" in lines[toolkit + 1]
    assert "set_env.sh" in lines[toolkit + 1]
    assert any(ln.startswith("FAIL    bisheng") for ln in lines)
    assert any("PYASC_COMPILER=/path/to/bisheng" in ln for ln in lines)
    assert any(ln.startswith("FAIL    driver") for ln in lines)
    assert "target ascend      NOT ready (needs: cann-toolkit" in out
    assert "requested target ascend: cannot work on this machine" in out


@pytest.mark.parametrize("target", ["cpu", "ascend-sim", "auto"])
def test_cpu_and_ascend_sim_work_here(target):
    proc = _doctor("--target", target)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"requested target {target}: can work on this machine" in proc.stdout
    assert "target cpu         ready" in proc.stdout
    assert "target ascend-sim  ready" in proc.stdout
    for check in ("python", "numpy", "llvmlite", "host-cpu", "c++ compiler"):
        assert any(ln.startswith(f"ok      {check} ") for ln in proc.stdout.splitlines()), \
            check
    if target == "auto":
        assert "target auto        runs on cpu here" in proc.stdout


def test_json_report():
    proc = _doctor("--json", "--target", "ascend")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["requested"] == {"target": "ascend", "resolved": "ascend", "ready": False}
    assert data["targets"]["cpu"] == {"ready": True, "missing": []}
    assert data["targets"]["ascend-sim"]["ready"] is True
    assert "cann-toolkit" in data["targets"]["ascend"]["missing"]
    assert len(data["checks"]) == len(CHECKS)
    for check in data["checks"]:
        assert set(check) == {"name", "status", "found", "fix"}
        assert check["status"] != "fail" or check["fix"], check


def test_help_and_bad_target():
    proc = _doctor("--help")
    assert proc.returncode == 0 and "--target" in proc.stdout and "--json" in proc.stdout
    bad = _doctor("--target", "gpu")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
