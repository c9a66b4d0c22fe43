"""`pyasc demo` runs the examples, checks them and writes the generated code."""

from __future__ import annotations

from pyasc.cli import main


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
    assert "usage: pyasc demo" in capsys.readouterr().err
