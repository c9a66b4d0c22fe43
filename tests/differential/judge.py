"""Judging one generated program (``progen``) on several runners against numpy.

:func:`judge` calls the Python function (the reference), compiles the program once
through the frontend and the default passes, then compares every runner with
``diff.compare`` on its own, so that one runner's failure does not hide another's.
Each runner ends in one :class:`Outcome`:

* ``ok`` — same results (within the program's budget) or the same exception class;
* ``skip`` — the program uses something pyasc documents as unsupported: the frontend
  raised E50010/E50011 (every runner skips), or a device runner raised its documented
  limitation (``DeviceUnsupportedError``), showed a stated device difference
  (:func:`nan_dropped_by_device_max`: NaN or zero sign) or overflowed a scalar kernel's GM workspace with
  temporaries numpy needs too (:func:`workspace_exceeded_by_numpy`); on any runner,
  numpy's own dependence on the inputs' memory layout (:func:`numpy_differs_by_layout`);
* ``fail`` — a mismatch (values, dtypes, shapes, kinds, a missing exception), a crash
  (any other exception, e.g. E50050), or a timeout.

``kind`` names the skip or failure for counting: the error code and its message with
names and numbers blanked (``E50011: np.take() does not support _``).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import signal
import time
import traceback
import tracemalloc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from diff import DEVICE_RUNNERS, Tol, assert_same, compare, run
from progen import Program

from pyasc.backend.ascendc import soc as soc_table
from pyasc.errors import (
    OutOfMemoryError,
    PyascError,
    UnsupportedNumpyError,
    UnsupportedSyntaxError,
)

UNSUPPORTED = (UnsupportedSyntaxError, UnsupportedNumpyError)
"""Frontend errors that mean "not supported" (E50010, E50011): a skip, not a failure."""


@dataclass
class Outcome:
    """What one runner did with one program."""

    status: str  # "ok", "skip" or "fail"
    kind: str = ""
    detail: str = ""
    seconds: float = 0.0  # wall time
    cpu: float = 0.0  # CPU time of this process and its children (the C++ compiler)


@dataclass
class Verdict:
    """Outcomes of one program, by runner (``"frontend"`` when it did not compile)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)

    @property
    def failed(self) -> dict[str, Outcome]:
        return {r: o for r, o in self.outcomes.items() if o.status == "fail"}


def reference(program: Program) -> object:
    """The Python function's result on copies of the inputs, or the exception it raised."""
    with np.errstate(all="ignore"):
        try:
            return program.fn.__wrapped__(*[np.copy(a) if isinstance(a, np.ndarray) else a
                                            for a in program.args])
        except Exception as exc:  # the runners must raise it too (diff.compare)
            return exc


def _scale(result: object) -> float:
    """The largest finite magnitude among the float results (sets absolute errors)."""
    leaves = result if isinstance(result, tuple) else (result,)
    mags = [float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
            for v in map(np.asarray, leaves) if v.dtype.kind == "f"]
    return max(mags, default=1.0)


def budget(program: Program, expected: object) -> Tol | float:
    """The program's error budget, its absolute part scaled to the results' magnitude."""
    tol = program.tol
    if isinstance(tol, Tol) and (tol.math or tol.terms) and not isinstance(expected,
                                                                           Exception):
        return Tol(tol.math, tol.terms, max(1.0, _scale(expected)), tol.dtype)
    return tol


def kind_of(exc: BaseException) -> str:
    """A countable name for an exception: its code (or class) and its first line with
    variable names, numbers and quoted text blanked; a compiler error's first
    ``error:`` line; an internal ``assert``'s place in pyasc."""
    inside = _pyasc_frame(exc)
    if isinstance(exc, AssertionError) and inside:
        return f"crash: AssertionError at {inside}"
    if isinstance(exc, PyascError):
        errors = [line.split("error:", 1)[1] for line in exc.message.splitlines()
                  if "error:" in line]
        return f"{exc.code}: {exc.title}: {_blank(errors[0] if errors else exc.message)}"
    return f"{type(exc).__name__}: {_blank(str(exc))}"


def _pyasc_frame(exc: BaseException) -> str:
    """``pyasc/<module>:<line>`` of the innermost frame when it is pyasc's code."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename if tb is not None else ""
    marker = f"{os.sep}pyasc{os.sep}"
    if marker not in path:
        return ""
    return "pyasc/" + path.rsplit(marker, 1)[1].replace(os.sep, "/") + f":{tb.tb_lineno}"


def _blank(message: str) -> str:
    first = message.splitlines()[0] if message else ""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|<[^>]*>|\b[a-z]+\d+\b|-?\d+(\.\d+)?", "_", first)
    return text if len(text) <= 160 else text[:157] + "..."


def frontend_error(program: Program) -> BaseException | None:
    """Compile the program (frontend and default passes); the error it raised, if any."""
    try:
        with np.errstate(all="ignore"):
            program.fn.ir(*program.args)
    except Exception as exc:
        return exc
    return None


class _Timeout(Exception):
    """A runner ran past its time limit."""


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout()


WALL_FACTOR = 4
"""The wall-clock limit is this many times the CPU-time limit: on a loaded machine a
runner gets a fraction of a core, and a CPU-time limit does not count that as a hang;
the wall limit still catches a runner blocked in a child process (a compiler)."""


@contextmanager
def device_soc(runner: str) -> Iterator[None]:
    """Device runners compile for the default SoC as if its table allowed float64 (no
    real SoC does: float64 device code is E50041, docs/ascendc-backend.md#float64), as
    the AscendC unit tests do for float64 cases: otherwise every program touching
    float64 (most of them: numpy promotes to it) would skip the device's code paths."""
    if not is_device(runner):
        yield
        return
    key = soc_table.DEFAULT_SOC
    old = soc_table.SOCS[key]
    soc_table.SOCS[key] = dataclasses.replace(old, float64=True)
    try:
        yield
    finally:
        soc_table.SOCS[key] = old


def run_one(program: Program, runner: str, tol: Tol | float, limit: float) -> Outcome:
    """Compare ``runner`` with the reference; a failure keeps its message.  ``limit``
    is CPU seconds of this process (``WALL_FACTOR`` times that in wall time)."""
    start, cpu = time.perf_counter(), _cpu()
    old = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, limit)
    signal.setitimer(signal.ITIMER_REAL, limit * WALL_FACTOR)
    try:
        with np.errstate(all="ignore"), device_soc(runner):
            skipped = compare(program.fn, *program.args, runners=(runner,), rtol=tol)[1]
        outcome = Outcome("skip", kind_of_skip(skipped[runner])) if skipped else Outcome("ok")
    except _Timeout:
        outcome = Outcome("fail", "timeout", f"{runner} ran longer than {limit:.0f} CPU s "
                          f"(or {limit * WALL_FACTOR:.0f} s)")
    except AssertionError as exc:
        stated = DEVICE_MAX_NAN if is_device(runner) and nan_dropped_by_device_max(
            program, runner) else None
        if stated is None and numpy_differs_by_layout(program, runner, tol):
            stated = NUMPY_LAYOUT
        if stated is not None:
            outcome = Outcome("skip", stated)
            outcome.seconds, outcome.cpu = time.perf_counter() - start, _cpu() - cpu
            return outcome
        kind = kind_of(exc) if _pyasc_frame(exc) else _assertion_kind(exc)
        outcome = Outcome("fail", kind, f"{type(exc).__name__}: {str(exc)[:4000]}\n"
                          + "".join(traceback.format_tb(exc.__traceback__)[-6:]))
    except Exception as exc:
        outcome = Outcome("fail", kind_of(exc), f"{type(exc).__name__}: {str(exc)[:4000]}\n"
                          + "".join(traceback.format_tb(exc.__traceback__)[-6:]))
        if is_device(runner) and workspace_exceeded_by_numpy(program, exc):
            outcome = Outcome("skip", DEVICE_WORKSPACE)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, old[0])
        signal.signal(signal.SIGPROF, old[1])
    outcome.seconds, outcome.cpu = time.perf_counter() - start, _cpu() - cpu
    return outcome


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def kind_of_skip(reason: str) -> str:
    """The countable kind of a device runner's skip reason
    (``"<runner>: E50010: unsupported syntax: <message>"``)."""
    code, _, rest = reason.split(": ", 1)[-1].partition(": ")
    title, _, message = rest.partition(": ")
    return f"{code}: {title}: {_blank(message)}"


def _assertion_kind(exc: AssertionError) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if "did not raise" in text:
        return "mismatch: no exception"
    if "rtol=MATH" in text:
        return "harness: math budget missing"
    for what in ("dtype", "shape", "values differ", "Not equal to tolerance", "got"):
        if what in text:
            return f"mismatch: {what}"
    return "mismatch"


def judge(program: Program, runners: Sequence[str], limit: float = 300.0) -> Verdict:
    """Every runner's :class:`Outcome` for ``program`` (see the module docstring)."""
    verdict = Verdict()
    start, cpu = time.perf_counter(), _cpu()
    error = frontend_error(program)
    front = Outcome("ok") if error is None else Outcome(
        "skip" if isinstance(error, UNSUPPORTED) else "fail", kind_of(error),
        f"{type(error).__name__}: {str(error)[:4000]}")
    front.seconds, front.cpu = time.perf_counter() - start, _cpu() - cpu
    verdict.outcomes["frontend"] = front
    if error is not None:
        return verdict
    tol = budget(program, reference(program))
    for runner in runners:
        verdict.outcomes[runner] = run_one(program, runner, tol, limit)
    return verdict


def is_device(runner: str) -> bool:
    """Whether ``runner`` runs device code (its limitations are skips)."""
    return runner in DEVICE_RUNNERS


DEVICE_MAX_NAN = ("documented device difference: ReduceMax/Min do not propagate NaN, "
                  "Max/Min order -0.0 and 0.0 as the hardware does (docs/ascendc-backend.md)")
_MAX_MIN = re.compile(r"\b(max|min|amax|amin)\(")


def nan_dropped_by_device_max(program: Program, runner: str) -> bool:
    """The stated device differences of max/min: the vector unit's ``ReduceMax``/
    ``ReduceMin`` skip a NaN that numpy's max/min propagate, and ``Max``/``Min`` pick
    between -0.0 and 0.0 by operand order where numpy picks by dtype.  True when the
    program uses max/min and every value the device got wrong is a NaN of numpy's
    replaced by a number, or numpy's value with its sign flipped (a zero of the other
    sign, or what it became downstream: ``x // -0.0`` is -inf where ``x // 0.0`` is
    inf).  A flipped sign elsewhere in such a program is not told apart: the price of
    the exemption, kept small by requiring max/min in the source."""
    if not _MAX_MIN.search(program.source):
        return False
    expected = reference(program)
    try:  # compiled as the comparison was: for the float64 SoC
        with np.errstate(all="ignore"), device_soc(runner):
            got = run(program.fn, runner, copy.deepcopy(program.args), {})
    except Exception:  # noqa: BLE001 - not this difference
        return False
    pairs = list(zip(_leaves(got), _leaves(expected), strict=False))
    if not pairs or len(_leaves(got)) != len(_leaves(expected)):
        return False
    wrong = False
    for g, e in pairs:
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape or g.dtype != e.dtype:
            return False
        if e.dtype.kind != "f":
            if not np.array_equal(g, e):
                return False
            continue
        bad = ~(((g == e) & (np.signbit(g) == np.signbit(e))) | (np.isnan(g) & np.isnan(e)))
        nan_dropped = np.isnan(e[bad]) & ~np.isnan(g[bad])
        sign_flipped = (g[bad] == -e[bad]) & (np.signbit(g[bad]) != np.signbit(e[bad]))
        if not (nan_dropped | sign_flipped).all():
            return False
        wrong |= bool(bad.any())
    return wrong


NUMPY_LAYOUT = ("numpy's own result depends on the inputs' memory layout (its float16 "
                "reduction loops round per step or once by the reduced axis' stride): the "
                "runner gives numpy's result for C-order copies of the inputs")


def numpy_differs_by_layout(program: Program, runner: str, tol: Tol | float) -> bool:
    """numpy computes some results differently by memory layout: a float16 product
    or sum along an axis that is contiguous in memory accumulates in float32 and
    rounds once, along another axis it rounds every step (overflowing to inf where
    the other way gives a number, fuzz seed 62 program 188).  pyasc computes by the
    logical order, whatever the layout.  True when an input is not C-ordered, numpy's
    results differ between the inputs and their C-order copies, and ``runner``'s
    result (on the original inputs) matches the C-order one within ``tol``."""
    if all(a.flags.c_contiguous for a in program.args if isinstance(a, np.ndarray)):
        return False
    c_order = [np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a
               for a in program.args]
    with np.errstate(all="ignore"):
        try:
            expected = program.fn.__wrapped__(*c_order)
        except Exception:  # noqa: BLE001 - not this difference
            return False
    try:
        assert_same(reference(program), expected, "layout", tol)
        return False  # numpy agrees with itself: the runner is wrong
    except AssertionError:
        pass
    try:
        with np.errstate(all="ignore"), device_soc(runner):
            got = run(program.fn, runner, copy.deepcopy(program.args), {})
        assert_same(got, expected, runner, tol)
    except Exception:  # noqa: BLE001 - the runner differs from both: a failure
        return False
    return True


DEVICE_WORKSPACE = ("documented device limit: the program's temporaries exceed a scalar "
                    "kernel's GM workspace (docs/ascendc-backend.md)")


def workspace_exceeded_by_numpy(program: Program, exc: BaseException) -> bool:
    """The documented limit: temporaries of run-time size in a scalar kernel's loops share
    a per-block GM workspace of ``ARENA_BYTES`` (E50003 beyond it).  True when ``exc`` is
    that overflow and numpy, running the program, holds more than the workspace in
    arrays at once besides its results: the program's own size, not memory a compiler
    wasted (fuzz case 8075, a 2x2 product taking 1 MiB, stays a failure)."""
    from pyasc.backend.ascendc.scalar_plan import ARENA_BYTES

    if not (isinstance(exc, OutOfMemoryError) and "GM workspace" in str(exc)):
        return False
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in program.args]
    tracemalloc.start()  # numpy reports its data buffers to tracemalloc
    try:
        with np.errstate(all="ignore"):
            result = program.fn.__wrapped__(*args)
        peak = tracemalloc.get_traced_memory()[1]
    except Exception:  # noqa: BLE001 - the reference raised: not this limit
        return False
    finally:
        tracemalloc.stop()
    kept = sum(np.asarray(x).nbytes for x in _leaves(result))
    return peak - kept > ARENA_BYTES


def _leaves(value: object) -> list:
    return [x for v in value for x in _leaves(v)] if isinstance(value, tuple | list) \
        else [value]
