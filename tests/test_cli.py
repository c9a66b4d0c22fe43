"""`pyasc demo` runs the examples, checks them and writes the generated code."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pyasc.cli import COMMANDS, main


def test_demo_runs_checks_and_writes_code(tmp_path, capsys):
    status = main(["demo", "--size", "small", "--repeat", "2", "--only", "relu,softmax",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "relu" in out and "softmax" in out and "WRONG" not in out
    for name in ("relu", "softmax"):
        files = {p.name for p in (tmp_path / name).iterdir()}
        assert {"tensor.ir", "loop.ir", "kernel.ll"} <= files
        assert '"func.func"' in (tmp_path / name / "tensor.ir").read_text()


def test_demo_runs_the_seeds_loss_whose_parameter_is_named_target(tmp_path, capsys):
    # custom_loss(pred, target): the demo's inspection calls must not hand the
    # function's own `target` argument to the option of the same name
    names = "squared_error_loss,squared_error_grad"
    status = main(["demo", "--size", "small", "--repeat", "2", "--only", names,
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "FAILED" not in out and "WRONG" not in out
    assert (tmp_path / "squared_error_loss" / "kernel.ll").exists()


def test_demo_reports_a_failing_example(tmp_path, capsys):
    examples = tmp_path / "ex"
    examples.mkdir()
    (examples / "bad.py").write_text(
        "import numpy as np\nfrom pyasc import hybrid\n\n"
        "@hybrid\ndef bad(x):\n    return x.frobnicate()\n\n"
        "DEMO_CASES = [{'name': 'bad', 'fn': bad,\n"
        "               'inputs': lambda rng, size: (np.ones(4, np.float32),)}]\n")
    status = main(["demo", "--examples", str(examples), "--out", str(tmp_path / "o")])
    assert status == 1
    assert "FAILED" in capsys.readouterr().out


def test_unknown_command_prints_usage(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err and "usage: pyasc <command>" in err
    assert "  demo  " in err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_command(flag, capsys):
    assert main([flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pyasc <command>")
    width = max(map(len, COMMANDS))
    for name, (_, summary) in COMMANDS.items():
        assert f"  {name:<{width}}  {summary}" in out
    assert "doctor" in COMMANDS


def test_console_script_help_lists_the_commands():
    proc = subprocess.run([sys.executable, "-m", "pyasc.cli", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "commands:" in proc.stdout and "demo" in proc.stdout


def test_demo_only_with_an_unknown_operator_names_it_and_the_valid_ones(tmp_path, capsys):
    status = main(["demo", "--only", "relu,nosuch", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""  # no (empty) table
    assert "unknown operator 'nosuch' in --only" in captured.err
    assert "relu" in captured.err and "softmax" in captured.err
    assert not any(tmp_path.iterdir())


def test_demo_runs_from_an_installed_wheel(tmp_path):
    # `pip install .` (not -e): the examples ship inside the package as pyasc/examples
    # (setup.py); the demo must find them there, away from the source checkout
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path / "dist"), str(root)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    shipped = {p.name for p in (site / "pyasc" / "examples").glob("*.py")}
    assert shipped == {p.name for p in (root / "examples").glob("*.py")}
    assert (site / "pyasc" / "ir" / "grammar.lark").is_file()
    code = ("import sys, pyasc.cli as c; assert c.DEFAULT_EXAMPLES.parent.name == 'pyasc', "
            "c.DEFAULT_EXAMPLES; sys.exit(c.main(['demo', '--size', 'small', '--repeat', "
            "'1', '--only', 'relu', '--out', 'out']))")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "relu" in run.stdout and (tmp_path / "out" / "relu" / "kernel.ll").is_file()


def test_demo_runs_every_example_and_writes_their_ascendc(tmp_path, capsys):
    # the README's main command: every example, AscendC included; the float64 ones
    # (bilateral_filter computes in float64 by numpy's rules) get the demoted kernel
    status = main(["demo", "--size", "small", "--repeat", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "FAILED" not in out and "WRONG" not in out
    bilateral = (tmp_path / "bilateral_filter" / "kernel_ascendc.cpp").read_text()
    assert bilateral.startswith("// pyasc demo: this function computes in float64")
    assert "__global__ __aicore__" in bilateral
    assert "float64" not in (tmp_path / "relu" / "kernel_ascendc.cpp").read_text()


def test_demo_trains_the_mlp_beside_torch(tmp_path, capsys):
    pytest.importorskip("torch")
    status = main(["demo", "--size", "small", "--only", "train_mlp", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "pyasc loss" in out and "torch loss" in out
    assert "training: loss decreased as in torch" in out and "60 steps in" in out


def test_demo_says_it_skipped_the_training_without_torch(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    status = main(["demo", "--size", "small", "--only", "relu,train_mlp",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "relu" in out and "training: skipped (torch is not installed" in out
    assert "pyasc loss" not in out
