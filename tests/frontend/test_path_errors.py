"""Static shape and index errors on paths a run-time condition may skip
(``frontend/deferred.py``): raised when the path runs, as numpy raises them, never when
it does not; a warning (W50002) when compiling.  Code that surely runs keeps the
compile-time error.  Each case on the IR interpreter, the CPU and the AscendC
simulator against the plain Python function."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, compare, run

from pyasc import hybrid
from pyasc.errors import IndexOutOfBoundsError, PathErrorWarning, ShapeInferenceError

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")
X4 = np.arange(4, dtype=np.float32)
Y3 = np.ones(3, np.float32)


def check(fn, *args, runners=RUNNERS):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PathErrorWarning)
        expected, skipped = compare(fn, *args, runners=runners)
    assert not skipped, skipped
    return expected


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    (line,) = [first + k for k, t in enumerate(lines) if text in t]
    return line


def raises_at(fn, args, cls, text: str) -> None:
    """Every runner raises ``cls`` (and numpy's class) located at the line of ``text``."""
    with pytest.raises(cls.__mro__[2]):  # numpy raises the ValueError/IndexError
        fn.__wrapped__(*args)
    for runner in RUNNERS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PathErrorWarning)
            with pytest.raises(cls) as info:
                run(fn, runner, args, {})
        assert info.value.lineno == line_of(fn, text), runner


@hybrid
def select_sides(x, y, flag):
    return x + y if flag else x * 2


@hybrid
def branch_assigns(x, y, flag):
    if flag:
        z = x + y
    else:
        z = x * 2
    return z * 3


@hybrid
def guarded_index(x, n):
    v = x[0]
    if n > 5:
        v = x[5] * 2  # out of bounds for 4 elements
    return v + 1


@hybrid
def loop_of_n(x, y, n):
    acc = x * 0
    for _ in range(n):
        acc = acc + (x + y)
    return acc


@hybrid
def half_built_loop(x, y, flag):
    if flag:
        acc = x * 0
        for _ in range(3):
            acc = acc + x
            acc = acc + y  # fails inside a loop that surely runs, under the if
        return acc
    return x - 1


@pytest.mark.parametrize("fn", [select_sides, branch_assigns, half_built_loop])
def test_a_shape_error_on_the_path_not_taken_is_not_raised(fn):
    check(fn, X4, Y3, False)


@pytest.mark.parametrize("fn, text", [(select_sides, "x + y"), (branch_assigns, "z = x + y"),
                                      (half_built_loop, "acc + y")])
def test_a_shape_error_on_the_path_taken_is_raised_at_its_line(fn, text):
    raises_at(fn, (X4, Y3, True), ShapeInferenceError, text)


def test_an_index_error_under_a_condition():
    check(guarded_index, X4, 3)
    raises_at(guarded_index, (X4, 9), IndexOutOfBoundsError, "x[5]")


def test_a_loop_that_may_run_zero_times():
    check(loop_of_n, X4, Y3, 0)
    raises_at(loop_of_n, (X4, Y3, 2), ShapeInferenceError, "x + y")


def test_the_warning_names_the_error_and_the_line():
    @hybrid(target="cpu")
    def fn(x, y, flag):
        return x + y if flag else x * 2

    with pytest.warns(PathErrorWarning, match="E50002") as record:
        fn(X4, Y3, False)
    assert record[0].lineno == line_of(fn, "x + y if flag")


def test_code_that_surely_runs_keeps_the_compile_time_error():
    @hybrid(target="cpu")
    def fn(x, y, flag):
        z = x + y
        return z if flag else x

    with pytest.raises(ShapeInferenceError, match="could not be broadcast"):
        fn.ir(X4, Y3, False)


def test_both_sides_failing_is_a_compile_time_error():
    @hybrid(target="cpu")
    def fn(x, y, flag):
        return x + y if flag else x - y

    with pytest.raises(ShapeInferenceError):
        fn.ir(X4, Y3, False)


@hybrid
def shape_tests(x, y, n):
    a = x + y if x.shape == y.shape else x * 2
    if n > 0 and x.shape[0] == y.shape[0]:
        return a + y
    if not (x.shape[0] != y.shape[0] or n < 0):
        return a - y
    return a


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_test_decided_by_shapes_compiles_one_branch_without_a_warning(dynamic):
    # with dynamic_shape=True the shape test runs at run time, and the array chosen by
    # it is a branch's result: a documented device limitation (E50010), so CPU only
    fn = hybrid(dynamic_shape=dynamic)(shape_tests.__wrapped__)
    runners = DEFAULT_RUNNERS if dynamic else RUNNERS
    with warnings.catch_warnings():
        warnings.simplefilter("error", PathErrorWarning)
        check(fn, X4, Y3, 1, runners=runners)
        check(fn, X4, X4 + 1, 1, runners=runners)


@hybrid(dynamic_shape=True)
def dynamic_select(x, y, flag):
    return x + y if flag else x - 1


@hybrid(dynamic_shape=True)
def dynamic_same_checks(x, y, flag):
    return x + y if flag else x * y - 1


def test_a_runtime_size_check_on_the_side_not_taken_does_not_fire():
    # the sizes of x + y are checked when it runs, not speculated into a select
    check(dynamic_select, X4, Y3, False, runners=DEFAULT_RUNNERS)
    check(dynamic_select, X4, X4, True, runners=DEFAULT_RUNNERS)
    with pytest.raises(ShapeInferenceError):
        run(dynamic_select, "cpu", (X4, Y3, True), {})
    assert "arith.select" not in str(dynamic_select.ir(X4, X4, True))


def test_a_size_check_both_sides_make_keeps_the_select():
    # x + y and x * y check the same sizes: whichever side runs fails alike, so the
    # expression stays one select (one fused kernel, on the device too)
    assert "arith.select" in str(dynamic_same_checks.ir(X4, X4, True))
    for flag in (True, False):
        check(dynamic_same_checks, X4, X4 + 1, flag)
        with pytest.raises(ShapeInferenceError):
            run(dynamic_same_checks, "cpu", (X4, Y3, flag), {})


@pytest.mark.parametrize("dtype", ["int32", "float16"])
def test_views_and_dtypes_on_the_path_not_taken(dtype):
    # strided views of odd sizes, integer and half data: the same paths as float32
    base = np.arange(18).astype(dtype)
    x, y = base[::2][:7], base[1::3][:5]  # 7 and 5 elements, strided
    check(select_sides, x, y, False)
    check(branch_assigns, x, y, False)
    check(guarded_index, base[::3], 2)  # 6 elements: x[5] in bounds, under the condition
    check(guarded_index, base[::4][:5], 2)  # 5 elements: x[5] would be out of bounds
    raises_at(select_sides, (x, y, True), ShapeInferenceError, "x + y")
