"""Differential testing of ``@hybrid`` functions: compiled vs plain Python/numpy.

:func:`check` calls the original Python function (``fn.__wrapped__``, the reference)
and the same function through one or more *runners* on copies of the same arguments,
then compares the results (structure, Python vs numpy scalar types, dtypes, shapes and
values) and the arguments afterwards (in-place writes must match).  Runners:

* ``"ir"``: the unoptimized IR run by the IR interpreter;
* ``"ir-opt"``: the IR after the default pass pipeline, interpreted;
* any target name (``"cpu"``, ``"ascend-sim"``): the compiled kernel of that backend.

The backends' tests reuse this module with ``runners=("cpu",)``; the environment
variable ``PYASC_DIFF_RUNNERS`` (comma separated) changes the default runners, e.g.
``PYASC_DIFF_RUNNERS=ir,cpu pytest tests/frontend`` runs every frontend differential
test against the CPU backend too.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyasc.backend.base import Program, get_backend
from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter

DEFAULT_RUNNERS = tuple(os.environ.get("PYASC_DIFF_RUNNERS", "ir,ir-opt").split(","))
TOLERANCE = {np.dtype("float16"): 2e-3, np.dtype("float32"): 2e-5,
             np.dtype("float64"): 1e-11}


def _interpreter(module: Any) -> Callable[[Program], Callable[[Sequence[Any]], list]]:
    def compile_fn(program: Program) -> Callable[[Sequence[Any]], list]:
        target = module if module is not None else program.module
        return lambda flat: Interpreter(target).call(program.entry, *flat)
    return compile_fn


def run(fn: Any, runner: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` through one runner."""
    if runner == "ir":
        module = parse_module(fn.ir(*args, optimized=False, **kwargs))
        return fn.run_with(_interpreter(module), *args, **kwargs)
    if runner == "ir-opt":
        return fn.run_with(_interpreter(None), *args, **kwargs)
    return fn.run_with(lambda p: get_backend(runner).compile(p), *args, **kwargs)


def check(fn: Any, *args: Any, runners: Sequence[str] = DEFAULT_RUNNERS,
          rtol: float | None = None, **kwargs: Any) -> Any:
    """Assert that every runner matches the Python reference; returns the reference."""
    ref_args = copy.deepcopy(args)
    try:
        expected = fn.__wrapped__(*ref_args, **copy.deepcopy(kwargs))
    except Exception as exc:  # the compiled code must fail the same way
        for runner in runners:
            _expect_raise(fn, runner, args, kwargs, type(exc))
        return exc
    for runner in runners:
        got_args = copy.deepcopy(args)
        got = run(fn, runner, got_args, copy.deepcopy(kwargs))
        where = f"{fn.__name__} [{runner}]"
        assert_same(got, expected, where, rtol)
        for i, (a, b) in enumerate(zip(got_args, ref_args, strict=True)):
            assert_same(a, b, f"{where} argument {i} after the call", rtol)
    return expected


def _expect_raise(fn: Any, runner: str, args: tuple, kwargs: dict[str, Any],
                  exc_type: type[BaseException]) -> None:
    try:
        run(fn, runner, copy.deepcopy(args), copy.deepcopy(kwargs))
    except exc_type:
        return
    raise AssertionError(f"{fn.__name__} [{runner}] did not raise {exc_type.__name__}")


def assert_same(got: Any, expected: Any, where: str, rtol: float | None = None) -> None:
    """Recursive comparison: types, dtypes, shapes, values (NaN equal to NaN)."""
    if isinstance(expected, tuple | list):
        assert type(got) is type(expected) and len(got) == len(expected), \
            f"{where}: got {got!r}, expected {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same(g, e, f"{where}[{i}]", rtol)
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: got {type(got).__name__}, expected array"
        assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
        _close(got, expected, where, rtol)
        return
    assert type(got) is type(expected), \
        f"{where}: got {type(got).__name__} {got!r}, expected {type(expected).__name__} " \
        f"{expected!r}"
    if isinstance(expected, np.generic | float | int):
        _close(np.asarray(got), np.asarray(expected), where, rtol)
    else:
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"


def _close(got: np.ndarray, expected: np.ndarray, where: str, rtol: float | None) -> None:
    tol = rtol if rtol is not None else TOLERANCE.get(expected.dtype)
    if tol is None:
        assert np.array_equal(got, expected), f"{where}: {got!r} != {expected!r}"
    else:
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=where)


# ---------------------------------------------------------------------------- inputs

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = ("bool", *INTS, *FLOATS)


def rand(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0,
         low: int = -20, high: int = 20) -> np.ndarray:
    """A random array; integers in ``[low, high)`` (clipped at 0 for unsigned)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    lo = max(low, 0) if dt.kind == "u" else low
    return rng.integers(lo, high, shape).astype(dt)


def views(a: np.ndarray) -> list[np.ndarray]:
    """Non-contiguous views of ``a`` (strided, reversed, transposed) when it has room."""
    out = []
    if a.ndim >= 1 and a.shape[0] > 1:
        out.append(a[::2])
        out.append(a[::-1])
    if a.ndim >= 2:
        out.append(a.T)
        out.append(a[:, ::2])
    return out
