"""A failure inside pyasc reaches the user as E50050 with the IR saved, never bare.

Failures are injected (monkeypatch) into a pass, an LLVM emitter and the AscendC
lowering; every entry point (``fn.ir``, a call on ``cpu`` and ``ascend-sim``,
``fn.kernel``, ``fn.ascendc``, ``run_with``) must raise :class:`InternalCompilerError`
located at the caller's line, naming a file that exists afterwards and holds the IR of
the specialization being compiled.  Coded user errors pass through unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import InternalCompilerError, ShapeInferenceError
from pyasc.ir.ops import arith
from pyasc.ir.passes import PASS_REGISTRY

X = np.arange(6, dtype=np.float32)


def _make(target: str):
    @hybrid(target=target, cache=False)  # a fresh function: nothing compiled or cached
    def faulty_op(x):
        return x + 1
    return faulty_op


def _boom(*args, **kwargs):
    raise AssertionError("injected")


def _saved(err: InternalCompilerError) -> str:
    """The saved file's text; checks the message names it and it exists."""
    assert err.code == "E50050" and err.ir_path is not None
    assert f"saved to {err.ir_path}" in str(err)
    path = Path(err.ir_path)
    assert path.is_file(), str(err)
    return path.read_text()


def _at_this_file(err: InternalCompilerError) -> None:
    assert err.filename == __file__ and err.lineno is not None, str(err)


def test_a_failing_pass_is_an_internal_error_with_the_input_ir(monkeypatch):
    fn = _make("cpu")
    monkeypatch.setattr(PASS_REGISTRY["cse"], "run", _boom)
    with pytest.raises(InternalCompilerError) as e:
        fn.ir(X)
    err = e.value
    assert not isinstance(err, AssertionError) and type(err) is InternalCompilerError
    assert re.search(r"optimizing 'faulty_op': unexpected AssertionError: injected "
                     r"\(raised at pyasc/\S+\.py:\d+ in \w+\)", str(err)), str(err)
    text = _saved(err)
    assert 'sym_name = "faulty_op"' in text and '"arith.add"' in text  # the pipeline's input
    _at_this_file(err)


@pytest.mark.parametrize("entry", ["call", "kernel", "llvm_ir", "run_with"])
def test_a_failing_llvm_emitter_is_an_internal_error(monkeypatch, entry):
    from pyasc.backend.llvm import generate
    from pyasc.backend.llvm.backend import LLVMBackend

    fn = _make("cpu")
    program_text = fn.ir(X)
    monkeypatch.setitem(generate.EMITTERS, arith.AddOp, _boom)
    calls = {"call": lambda: fn(X), "kernel": lambda: fn.kernel(X),
             "llvm_ir": lambda: fn.llvm_ir(X),
             "run_with": lambda: fn.run_with(LLVMBackend(cache=None).compile, X)}
    with pytest.raises(InternalCompilerError) as e:
        calls[entry]()
    assert "unexpected AssertionError: injected" in str(e.value)
    assert _saved(e.value) == program_text  # the optimized IR handed to the backend
    _at_this_file(e.value)


@pytest.mark.parametrize("entry", ["call", "ascendc"])
def test_a_failing_ascendc_lowering_is_an_internal_error(monkeypatch, entry):
    from pyasc.backend.ascendc import group_items

    fn = _make("ascend-sim")
    program_text = fn.ir(X)
    monkeypatch.setattr(group_items, "launch_vector", _boom)
    with pytest.raises(InternalCompilerError) as e:
        fn(X) if entry == "call" else fn.ascendc(X)
    assert "unexpected AssertionError: injected" in str(e.value)
    assert _saved(e.value) == program_text
    _at_this_file(e.value)


def test_an_internal_error_raised_without_a_file_gets_one(monkeypatch):
    def unlowerable(*args, **kwargs):
        raise KeyError("no rule")  # the LLVM codegen reports this as E50050, file-less

    from pyasc.backend.llvm import generate

    fn = _make("cpu")
    monkeypatch.setitem(generate.EMITTERS, arith.AddOp, unlowerable)
    with pytest.raises(InternalCompilerError) as e:
        fn(X)
    assert "lowering 'arith.add'" in str(e.value)
    assert '"func.func"' in _saved(e.value)


def test_coded_user_errors_pass_through_unchanged(monkeypatch):
    raised = ShapeInferenceError("injected user error")

    def user_error(*args, **kwargs):
        raise raised

    fn = _make("cpu")
    monkeypatch.setattr(PASS_REGISTRY["cse"], "run", user_error)
    with pytest.raises(ShapeInferenceError) as e:
        fn.ir(X)
    assert e.value is raised and "saved to" not in str(e.value)


def test_the_frontend_stage_saves_the_source(monkeypatch):
    from pyasc.frontend import compiler

    fn = _make("cpu")
    monkeypatch.setattr(compiler, "_verify", _boom)
    with pytest.raises(InternalCompilerError) as e:
        fn.ir(X)
    text = _saved(e.value)
    assert "building the IR of 'faulty_op'" in str(e.value)
    assert "return x + 1" in text and "float32" in text  # the source and the signature
