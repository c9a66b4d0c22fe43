"""What a user sees of an error: their own frames and call site, nothing of pyasc's.

Errors the user caused (coded errors, failed run-time checks) leave the public API with
pyasc's frames removed from the traceback (``PYASC_TRACEBACK=full`` keeps them) and no
internal exception chained to them; each names the user's call (``file:line``).  The
printed form is checked by running scripts in a subprocess: from a file, piped to
``python -``, and with ``python -c``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import pyasc
from pyasc import errors, hybrid

PACKAGE = str(Path(pyasc.__file__).resolve().parent)
SCRIPT = textwrap.dedent("""\
    import numpy as np
    from pyasc import hybrid

    @hybrid
    def f(x):
        return x & x

    f(np.ones(3, np.float32))
    """)


def run(args: list[str], stdin: str | None = None, **env: str) -> str:
    """stderr of ``python args`` (which must fail)."""
    proc = subprocess.run([sys.executable, *args], input=stdin, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def pyasc_lines(printed: str) -> list[str]:
    return [ln for ln in printed.splitlines() if ln.strip().startswith("File ")
            and PACKAGE in ln]


def test_a_script_sees_its_own_frames_and_one_line_of_pyasc(tmp_path):
    script = tmp_path / "op.py"
    script.write_text(SCRIPT)
    printed = run([str(script)])
    assert f'File "{script}", line 8, in <module>' in printed
    assert "f(np.ones(3, np.float32))" in printed
    assert len(pyasc_lines(printed)) == 1  # the public entry, the line saying how to see all
    assert "PYASC_TRACEBACK=full" in printed
    assert "E50001" in printed and f"--> {script}:6:12" in printed
    assert "direct cause" not in printed and "During handling" not in printed


def test_pyasc_traceback_full_shows_pyasc_frames(tmp_path):
    script = tmp_path / "op.py"
    script.write_text(SCRIPT)
    printed = run([str(script)], PYASC_TRACEBACK="full")
    assert len(pyasc_lines(printed)) > 5 and "E50001" in printed


@pytest.mark.parametrize("how", ["stdin", "-c"])
def test_a_function_without_source_says_where_it_must_be_defined(how):
    printed = run(["-"], stdin=SCRIPT) if how == "stdin" else run(["-c", SCRIPT])
    assert "OSError" not in printed and "direct cause" not in printed
    assert "E50010" in printed and "cannot read the source code of 'f'" in printed
    assert ("`python -`" if how == "stdin" else "`python -c`") in printed
    assert "file or a notebook cell" in printed
    assert len(pyasc_lines(printed)) == 1


def frames_inside_pyasc(exc: BaseException) -> list[str]:
    return [f"{fs.filename}:{fs.lineno}" for fs in traceback.extract_tb(exc.__traceback__)
            if fs.filename.startswith(PACKAGE)]


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.rstrip().endswith(marker))


def raised(exc_type: type[BaseException], call, marker: str) -> BaseException:
    """The error of ``call()``, checked to show one pyasc frame and no chain."""
    with pytest.raises(exc_type) as info:
        call()
    err = info.value
    assert len(frames_inside_pyasc(err)) == 1, frames_inside_pyasc(err)
    assert err.__cause__ is None and err.__suppress_context__
    if isinstance(err, errors.PyascError):
        assert (err.filename, err.lineno) == (__file__, line_of(marker)), str(err)
    return err


@hybrid
def outer(x):
    return np.outer(x, x)


@hybrid
def square_buffer(x, n):
    t = np.zeros((n, n))
    t[0, 0] = x[0]
    t[1, 1] = 5.0
    return t[0, 0] + t[1, 1]


def test_out_of_memory_names_the_call_site():
    call = lambda: outer(np.ones(1 << 24))  # noqa: E731  # OOM_RESULT
    err = raised(errors.OutOfMemoryError, call, "# OOM_RESULT")
    assert "result buffer" in err.message
    call = lambda: square_buffer(np.ones(3), 1 << 30)  # noqa: E731  # OOM_TEMP
    err = raised(errors.OutOfMemoryError, call, "# OOM_TEMP")
    assert "cannot allocate a buffer" in err.message


@hybrid
def plus_one(x):
    return x + 1


def test_a_bad_pyasc_target_names_the_call_site(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "gpu")
    call = lambda: plus_one(np.ones(3))  # noqa: E731  # BAD_TARGET
    err = raised(errors.InvalidOptionError, call, "# BAD_TARGET")
    assert "PYASC_TARGET='gpu'" in err.message


@hybrid(target="ascend")
def on_npu(x):
    return x + 1


def test_a_missing_toolchain_names_the_call_site(monkeypatch):
    for name in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(name, raising=False)
    call = lambda: on_npu(np.ones(3))  # noqa: E731  # NO_CANN
    raised(errors.ToolchainMissingError, call, "# NO_CANN")


def test_an_internal_error_names_the_call_site(monkeypatch):
    from pyasc.jit import decorator

    def broken(module, options, *dump):
        raise errors.InternalCompilerError("a pass failed")

    fn = hybrid(plus_one.__wrapped__)
    monkeypatch.setattr(decorator, "_optimize", broken)
    call = lambda: fn(np.ones(3))  # noqa: E731  # ICE_CALL
    err = raised(errors.InternalCompilerError, call, "# ICE_CALL")
    assert "PYASC_TRACEBACK=full" in err.hint
    call = lambda: fn.ir(np.ones(3))  # noqa: E731  # ICE_IR
    raised(errors.InternalCompilerError, call, "# ICE_IR")


@hybrid(target="ascend-sim", boundscheck=True)
def sim_index(x, i):
    return x[i] * 2  # SIM_INDEX


@hybrid(target="ascend-sim", boundscheck=True)
def sim_gather(x, idx):
    out = np.zeros(idx.shape[0], x.dtype)  # float32: no float64 on the AI Core
    for k in range(idx.shape[0]):
        out[k] = x[idx[k]] * 2  # SIM_GATHER
    return out


def test_ascend_sim_index_errors_name_the_source_line_and_show_the_call():
    # IndexOutOfBoundsError (E50004): located at the indexing expression
    err = raised(IndexError, lambda: sim_index(np.arange(5, dtype=np.float32), 7),
                 "# SIM_INDEX")
    assert f"{__file__}:{line_of('# SIM_INDEX')}:" in str(err)
    assert "return x[i] * 2" in str(err)
    assert "index 7 is out of bounds for axis 0 with size 5 (array 'x')" in str(err)
    err = raised(IndexError,
                 lambda: sim_gather(np.arange(5, dtype=np.float32), np.array([1, 9])),
                 "# SIM_GATHER")
    assert f"{__file__}:{line_of('# SIM_GATHER')}:" in str(err)
    assert "index 9 is out of bounds for axis 0 with size 5 (array 'x')" in str(err)
    assert sim_gather(np.arange(5, dtype=np.float32), np.array([1, 4])).tolist() == [2.0, 8.0]


@hybrid(target="cpu", boundscheck=True)
def cpu_index(x, i):
    return x[i] * 2  # CPU_INDEX


def test_cpu_index_errors_show_the_users_frames_only():
    err = raised(IndexError, lambda: cpu_index(np.arange(5.0), 7), "# CPU_INDEX")
    assert "index 7 is out of bounds for axis 0 with size 5 (array 'x')" in str(err)


def test_exceptions_of_the_users_own_code_are_left_alone():
    @hybrid(target="interpret")
    def failing(x):
        return x[7]

    with pytest.raises(IndexError) as info:
        failing(np.arange(3.0))
    assert traceback.extract_tb(info.value.__traceback__)[-1].name == "failing"


def test_keyboard_interrupt_is_neither_swallowed_nor_wrapped(monkeypatch):
    from pyasc.frontend import elementwise

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(elementwise, "_emit", interrupted)
    fn = hybrid(plus_one.__wrapped__)
    for call in (lambda: fn(np.ones(3)), lambda: fn.ir(np.ones(3))):
        with pytest.raises(KeyboardInterrupt) as info:
            call()
        assert type(info.value) is KeyboardInterrupt
        assert frames_inside_pyasc(info.value)  # untouched: its whole traceback


def test_decoration_errors_show_the_users_frames_only():
    raised(errors.InvalidOptionError, lambda: hybrid(trget="cpu"), "# BAD_OPTION")  # BAD_OPTION
    raised(errors.PyascError, lambda: hybrid()(len), "# NOT_DEF")  # NOT_DEF
