"""The CPU backend runs ``LOOP_PIPELINE`` before code generation, minus the passes named
in ``PYASC_DISABLE_PASSES`` (but never without ``lower-to-loops``)."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm.backend import LLVMBackend, lower_to_loops
from pyasc.errors import InvalidEnvironmentWarning
from pyasc.ir.passes import LOOP_PIPELINE, REQUIRED_PASSES, disabled_passes


@hybrid(cache=False)
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def _loop_ir(monkeypatch, disabled: str) -> str:
    monkeypatch.setenv("PYASC_DISABLE_PASSES", disabled)
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    return str(lower_to_loops(gelu_tanh.specialize(x)))


def test_pipeline_order():
    assert LOOP_PIPELINE[:2] == ["dead-fills", "lower-to-loops"]
    assert REQUIRED_PASSES == {"lower-to-loops"}
    assert {"expand-math", "layout", "memplan"} <= set(LOOP_PIPELINE)


def test_expand_math_runs_unless_disabled(monkeypatch):
    assert '"math.tanh"' not in _loop_ir(monkeypatch, "")
    assert '"math.tanh"' in _loop_ir(monkeypatch, "expand-math")


def test_lower_to_loops_cannot_be_disabled(monkeypatch):
    with pytest.warns(InvalidEnvironmentWarning, match="'lower-to-loops' cannot be disabled"):
        text = _loop_ir(monkeypatch, "lower-to-loops, memplan")
    assert "loop.for" in text and "tensor<" not in text
    assert disabled_passes() == {"memplan"}


def test_results_equal_with_and_without_the_loop_passes(monkeypatch):
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    program = gelu_tanh.specialize(x)  # cache=False: each compile builds
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "expand-math,layout,memplan")
    plain = LLVMBackend().compile(program)([x])[0]
    monkeypatch.delenv("PYASC_DISABLE_PASSES")
    optimized = LLVMBackend().compile(program)([x])[0]
    np.testing.assert_allclose(optimized, plain, rtol=4e-7 * 4, atol=1e-7)
