"""Compile time scales with program size (issue 15): generated straight-line programs of
thousands of statements compile, under the default recursion limit, and give the
interpreter's results.

No pass or frontend stage may recurse on program size (recursion on region nesting is
fine): ``test_no_stage_recurses_on_program_size`` compiles 400-statement programs of every
shape with only :data:`FRAME_BUDGET` Python frames above the test, far fewer than one per
statement.  The 10,000-statement programs are ``slow`` (``pytest -m slow``);
``benchmarks/compile_scale.py`` measures the growth curve.  The ``reduce``, ``loop`` and
``if`` shapes are not run to results at 2,000 statements: LLVM -O3 takes minutes on their
many loop nests in one function (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from compile_scale import SHAPES as STATEMENTS  # noqa: E402 - the benchmark's programs
from compile_scale import program_source  # noqa: E402

FRAME_BUDGET = 250
"""Frames the compiler may use above the caller (its own depth plus region nesting)."""


def load(directory: Path, shape: str, n: int) -> Callable:
    """The generated function, imported from a real file (pyasc reads it with inspect)."""
    path = directory / f"scale_{shape}_{n}.py"
    path.write_text(program_source(shape, n))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def inputs(shape: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(15)
    x = rng.standard_normal((3, 5) if shape == "rows" else 37).astype(np.float32)
    return x, (rng.standard_normal(x.shape) * 1e-3).astype(np.float32)


@contextlib.contextmanager
def frames_above_caller(budget: int) -> Iterator[None]:
    """The recursion limit set to the caller's depth plus ``budget`` frames."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + budget)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def check_against_interpreter(fn: Callable, shape: str) -> None:
    x, y = inputs(shape)
    expected = hybrid(fn, target="interpret")(x, y)
    got = hybrid(fn, target="cpu", cache=False)(x, y)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)


def test_2000_statement_chain_matches_the_interpreter(tmp_path: Path) -> None:
    check_against_interpreter(load(tmp_path, "chain", 2000), "chain")


def python_stages(fn: Callable, x: np.ndarray, y: np.ndarray) -> tuple[str, str]:
    """Every Python stage of both backends: the LLVM IR text (before LLVM itself, which
    does not recurse in Python) and the AscendC source."""
    from pyasc.backend.llvm.backend import lower_to_loops
    from pyasc.backend.llvm.generate import generate

    hf = hybrid(fn, cache=False)
    program = hf.specialize(x, y)
    text, _ = generate(lower_to_loops(program), program.entry, program.result_params)
    return text, hf.ascendc(x, y)


@pytest.mark.parametrize("shape", sorted(STATEMENTS))
def test_no_stage_recurses_on_program_size(tmp_path: Path, shape: str) -> None:
    fn = load(tmp_path, shape, 500)
    x, y = inputs(shape)
    with frames_above_caller(FRAME_BUDGET):
        llvm_ir, source = python_stages(fn, x, y)
    assert "define" in llvm_ir and "__global__" in source


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["chain", "fresh", "rows", "slices"])
def test_2000_statement_programs_match_the_interpreter(tmp_path: Path, shape: str) -> None:
    check_against_interpreter(load(tmp_path, shape, 2000), shape)


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["chain", "fresh"])
def test_10000_statement_programs_compile(tmp_path: Path, shape: str) -> None:
    fn = load(tmp_path, shape, 10_000)
    x, y = inputs(shape)
    hybrid(fn, target="cpu", cache=False).kernel(x, y)
    assert "__global__" in hybrid(fn, cache=False).ascendc(x, y)
