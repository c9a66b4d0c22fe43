"""Bounds checks, on by default: every out-of-bounds shape raises ``IndexError`` on every
runner, naming the index, the axis size, the array and the line, after exactly the
writes Python makes before it raises; in-bounds programs (also the ones ``hoist-checks``
versions) give Python's results.

Runners: the IR interpreter on the tensor-level IR (``ir``, ``ir-opt``) and on the
loop-level IR the CPU backend compiles (``loops``: versioned loops included), the CPU
backend with its passes (``cpu``) and without any optional pass (``cpu-nopasses``, so
no ``hoist-checks``), and ``ascend-sim``.
"""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
from diff import _device_skip, assert_same, run

from pyasc import hybrid
from pyasc.errors import IndexOutOfBoundsError
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.passes import LOOP_PIPELINE, run_pipeline

pytestmark = pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.codegen.PyascPerformanceWarning")

COMPILED = ("cpu", "cpu-nopasses", "ascend-sim")
RUNNERS = ("ir", "ir-opt", "loops", *COMPILED)


def _loop_level(program):
    module = run_pipeline(program.module.clone(), LOOP_PIPELINE, program.options)
    return lambda flat: Interpreter(module).call(program.entry, *flat)


def call(fn, runner: str, args: list):
    """``fn(*args)`` through ``runner`` (``args`` are updated in place)."""
    if runner == "loops":
        return fn.run_with(_loop_level, *args)
    return run(fn, runner, tuple(args), {})


def check(fn, *args, runners: tuple[str, ...] = RUNNERS) -> None:
    """Every runner gives Python's result and leaves the arguments as Python does."""
    ref_args = copy.deepcopy(list(args))
    expected = fn.__wrapped__(*ref_args)
    for runner in runners:
        got_args = copy.deepcopy(list(args))
        try:
            got = call(fn, runner, got_args)
        except Exception as exc:
            _device_skip(runner, exc)
            continue
        if isinstance(expected, np.ndarray):
            assert_same(got, expected, f"{fn.__name__} [{runner}]")
        else:  # a sum over a loop that may not run: Python's 0.0 or numpy's float64
            assert float(got) == float(expected), f"{fn.__name__} [{runner}]: {got!r}"
        for k, (a, b) in enumerate(zip(got_args, ref_args, strict=True)):
            assert_same(a, b, f"{fn.__name__} [{runner}] argument {k} after the call")


def line_of(fn, tag: str) -> int:
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    return first + next(k for k, text in enumerate(lines) if f"# {tag}" in text)


def expect_index_error(fn, args: tuple, index: int, size: int, axis: int, array: str,
                       tag: str = "BAD", runners: tuple[str, ...] = RUNNERS) -> None:
    """Python and every runner raise ``IndexError`` for ``index`` on an axis of ``size``,
    having written the same into the arguments; compiled runners raise
    ``IndexOutOfBoundsError`` naming ``array`` and the tagged line."""
    numpy_text = f"index {index} is out of bounds for axis {axis} with size {size}"
    ref_args = copy.deepcopy(list(args))
    with pytest.raises(IndexError, match=numpy_text):
        fn.__wrapped__(*ref_args)
    for runner in runners:
        got_args = copy.deepcopy(list(args))
        try:
            call(fn, runner, got_args)
        except IndexError as exc:
            text = str(exc)
            assert numpy_text in text, f"[{runner}] {text}"
            if runner not in ("ir", "ir-opt"):  # tensor-level gathers: numpy's own text
                assert isinstance(exc, IndexOutOfBoundsError), f"[{runner}] {exc!r}"
                assert f"(array '{array}')" in text, f"[{runner}] {text}"
                assert f"{__file__}:{line_of(fn, tag)}:" in text, f"[{runner}] {text}"
        except Exception as exc:
            _device_skip(runner, exc)
            continue
        else:
            raise AssertionError(f"{fn.__name__} [{runner}] did not raise IndexError")
        for k, (got, ref) in enumerate(zip(got_args, ref_args, strict=True)):
            assert_same(got, ref, f"{fn.__name__} [{runner}] argument {k} after raising")


# ------------------------------------------------------------------ loops, affine indices

@hybrid
def shifted(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i + 1] - a[i]  # BAD
    return out


@pytest.mark.parametrize("dynamic", [False, True])
def test_shifted_read_in_a_loop_raises_after_the_same_writes(dynamic):
    fn = hybrid(dynamic_shape=True)(shifted.__wrapped__) if dynamic else shifted
    a = np.arange(10, dtype=np.float32) ** 2
    expect_index_error(fn, (a, np.zeros(10, np.float32)), 10, 10, 0, "a")
    check(fn, a, np.zeros(9, np.float32))  # in bounds: Python's result


@hybrid(dynamic_shape=True)
def offset_sum(a, k, n):
    s = 0.0
    for i in range(n):
        s += a[i + k]  # BAD
    return s


@pytest.mark.parametrize("k,n,bad", [(3, 8, 10), (-11, 2, -11), (-3, 2, None), (0, 0, None),
                                     (200, 0, None), (9, -4, None)])
def test_offset_reads_in_loops_incl_zero_trip_and_negative(k, n, bad):
    a = np.arange(10, dtype=np.float64)
    if bad is None:  # in bounds, negative indices wrapping, or a loop that never runs
        check(offset_sum, a, k, n)
    else:
        expect_index_error(offset_sum, (a, k, n), bad, 10, 0, "a")


@hybrid
def grid(a, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i, j + 1]  # BAD
    return out


def test_two_dimensional_nest_names_the_axis():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    expect_index_error(grid, (a, np.zeros((3, 4), np.float32)), 4, 4, 1, "a")
    check(grid, a, np.zeros((3, 3), np.float32))


@hybrid
def through_a_view(a, n):
    v = a[2:]
    s = 0.0
    for i in range(n):
        s += v[i]  # BAD
    return s


def test_views_are_checked_against_their_own_size():
    a = np.arange(10, dtype=np.float64)
    check(through_a_view, a, 8)
    expect_index_error(through_a_view, (a, 9), 8, 8, 0, "v")


@hybrid
def until(a, stop):
    s = 0.0
    for k in range(a.shape[0]):
        if k == stop:
            break
        s += a[k + 1]  # BAD
    return s


@pytest.mark.parametrize("stop,bad", [(3, None), (9, None), (10, 10), (-1, 10)])
def test_break_before_the_bad_iteration_does_not_raise(stop, bad):
    a = np.arange(10, dtype=np.float64)
    if bad is None:
        check(until, a, stop)
    else:
        expect_index_error(until, (a, stop), bad, 10, 0, "a")


@hybrid
def guarded(a, out):
    n = a.shape[0]
    for i in range(n):
        if i + 1 < n:
            out[i] = a[i + 1]  # BAD
        else:
            out[i] = a[i - n]
    return out


def test_guarded_access_that_never_goes_out_of_bounds():
    check(guarded, np.arange(6, dtype=np.float32), np.zeros(6, np.float32))


@hybrid
def walk(a, start):
    i = start
    s = 0.0
    while i < 12:
        s += a[i]  # BAD
        i += 3
    return s


@pytest.mark.parametrize("start,bad", [(1, None), (2, 11), (-11, None), (-13, -13)])
def test_while_loops(start, bad):
    a = np.arange(11, dtype=np.float64)
    if bad is None:
        check(walk, a, start)
    else:
        expect_index_error(walk, (a, start), bad, 11, 0, "a")


# ------------------------------------------------------------- data-dependent indices

@hybrid
def gather_loop(a, idx):
    s = 0.0
    for j in range(idx.shape[0]):
        s += a[idx[j]]  # BAD
    return s


@hybrid
def scatter_loop(a, idx):
    for j in range(idx.shape[0]):
        a[idx[j]] = 7.0  # BAD
    return a


@pytest.mark.parametrize("bad", [12, -13, 2**40])
def test_gather_and_scatter_in_loops(bad):
    a = np.arange(12, dtype=np.float32)
    idx = np.array([1, -2, bad, 3], np.int64)
    expect_index_error(gather_loop, (a, idx), bad, 12, 0, "a")
    # a view of a bigger array: the elements around it must stay untouched
    base = np.arange(20, dtype=np.float32)
    expect_index_error(scatter_loop, (base[4:16], idx), bad, 12, 0, "a")
    check(gather_loop, a, np.array([0, -12, 11], np.int32))


@hybrid
def fancy_read(a, idx):
    return a[idx]  # BAD


@hybrid
def fancy_write(a, idx, v):
    a[idx] = v  # BAD
    return a


@hybrid
def fancy_2d(a, rows, cols):
    return a[rows, cols]  # BAD


@hybrid
def take_columns(a, idx):
    return np.take(a, idx, axis=1)  # BAD


def test_index_arrays():
    a = np.arange(10, dtype=np.float32)
    expect_index_error(fancy_read, (a, np.array([[0, 1], [12, 3]])), 12, 10, 0, "a")
    expect_index_error(fancy_write, (a, np.array([0, -11, 2]), np.float32(5)), -11, 10, 0,
                       "a")
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    expect_index_error(fancy_2d, (b, np.array([0, 2]), np.array([1, 4])), 4, 4, 1, "a")
    expect_index_error(take_columns, (b, np.array([0, 5])), 5, 4, 1, "a")
    check(fancy_2d, b, np.array([0, -1]), np.array([3, -4]))


# ------------------------------------------------------------------- constant indices

@hybrid(dynamic_shape=True)
def huge(a):
    return a[2**40]  # BAD


def test_huge_constant_index_raises_instead_of_crashing():
    expect_index_error(huge, (np.arange(10.0),), 2**40, 10, 0, "a")


def test_constant_index_on_a_static_axis_is_a_compile_time_index_error():
    static = hybrid(huge.__wrapped__)
    with pytest.raises(IndexOutOfBoundsError) as info:
        static(np.arange(10.0))
    assert "index 1099511627776 is out of bounds for axis 0 with size 10 (array 'a')" in \
        str(info.value)
    assert info.value.lineno == line_of(static, "BAD") and info.value.code == "E50004"


# ------------------------------------------------------------------- versioned loops

@hybrid
def shift_k(a, k):
    out = np.empty(a.shape[0] - 2, a.dtype)
    for i in range(out.shape[0]):
        out[i] = a[i + k] * 2  # BAD
    return out


def test_versioned_loop_is_versioned_once_and_split_on_ascend():
    a = np.arange(10, dtype=np.float32)
    for k in (0, 2, -10):
        check(shift_k, a, k)
    expect_index_error(shift_k, (a, 3), 10, 10, 0, "a")
    # one versioned copy at the tensor level stays one after lowering (no copy of a copy)
    loop_ir = shift_k.kernel(a, 1, target="cpu").loop_ir
    unchecked = hybrid(boundscheck=False)(shift_k.__wrapped__).kernel(a, 1).loop_ir
    assert loop_ir.count("versioned = true") == 1 and loop_ir.count('"func.assert"') == 1
    assert loop_ir.count('"loop.for"') == unchecked.count('"loop.for"') + 1
    # ascend-sim: the fast copy is split across blocks, the unchanged one runs in block 0
    src = shift_k.ascendc(a, 1)
    assert "split across blocks" in src and "else if (GetBlockIdx() == 0)" in src


@hybrid
def along(a, idx):
    return np.take_along_axis(a, idx, axis=1)  # BAD


def test_take_along_axis():
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(along, b, np.array([[0], [3], [-4]]))
    expect_index_error(along, (b, np.array([[0], [4], [1]])), 4, 4, 1, "a")


# ------------------------------------------------------- affine kernels cost nothing

@hybrid
def copy_loop(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 2
    return out


def _example(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bounds_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", ["copy", "copy-dynamic", "grid", "bilateral",
                                  "bilateral-dynamic", "adaptive-pool"])
def test_affine_kernels_compile_to_the_same_machine_code_as_unchecked(case):
    a = np.arange(40, dtype=np.float32)
    img = np.random.default_rng(0).random((24, 20)).astype(np.float32)
    fn, args, options = {
        "copy": (copy_loop, (a,), {}),
        "copy-dynamic": (copy_loop, (a,), {"dynamic_shape": True}),
        "grid": (grid, (a.reshape(5, 8), np.zeros((5, 7), np.float32)), {}),
        "bilateral": (_example("bilateral_filter").bilateral_filter, (img,), {}),
        "bilateral-dynamic": (_example("bilateral_filter").bilateral_filter, (img,),
                              {"dynamic_shape": True}),
        "adaptive-pool": (_example("adaptive_pool").adaptive_pool,
                          (np.ones((2, 3, 14, 14), np.float32), (7, 7)),
                          {"dynamic_shape": True}),
    }[case]
    checked = hybrid(**options)(fn.__wrapped__)
    unchecked = hybrid(boundscheck=False, **options)(fn.__wrapped__)
    assert checked.llvm_ir(*args) == unchecked.llvm_ir(*args)
