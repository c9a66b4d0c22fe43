"""The differential helper itself (``tests/frontend/diff.py``): default runners, the
error-budget table, exact comparisons that catch one ULP, layouts that keep values."""

from __future__ import annotations

import os

import numpy as np
import pytest
from diff import (
    DEFAULT_RUNNERS,
    EXACT,
    LAYOUTS,
    MATH,
    ON_DEVICE,
    OPTIONAL_PASSES,
    SUM,
    ULPS,
    Tol,
    assert_same,
    check,
    default_runners,
    in_layout,
    on_device,
    rand,
)

from pyasc import hybrid
from pyasc.backend.llvm.backend import LLVMBackend


def test_every_differential_test_runs_on_the_cpu_by_default():
    both = ("ir", "ir-opt", "cpu", "cpu-nopasses")  # compiled with the passes on and off
    assert default_runners({}) == both
    assert default_runners({"PYASC_DIFF_RUNNERS": "ir, cpu"}) == ("ir", "cpu")
    import os

    if "PYASC_DIFF_RUNNERS" not in os.environ:
        assert DEFAULT_RUNNERS == both


def test_exact_comparisons_catch_one_ulp_and_nan_equals_nan():
    x = np.array([1.0, np.nan, -0.0], np.float32)
    assert_same(x.copy(), x, "same")
    with pytest.raises(AssertionError, match="exact"):
        assert_same(np.nextafter(x, np.float32(2)), x, "one ulp")
    with pytest.raises(AssertionError):
        assert_same(np.float64(1.0), 1.0, "numpy vs Python scalar")
    with pytest.raises(AssertionError):
        assert_same(np.int32(7), np.int64(7), "dtype")


def test_budgets_scale_with_math_calls_and_summed_terms():
    f32, f64 = np.dtype("float32"), np.dtype("float64")
    assert EXACT.rtol(f32) == 0.0 and MATH.rtol(np.dtype("int32")) == 0.0
    assert MATH.rtol(f32) == ULPS["math"]["float32"] * np.finfo(f32).eps
    assert SUM(100).rtol(f64) == 100 * ULPS["term"]["float64"] * np.finfo(f64).eps
    both = MATH + SUM(10, scale=5.0)
    assert (both.math, both.terms, both.scale) == (1, 10, 5.0)
    # work done in float32 and returned as float64 keeps the float32 budget
    assert Tol(math=1, dtype="float32").rtol(f64) == MATH.rtol(f32)
    x = np.array([1.0], np.float32)
    assert_same(x * (1 + 3e-7), x, "within the budget", MATH)
    with pytest.raises(AssertionError):
        assert_same(x * (1 + 1e-5), x, "beyond the budget", MATH)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (13, 7), (0, 5), (3, 1, 4)])
def test_layouts_keep_shape_dtype_and_values(layout, shape):
    a = rand(shape, "int16")
    b = in_layout(a, layout)
    assert b.shape == a.shape and b.dtype == a.dtype and np.array_equal(a, b)
    if layout != "C" and a.ndim >= 2 and min(a.shape) > 1:
        assert not b.flags.c_contiguous


@hybrid
def off_by_one(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = x[i - 1]
    return out


class ShiftedBackend:
    """A wrong backend: its kernels return the reference result shifted by one."""

    def compile(self, program):
        return lambda flat: [np.roll(off_by_one.__wrapped__(*flat), 1)]


def test_check_fails_when_a_runner_differs(monkeypatch):
    import diff

    monkeypatch.setitem(diff.BACKENDS, "shifted", ShiftedBackend)
    check(off_by_one, np.arange(4.0), runners=("ir", "ir-opt", "cpu"))
    with pytest.raises(AssertionError, match=r"off_by_one \[shifted\]"):
        check(off_by_one, np.arange(4.0), runners=("shifted",))


@hybrid
def _scaled_exp(x):
    return np.exp(x * 2.0) + 1.0


def test_nopasses_runner_compiles_the_unoptimized_ir_with_every_pass_off(monkeypatch):
    seen = []
    compile_ = LLVMBackend.compile

    def spy(self, program):
        seen.append((os.environ.get("PYASC_DISABLE_PASSES"), str(program.module)))
        return compile_(self, program)

    monkeypatch.setattr(LLVMBackend, "compile", spy)
    check(_scaled_exp, rand((7,)), runners=("cpu-nopasses",), rtol=MATH)
    [(disabled, module)] = seen
    assert disabled == ",".join(OPTIONAL_PASSES) and "fusion.group" not in module
    assert "PYASC_DISABLE_PASSES" not in os.environ or \
        os.environ["PYASC_DISABLE_PASSES"] != disabled  # restored after the compile


@hybrid
def _twice_plus_one(x):
    return x * 2 + 1


def test_a_check_parses_the_unoptimized_ir_once_for_its_readers(monkeypatch):
    # the interpreter and the math-budget check read one shared parse (parsing it again
    # for each was half the CPU time of differential tests); the pass-free compile gets
    # a clone of it, which its passes rewrite, leaving the shared parse as it was
    import diff

    texts = []
    parse = diff.parse_module
    monkeypatch.setattr(diff, "parse_module", lambda text, *a, **k: (
        texts.append(text), parse(text, *a, **k))[1])
    diff.parsed.cache_clear()
    check(_twice_plus_one, rand((7,)))
    assert len(texts) == 1
    assert texts[0] == _twice_plus_one.ir(rand((7,)), optimized=False)
    assert str(diff.parsed(texts[0])) == str(parse(texts[0]))


@hybrid
def _affine_sum(x):
    return np.sum(x * 2.0 + 1.0, axis=0)


def test_the_cpu_runner_loads_what_the_test_compiled(monkeypatch):
    # the runner shares the run's disk cache: the kernel of a call the test made itself
    # is loaded by key, not optimized by LLVM a second time
    from pyasc.backend.llvm import jit

    x = rand((6, 7))
    _affine_sum(x)
    compiled = []
    compile_ir = jit.compile_ir
    monkeypatch.setattr(jit, "compile_ir", lambda *a, **k: (
        compiled.append(a[1]), compile_ir(*a, **k))[1])
    check(_affine_sum, x, runners=("cpu",))
    assert not compiled


@hybrid
def _cube_and_square(x, y):
    return x ** 3 + y ** 2 + np.sqrt(np.abs(y))


def test_exact_comparison_of_host_math_is_refused():
    """numpy's exp/pow differ by host: an exact comparison would pass on one machine only."""
    with pytest.raises(AssertionError, match="calls math.exp on floats"):
        check(_scaled_exp, rand((7,)), runners=("ir",))
    with pytest.raises(AssertionError, match="calls math.pow on floats"):
        check(_cube_and_square, rand((3,)), rand((3,), seed=2), runners=("ir",))
    check(_cube_and_square, rand((3,)), rand((3,), seed=2), runners=("ir",), rtol=MATH)
    check(_cube_and_square, rand((3,), "int32"), rand((3,), "int32"), runners=("ir",))


def test_device_only_budgets_are_exact_on_the_cpu():
    budget = ON_DEVICE(SUM(4))
    assert budget.rtol(np.dtype("float32")) == 0.0
    # numpy's transcendentals differ by host: a math budget holds on every runner ...
    assert ON_DEVICE(MATH).rtol(np.dtype("float32")) == MATH.rtol(np.dtype("float32")) > 0
    # ... while device-only summed terms stay exact on the CPU when combined with it
    f32 = np.dtype("float32")
    assert (budget + MATH).rtol(f32) == (MATH + budget).rtol(f32) == MATH.rtol(f32)
    assert on_device(budget).rtol(np.dtype("float32")) > 0.0
    assert (SUM(4) + MATH).rtol(f32) > MATH.rtol(f32)  # a CPU sum budget stays one
