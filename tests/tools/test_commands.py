"""``pyasc opt`` and ``pyasc cache``: a round trip with no passes, passes change the IR,
the loop pipeline, every bad input as one line and exit status 2, and the cache report."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.cli import main
from pyasc.ir.parser import parse_module


def _scaled(x):
    return np.exp(x) * 2.0 + 0.0


@pytest.fixture
def ir_file(tmp_path):
    path = tmp_path / "f.ir"
    hybrid(_scaled, target="cpu").dump_ir(str(path), np.ones(8, np.float32))
    return path


def test_opt_without_passes_round_trips(ir_file, capsys):
    assert main(["opt", str(ir_file)]) == 0
    out = capsys.readouterr().out
    assert str(parse_module(out)) == str(parse_module(ir_file.read_text()))


def test_opt_runs_passes_and_pipelines(ir_file, tmp_path, capsys):
    out_path = tmp_path / "loops.ir"
    assert main(["opt", str(ir_file), "--pipeline", "loop", "-o", str(out_path)]) == 0
    text = out_path.read_text()
    assert "loop.for" in text and "tensor<" not in text.split("func.func", 1)[1]
    assert main(["opt", "--list", str(ir_file)]) == 0
    assert "lower-to-loops" in capsys.readouterr().out.split()


def test_opt_unknown_pass_is_one_line(ir_file, capsys):
    assert main(["opt", str(ir_file), "-p", "cse,nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown pass 'nope'" in err and len(err.strip().splitlines()) == 1


def test_opt_unknown_option_exits_2(ir_file):
    with pytest.raises(SystemExit) as info:  # argparse's usage message
        main(["opt", str(ir_file), "--missing"])
    assert info.value.code == 2


def test_opt_bad_files(tmp_path, capsys):
    assert main(["opt", str(tmp_path / "absent.ir")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.ir"
    bad.write_text("garbage\n")
    assert main(["opt", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("E50020") and f"{bad}:1:1" in err and "Traceback" not in err
    good = tmp_path / "good.ir"
    hybrid(_scaled, target="cpu").dump_ir(str(good), np.ones(4))
    assert main(["opt", str(good), "-o", str(tmp_path / "no" / "dir" / "x.ir")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_cache_info_list_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["cache", "info"]) == 0
    assert "empty" in capsys.readouterr().out
    hybrid(_scaled, target="cpu")(np.ones(8, np.float32))
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "cpu:" in out and "entries" in out
    assert main(["cache", "list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r[0] == "cpu" and int(r[2]) > 0 for r in rows)
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out and not (tmp_path / "cache").exists()
    assert main(["cache", "list"]) == 0


def test_help_lists_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in ("demo", "doctor", "opt", "cache"))



KERNELS = '''
import numpy as np
from pyasc import hybrid

@hybrid
def axpy(a, x, y):
    return a * x + y

def plain(x):
    return np.maximum(x, 0)
'''


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


@pytest.mark.parametrize("target,marker", [
    ("ir", '"func.func"'), ("llvm", "define "), ("asm", "ret"),
    ("ascendc", '#include "kernel_operator.h"')])
def test_compile_prints_each_kind_of_code(kernels, target, marker, capsys):
    argv = ["compile", f"{kernels}:axpy", "--target", target, "--arg", "2.0",
            "--arg", "float32[64,33]", "--arg", "float32[33]"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert marker in out
    if target == "ir":
        assert "memref<64x33xf32>" in out and "memref<33xf32>" in out


def test_compile_plain_function_for_another_soc(kernels, tmp_path, capsys):
    out = tmp_path / "plain.cpp"
    assert main(["compile", f"{kernels}:plain", "--target", "ascendc", "--soc",
                 "Ascend310P3", "--arg", "float16[1000]", "-o", str(out)]) == 0
    assert "Ascend310P3" in out.read_text()


@pytest.mark.parametrize("argv,message", [
    (["{k}:axpy", "--arg", "flot32[3]"], "not a dtype"),
    (["{k}:axpy", "--arg", "float32[3,x]"], "sizes must be integers"),
    (["{k}:nope", "--arg", "float32[3]"], "has no function 'nope'"),
    (["{k}:axpy", "--arg", "float32[3]"], "give one --arg per parameter"),
    (["{k}", "--arg", "float32[3]"], "expected FILE.py:NAME"),
    (["/absent/file.py:f"], "cannot read /absent/file.py"),
])
def test_compile_bad_input_is_one_line(kernels, argv, message, capsys):
    assert main(["compile", *(a.format(k=kernels) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
