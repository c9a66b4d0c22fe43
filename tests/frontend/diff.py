"""Differential testing of ``@hybrid`` functions: compiled vs plain Python/numpy.

:func:`check` calls the original Python function (``fn.__wrapped__``, the reference)
and the same function through one or more *runners* on copies of the same arguments,
then compares the results (structure, Python vs numpy scalar types, dtypes, shapes and
values) and the arguments afterwards (in-place writes must match).  Runners:

* ``"ir"``: the unoptimized IR run by the IR interpreter;
* ``"ir-opt"``: the IR after the default pass pipeline, interpreted;
* any target name (``"cpu"``, ``"ascend-sim"``): the compiled kernel of that backend;
  device runners (:data:`DEVICE_RUNNERS`, ``"ascend-sim"``) skip documented
  limitations of the device (:func:`compare` returns the runners it skipped) and use
  the device's error budgets (:data:`DEVICE_ULPS`);
* ``"cpu-nopasses"``: the CPU backend on the unoptimized IR with every optional pass
  disabled (:data:`OPTIONAL_PASSES`: no folding, CSE, DCE, fusion, expand-math, layout,
  memory planning or check hoisting), so each test checks the passes on and off
  natively as well.

The default runners are ``ir``, ``ir-opt``, ``cpu`` and ``cpu-nopasses``.  The environment variable ``PYASC_DIFF_RUNNERS`` (comma separated)
overrides them, e.g. ``PYASC_DIFF_RUNNERS=ir pytest tests/frontend`` for a quick run.
The ``cpu`` runner compiles with the run's disk cache (``PYASC_CACHE_DIR``, which the
test suite makes private to each worker), else with one private to the process.

Comparisons are exact (NaN equal to NaN, ``-0.0`` not equal to ``0.0``) unless the test
states an error budget with
``rtol=``: a :class:`Tol` (transcendental calls and summed terms, converted to a
tolerance per result dtype with :data:`ULPS`) or a plain number (used as rtol and atol).
"""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pyasc.backend.base import Program, get_backend
from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.types import element_type


def default_runners(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """``ir``, ``ir-opt``, ``cpu`` and ``cpu-nopasses``, unless ``PYASC_DIFF_RUNNERS``
    lists others."""
    text = env.get("PYASC_DIFF_RUNNERS", "ir,ir-opt,cpu,cpu-nopasses")
    return tuple(r.strip() for r in text.split(",") if r.strip())


DEFAULT_RUNNERS = default_runners()

# ------------------------------------------------------------------------ tolerances

ULPS: dict[str, dict[str, float]] = {
    # per transcendental call on the path to a result (exp, log, tanh, sin, ..., and
    # powers numpy computes with pow()): the backends' routines and numpy's SIMD/libm
    # ones are each within ~1-3 ULP of the exact value (docs/math-accuracy.md)
    "math": {"float16": 2, "float32": 4, "float64": 4},
    # per summed term of a reduction (sum, mean, var, matmul/dot inner length): the
    # backends add in lanes and blocks, numpy pairwise (and float16 sums in float32); a
    # Python loop accumulating `acc = acc + x[i]` is summed the same way on the CPU
    # (sum-lanes, 16 or more float32/64 iterations), in order by interpret and devices
    "term": {"float16": 2, "float32": 2, "float64": 2},
}
"""Error budget in ULPs (units of the result dtype's ``eps``).  Everything else is
compared exactly: integers and bools, and float ``+ - * / // % ** 2``, ``min``,
``max``, ``abs``, ``sqrt``, ``where``, comparisons and casts (IEEE-exact operations
done in numpy's order and dtypes)."""


@dataclass(frozen=True)
class Tol:
    """An error budget: ``math`` transcendental calls and ``terms`` summed terms of
    magnitude ``scale`` (the magnitude sets the absolute error of cancelling sums)."""

    math: int = 0
    terms: int = 0
    scale: float = 1.0
    dtype: str | None = None  # the precision the work was done in, if below the results'
    device: bool = False  # budgets of a device runner (DEVICE_ULPS), not of the CPU's
    device_only: bool = False  # summed terms exact on the CPU runners (see ON_DEVICE)
    zero_signs: bool = True  # exact comparisons tell -0.0 from 0.0 (see UNORDERED_ZEROS)

    def __add__(self, other: Tol) -> Tol:
        low = [d for d in (self.dtype, other.dtype) if d is not None]
        return Tol(self.math + other.math, self.terms + other.terms,
                   max(self.scale, other.scale),
                   max(low, key=lambda d: np.finfo(d).eps) if low else None,
                   self.device or other.device,
                   all(t.device_only or not t.terms for t in (self, other)),
                   self.zero_signs and other.zero_signs)

    def rtol(self, dtype: np.dtype) -> float:
        """The relative tolerance for results of ``dtype`` (0 means exact)."""
        if dtype.kind not in "fc":
            return 0.0
        work = np.dtype(dtype)
        if self.dtype is not None and np.finfo(self.dtype).eps > np.finfo(work).eps:
            work = np.dtype(self.dtype)
        table = DEVICE_ULPS if self.device else ULPS
        terms = 0 if self.device_only and not self.device else self.terms
        ulps = self.math * table["math"][work.name] + terms * table["term"][work.name]
        return float(ulps * float(np.finfo(work).eps))  # float16 eps would overflow


EXACT = Tol()
MATH = Tol(math=1)
UNORDERED_ZEROS = Tol(zero_signs=False)
"""Exact, but ``-0.0`` and ``0.0`` are not told apart: for results whose order of equal
elements numpy leaves open (``np.sort``'s default kind is not stable; pyasc's is)."""


def ON_DEVICE(budget: Tol) -> Tol:  # noqa: N802
    """``budget``'s summed terms on device runners only (the device's ReduceSum adds in a
    tree; the CPU runners add in numpy's order and stay exact).  A ``math`` budget
    applies on every runner: numpy's own transcendentals differ by host (its AVX-512
    routines and glibc's are 1 ulp apart on some inputs; docs/math-accuracy.md), so no
    runner can match them bit for bit everywhere."""
    return replace(budget, device_only=True)


def SUM(n: int, scale: float = 1.0) -> Tol:  # noqa: N802 - reads like the constants
    """The budget of a sum (or dot product) of ``n`` terms of magnitude ``scale``."""
    return Tol(terms=n, scale=scale)


# --------------------------------------------------------------------------- runners

def _interpreter(module: Any) -> Callable[[Program], Callable[[Sequence[Any]], list]]:
    def compile_fn(program: Program) -> Callable[[Sequence[Any]], list]:
        target = module if module is not None else program.module
        return lambda flat: Interpreter(target).call(program.entry, *flat)
    return compile_fn


@cache
def _private_cache_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="pyasc-diff-cache-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def _cpu_backend() -> Any:
    """The CPU backend on the run's cache when the run set one (``PYASC_CACHE_DIR``: the
    test suite's per-worker cache, a campaign's folder), else on a private one, never the
    user's: a kernel the test itself compiled (``fn(x)``, ``fn.kernel``) is then loaded by
    key, not compiled again by LLVM."""
    from pyasc.backend.llvm.backend import LLVMBackend
    from pyasc.runtime.disk_cache import DiskCache

    shared = os.environ.get("PYASC_CACHE_DIR")
    return LLVMBackend(cache=DiskCache(Path(shared) if shared else _private_cache_root()))


BACKENDS: dict[str, Callable[[], Any]] = {"cpu": _cpu_backend}
"""Backends built by the differential runner itself (others: ``get_backend``)."""

OPTIONAL_PASSES = ("canonicalize", "cse", "dce", "fusion", "expand-math", "layout",
                   "memplan", "hoist-checks", "dead-fills", "reduce-to-memory",
                   "speculate-guards", "select-chains", "distribute-reductions",
                   "output-accumulators", "sum-lanes")
"""Every pass of the frontend's and the CPU backend's pipelines but ``lower-to-loops``."""


@contextmanager
def passes_disabled(names: Sequence[str]) -> Iterator[None]:
    """``PYASC_DISABLE_PASSES`` set to ``names`` inside the block."""
    before = os.environ.get("PYASC_DISABLE_PASSES")
    os.environ["PYASC_DISABLE_PASSES"] = ",".join(names)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYASC_DISABLE_PASSES"]
        else:
            os.environ["PYASC_DISABLE_PASSES"] = before


@lru_cache(maxsize=32)
def parsed(text: str) -> Any:
    """The module of IR text, parsed once per process and shared: only for readers (the
    interpreter, the math-budget check, conftest's round trip), never for a compile,
    whose passes rewrite it.
    Each check parsed the same unoptimized IR three times, half the CPU time of the
    differential tests (cProfile of tests/frontend/test_diff_statistics.py)."""
    return parse_module(text)


def _run_without_passes(fn: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    # a copy of the shared parse (the compile must not touch that one): cloning is ~10x
    # cheaper than parsing the text again
    module = parsed(fn.ir(*args, optimized=False, **kwargs)).clone()
    backend = _cpu_backend()

    def compile_fn(program: Program) -> Any:
        with passes_disabled(OPTIONAL_PASSES):
            return backend.compile(replace(program, module=module))
    return fn.run_with(compile_fn, *args, **kwargs)


def run(fn: Any, runner: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` through one runner."""
    if runner == "cpu-nopasses":
        return _run_without_passes(fn, args, kwargs)
    if runner == "ir":
        module = parsed(fn.ir(*args, optimized=False, **kwargs))
        return fn.run_with(_interpreter(module), *args, **kwargs)
    if runner == "ir-opt":
        return fn.run_with(_interpreter(None), *args, **kwargs)
    backend = BACKENDS.get(runner, lambda: get_backend(runner))()
    return fn.run_with(backend.compile, *args, **kwargs)


def check(fn: Any, *args: Any, runners: Sequence[str] = DEFAULT_RUNNERS,
          rtol: float | Tol | None = None, **kwargs: Any) -> Any:
    """Assert that every runner matches the Python reference; returns the reference
    (or the exception it raised, which every runner must raise too).  The test is
    skipped when every runner hit a documented device limitation."""
    expected, skipped = compare(fn, *args, runners=runners, rtol=rtol, **kwargs)
    _skip_if_none_ran(skipped, runners)
    return expected


def compare(fn: Any, *args: Any, runners: Sequence[str] = DEFAULT_RUNNERS,
            rtol: float | Tol | None = None, **kwargs: Any) -> tuple[Any, dict[str, str]]:
    """:func:`check` without the skip: the reference (or its exception) and
    ``{runner: reason}`` for the device runners skipped on a documented limitation
    (for callers that judge many examples in one test, such as hypothesis tests)."""
    ref_args = copy.deepcopy(args)
    try:
        expected = fn.__wrapped__(*ref_args, **copy.deepcopy(kwargs))
    except Exception as exc:  # the compiled code must fail the same way
        reasons = {r: _expect_raise(fn, r, args, kwargs, type(exc)) for r in runners}
        return exc, {r: why for r, why in reasons.items() if why}
    _require_math_budget(fn, args, kwargs, rtol)
    skipped: dict[str, str] = {}
    for runner in runners:
        got_args = copy.deepcopy(args)
        try:
            got = run(fn, runner, got_args, copy.deepcopy(kwargs))
        except Exception as exc:
            skipped[runner] = _device_skip(runner, exc)
            continue
        where = f"{fn.__name__} [{runner}]"
        tol = on_device(rtol) if runner in DEVICE_RUNNERS else rtol
        assert_same(got, expected, where, tol)
        for i, (a, b) in enumerate(zip(got_args, ref_args, strict=True)):
            assert_same(a, b, f"{where} argument {i} after the call", tol)
    return expected, skipped


HOST_MATH = frozenset(f"math.{f}" for f in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sin", "cos", "tan",
    "erf", "sigmoid", "pow", "atan"))
"""Ops whose numpy results depend on the host (its SIMD routines or libm)."""
EXACT_POWERS = (0.0, 1.0, 2.0, 0.5, -1.0)
"""Constant exponents numpy computes exactly (1, square, sqrt, reciprocal)."""


def _require_math_budget(fn: Any, args: tuple, kwargs: dict[str, Any],
                         rtol: float | Tol | None) -> None:
    """Fail a test that compares a float transcendental result exactly: numpy's own
    exp/log/pow/... differ by host (AVX-512 routines vs glibc, aarch64), so such a test
    would pass on one machine and fail on another; it must state ``rtol=MATH``."""
    if isinstance(rtol, float | int) or (rtol is not None and rtol.math):
        return
    module = parsed(fn.ir(*copy.deepcopy(args), optimized=False, **copy.deepcopy(kwargs)))
    calls = sorted({op.name for op in module.walk() if _host_math(op)})
    assert not calls, (f"{fn.__name__} calls {', '.join(calls)} on floats: numpy's result "
                       "differs by host, compare with rtol=MATH (docs/math-accuracy.md)")


def _host_math(op: Any) -> bool:
    if op.name not in HOST_MATH or not element_type(op.result.type).is_float:
        return False
    if op.name != "math.pow":
        return True
    exponent = op.operand_values[1].owner
    value = getattr(exponent, "attributes", {}).get("value")
    return not (getattr(exponent, "name", "") == "arith.constant"
                and isinstance(value, int | float) and float(value) in EXACT_POWERS)


def _expect_raise(fn: Any, runner: str, args: tuple, kwargs: dict[str, Any],
                  exc_type: type[BaseException]) -> str | None:
    """``None`` when ``runner`` raised ``exc_type``; a reason when it was skipped."""
    try:
        run(fn, runner, copy.deepcopy(args), copy.deepcopy(kwargs))
    except exc_type:
        return None
    except Exception as exc:
        return _device_skip(runner, exc)
    raise AssertionError(f"{fn.__name__} [{runner}] did not raise {exc_type.__name__}")


# -------------------------------------------------------------------- device runners

def _ascendc_unsupported() -> tuple[type[BaseException], ...]:
    from pyasc.backend.ascendc.fit import DeviceFloat64Error
    from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError

    # float64 data in device code: no AI Core has it (docs/ascendc-backend.md#float64)
    return (DeviceUnsupportedError, DeviceFloat64Error)


DEVICE_RUNNERS: dict[str, Callable[[], tuple[type[BaseException], ...]]] = {
    "ascend-sim": _ascendc_unsupported,
    "ascend": _ascendc_unsupported,  # the same kernels, through AscendCL (the stand-in)
}
"""Runners of device code: ``{runner: the errors of its documented limitations}``.  A
documented limitation ("... is not supported on ascend-sim/device", E50010, or float64
device data, E50041) skips that
runner only (the test is skipped when no runner ran); results are compared with the
device's budgets (:data:`DEVICE_ULPS`)."""

DEVICE_ULPS: dict[str, dict[str, float]] = {
    # the vector unit's Exp/Ln/Sqrt/Reciprocal (the sim: float libm), composed tanh
    # (1 - 2/(exp(2x)+1)), erf, log1p..., half composites done in float and rounded
    # once, the scalar kernels' plain-double exp/log/sin helpers (~1e-15 relative);
    # measured on the ascend-sim suite: <= 1.2 ULP per result in float32, 0 in float16
    "math": {"float16": 4, "float32": 8, "float64": 16},
    # sums by tile, by 256-byte repeat (ReduceSum's tree), by block and a final host
    # step: a different order again, so twice the CPU budget per term
    "term": {"float16": 4, "float32": 4, "float64": 4},
}
"""Device error budgets in ULPs, used for :class:`Tol` budgets on a device runner;
exact comparisons (:data:`EXACT`) stay exact."""


def on_device(rtol: float | Tol | None) -> float | Tol | None:
    """The budget ``rtol`` as judged for a device runner (see :data:`DEVICE_ULPS`)."""
    return replace(rtol, device=True) if isinstance(rtol, Tol) else rtol


def _device_skip(runner: str, exc: Exception) -> str:
    """The skip reason when ``exc`` is a documented limitation of ``runner``; else
    re-raises ``exc``."""
    if runner not in DEVICE_RUNNERS or not isinstance(exc, DEVICE_RUNNERS[runner]()):
        raise exc
    return f"{runner}: {str(exc).splitlines()[0]}"


def _skip_if_none_ran(skipped: dict[str, str], runners: Sequence[str]) -> None:
    if skipped and set(skipped) == set(runners):
        import pytest

        pytest.skip("; ".join(skipped.values()))


# ------------------------------------------------------------------------ comparison

def assert_same(got: Any, expected: Any, where: str, rtol: float | Tol | None = None) -> None:
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


def _close(got: np.ndarray, expected: np.ndarray, where: str,
           rtol: float | Tol | None) -> None:
    budget = rtol if isinstance(rtol, Tol) else EXACT
    if isinstance(rtol, float | int):
        rel = absolute = float(rtol)
    else:
        rel = budget.rtol(expected.dtype)
        absolute = rel * max(1.0, budget.scale)
    if rel == 0.0:
        assert np.array_equal(got, expected, equal_nan=expected.dtype.kind in "fc"), \
            f"{where}: values differ (exact comparison)\n got: {got!r}\n expected: {expected!r}"
        if expected.dtype.kind == "f" and budget.zero_signs:  # -0.0 == 0.0 is not enough
            zeros = expected == 0
            assert np.array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros])), \
                f"{where}: signs of zeros differ\n got: {got!r}\n expected: {expected!r}"
    else:
        np.testing.assert_allclose(got, expected, rtol=rel, atol=absolute, equal_nan=True,
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


def _strided(a: np.ndarray) -> np.ndarray:
    whole = (slice(None, None, 2),) * a.ndim
    buf = np.zeros(tuple(2 * d for d in a.shape), a.dtype)
    buf[whole] = a
    return buf[whole]


def _reversed(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    flip = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(a.ndim))
    return np.ascontiguousarray(a[flip])[flip]


LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "C": np.ascontiguousarray,
    "F": np.asfortranarray,
    "step2": _strided,                                        # x[::2] on every axis
    "reversed": lambda a: _reversed(a, (0,)),                 # x[::-1]
    "reversed-inner": lambda a: _reversed(a, (a.ndim - 1,)),  # x[:, ::-1]
    "transposed": lambda a: np.ascontiguousarray(a.T).T,      # x.T of a C array
}
"""Ways to lay out the same values in memory; each returns an array equal to its input
(same shape, dtype and values) whose strides follow the named pattern."""


def in_layout(a: np.ndarray, layout: str) -> np.ndarray:
    """``a``'s values in the memory ``layout`` (a key of :data:`LAYOUTS`)."""
    out = LAYOUTS[layout](a) if a.ndim else np.array(a)
    assert out.shape == a.shape and np.array_equal(out, a, equal_nan=True)
    return out
