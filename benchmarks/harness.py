"""Timing and checking: runs every variant of a case in this process and records the result.

A variant's first call is timed on its own (for pyasc and Numba it includes compiling), its
result is checked against the reference (the kernel as written, run by CPython + numpy),
and a warm-up call (the first call itself, for what does not compile) sets ``calls``, the
number of calls per repetition that lasts at least ``min_time``.  Then all variants of a
kernel are timed ``repeat`` times, round-robin.  Any exception, and any wrong result,
becomes the variant's error text instead of a crash.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

import c_impl
import kernels
import numba_impl
import pyasc_impl
from cases import COLUMNS, Case, Tools, Unavailable, Variant, compiled_variants, python_variants


@dataclass(frozen=True)
class Timing:
    """How to time: repetitions, and the minimum duration of one repetition in seconds."""

    repeat: int = 7
    min_time: float = 0.02


@dataclass
class Result:
    """The outcome of one variant: seconds per call (median and min over repetitions)."""

    label: str
    median: float | None = None
    best: float | None = None
    first: float | None = None
    calls: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.median is not None


@dataclass
class Row:
    """One line of the table: a kernel at a size, plain or fastmath."""

    case: Case
    size: str
    fastmath: bool
    columns: dict[str, list[Result]] = field(default_factory=dict)
    traffic: int | None = None

    @property
    def name(self) -> str:
        return self.case.kernel + (" +fastmath" if self.fastmath else "")

    def best(self, column: str) -> Result | None:
        """The fastest correct variant of ``column``, if any."""
        good = [r for r in self.columns.get(column, []) if r.ok]
        return min(good, key=lambda r: r.median) if good else None


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (just the message for Unavailable)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(exc, Unavailable) else f"{type(exc).__name__}: {first}"


def check(result, reference, rtol: float, atol: float) -> str | None:
    """``None`` if ``result`` matches ``reference`` (dtype and shape too, for arrays)."""
    if isinstance(reference, np.ndarray):
        if not isinstance(result, np.ndarray):
            return f"WRONG: returned {type(result).__name__}, expected ndarray"
        if result.dtype != reference.dtype or result.shape != reference.shape:
            return (f"WRONG: {result.dtype}{list(result.shape)}, expected "
                    f"{reference.dtype}{list(reference.shape)}")
    if np.allclose(result, reference, rtol=rtol, atol=atol, equal_nan=True):
        return None
    err = np.max(np.abs(np.asarray(result, np.float64) - np.asarray(reference, np.float64)))
    return f"WRONG: max abs err {err:.3g} (rtol={rtol:g}, atol={atol:g})"


def _time_calls(fn: Callable, args: tuple, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


class Bench:
    """The variants of one kernel at one size: shared inputs, reference, timing queue."""

    def __init__(self, case: Case, size: str, timing: Timing) -> None:
        self.case, self.timing = case, timing
        self.args = kernels.make_inputs(case.kernel, size)
        # Pristine copies: a variant that writes into its inputs must not corrupt the rest.
        self.pristine = [np.copy(a) if isinstance(a, np.ndarray) else a for a in self.args]
        self.reference = None
        self.ready: list[tuple[Result, Callable]] = []

    def add(self, row: Row, variant: Variant) -> Result:
        """Prepare ``variant`` (see ``prepare``) and record it in ``row``."""
        result = self.prepare(variant)
        row.columns.setdefault(variant.column, []).append(result)
        return result

    def prepare(self, variant: Variant) -> Result:
        """First call (timed), checks, warm-up call if it compiles, calibration; queue it.

        The first variant prepared is the reference: its output is what others must match.
        """
        result = Result(variant.label)
        try:
            fn = variant.make()
            start = time.perf_counter()
            output = fn(*self.args)
            result.first = time.perf_counter() - start
            result.error = self._intact() or (None if self.reference is None else check(
                output, self.reference, self.case.rtol, self.case.atol))
            if result.error:
                return result
            warm = _time_calls(fn, self.args, 1) if variant.compiles else result.first
        except Exception as exc:  # the harness must survive any broken implementation
            result.error = describe_error(exc)
            return result
        if self.reference is None:
            self.reference = output
        result.calls = max(1, math.ceil(self.timing.min_time / max(warm, 1e-9)))
        self.ready.append((result, fn))
        return result

    def _intact(self) -> str | None:
        for k, (arg, clean) in enumerate(zip(self.args, self.pristine, strict=True)):
            if isinstance(arg, np.ndarray) and not np.array_equal(arg, clean, equal_nan=True):
                np.copyto(arg, clean)
                return f"WRONG: modified its input argument {k}"
        return None

    def time_round_robin(self) -> None:
        """Time every queued variant ``timing.repeat`` times, interleaved.

        One repetition of every variant, then the next round: load from other processes
        then slows all of them alike instead of whichever ran while it lasted.
        """
        samples: dict[int, list[float]] = {id(res): [] for res, _ in self.ready}
        with _gc_paused():
            for _ in range(self.timing.repeat):
                for res, fn in self.ready:
                    if res.error:
                        continue
                    try:
                        samples[id(res)].append(_time_calls(fn, self.args, res.calls))
                    except Exception as exc:  # failed on a later call: report, keep going
                        res.error = describe_error(exc)
        for res, _ in self.ready:
            if not res.error:
                res.median, res.best = statistics.median(samples[id(res)]), min(samples[id(res)])

    def traffic(self) -> int:
        """Bytes of the array arguments plus the result: the compulsory memory traffic."""
        arrays = [a for a in (*self.args, self.reference) if isinstance(a, np.ndarray)]
        return sum(a.nbytes for a in arrays)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_case(case: Case, size: str, tools: Tools, timing: Timing, fastmath_rows: bool = True
             ) -> list[Row]:
    """Measure every variant of ``case``: its plain row and, if it has one, its fastmath row.

    The fastmath row shares the inputs, the reference and the CPython/numpy results.
    """
    bench = Bench(case, size, timing)
    plain = Row(case, kernels.describe_size(case.kernel, size), False)
    for variant in python_variants(case):
        result = bench.add(plain, variant)
        if bench.reference is None:  # the first variant, the kernel as written, failed
            raise RuntimeError(f"the reference run of {case.kernel} failed: {result.error}")
    if case.loop_heavy and "numpy" not in plain.columns:
        plain.columns["numpy"] = plain.columns["CPython"]  # the same code, the same figure
    plain.traffic = bench.traffic() if case.memory_bound else None
    rows = [plain]
    if case.fastmath and fastmath_rows:
        shared = {c: plain.columns[c] for c in ("CPython", "numpy") if c in plain.columns}
        rows.append(Row(case, plain.size, True, shared, plain.traffic))
    for row in rows:
        for variant in compiled_variants(case, row.fastmath, tools):
            bench.add(row, variant)
    bench.time_round_robin()
    return rows


@contextlib.contextmanager
def open_tools() -> Iterator[Tools]:
    """Build the C libraries, probe Numba and pyasc; clean the build directories after."""
    libs: list[c_impl.CLibrary] = []
    c_reason = None
    try:
        libs = [c_impl.CLibrary(fastmath=False), c_impl.CLibrary(fastmath=True)]
    except Exception as exc:  # no gcc: the C column shows why
        c_reason = describe_error(exc)
    pyasc, pyasc_reason = pyasc_impl.load()
    tools = Tools(libs[0] if libs else None, libs[1] if libs else None, c_reason,
                  numba_impl.available(), pyasc, pyasc_reason)
    try:
        yield tools
    finally:
        for lib in libs:
            lib.close()


def shown_columns(tools: Tools) -> tuple[str, ...]:
    """The table's columns: all but Numba when Numba is not importable."""
    return tuple(c for c in COLUMNS if c != "numba" or tools.numba_reason is None)
