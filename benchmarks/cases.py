"""The benchmark table as data: one ``Case`` per kernel, and its variants per column.

Columns, left to right: CPython (the kernel as written, run by the interpreter; only for the
loop-heavy kernels), numpy (the kernel as written for array-level kernels, plus the
vectorized formulations of ``numpy_impl``), Numba, C and pyasc.  A column's figure is its
fastest variant that gives the right result.  Kernels in ``FASTMATH`` get a second row in
which pyasc runs with ``fastmath=True``, C is built with ``-ffast-math`` and Numba runs with
``fastmath=True``; numpy and CPython have no such mode, so that row repeats their figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import c_impl
import kernels
import numba_impl
import numpy_impl
import pyasc_impl

COLUMNS = ("CPython", "numpy", "numba", "C", "pyasc")


@dataclass(frozen=True)
class Case:
    """One kernel: result tolerances (``np.allclose``) and how to read its timings.

    ``loop_heavy``: the kernel is Python loops over scalars, so running it as written is the
    CPython column.  ``memory_bound``: report its bandwidth (bytes of the arguments plus the
    result per call) against STREAM triad.  ``fastmath``: also run a fastmath row.
    """

    kernel: str
    rtol: float
    atol: float
    loop_heavy: bool = False
    memory_bound: bool = False
    fastmath: bool = False


CASES = (
    Case("relu", 0.0, 0.0, memory_bound=True),
    Case("gelu_tanh", 1e-5, 1e-6, memory_bound=True, fastmath=True),
    Case("softmax", 1e-5, 1e-8, memory_bound=True, fastmath=True),
    Case("layernorm", 1e-5, 1e-5, memory_bound=True, fastmath=True),
    Case("bilateral_filter", 1e-5, 1e-6, loop_heavy=True, fastmath=True),
    Case("adaptive_avg_pool", 1e-5, 1e-6, memory_bound=True),
    Case("sq_error_loss", 1e-5, 0.0, memory_bound=True, fastmath=True),
    Case("conv2d", 1e-5, 1e-5),
    Case("nms", 0.0, 0.0, loop_heavy=True),
    Case("embedding_matmul", 1e-5, 1e-5),
    # 1024-term float32 dot products of values ~30: rounding differs by summation order.
    Case("matmul", 1e-5, 1e-3),
)


@dataclass(frozen=True)
class Variant:
    """One implementation: ``make()`` returns the callable to time (and may raise).

    ``compiles``: its first call includes compiling, so it needs a warm-up call before its
    speed is known.
    """

    column: str
    label: str
    make: Callable[[], Callable]
    compiles: bool = False


@dataclass
class Tools:
    """What this process can run: the C libraries, Numba, pyasc (or why not)."""

    c_strict: c_impl.CLibrary | None
    c_fast: c_impl.CLibrary | None
    c_reason: str | None
    numba_reason: str | None
    pyasc: ModuleType | None
    pyasc_reason: str | None


def _const(fn: Callable) -> Callable[[], Callable]:
    return lambda: fn


class Unavailable(Exception):
    """An implementation that cannot run here; the message is already a table cell."""


def _fail(reason: str) -> Callable[[], Callable]:
    def make():
        raise Unavailable(reason)

    return make


def python_variants(case: Case) -> list[Variant]:
    """The CPython/numpy variants; the first is the kernel as written (the reference)."""
    fn = getattr(kernels, case.kernel)
    column = "CPython" if case.loop_heavy else "numpy"
    found = [Variant(column, f"{column} (kernel as written)", _const(fn))]
    for label, vec in numpy_impl.VARIANTS.get(case.kernel, {}).items():
        found.append(Variant("numpy", label, _const(vec)))
    return found


def compiled_variants(case: Case, fastmath: bool, tools: Tools) -> list[Variant]:
    """The Numba, C and pyasc variants of a row (Numba omitted when it does not import)."""
    found = []
    if tools.numba_reason is None:
        for label, make in numba_impl.variants(case.kernel, fastmath).items():
            found.append(Variant("numba", label + (" fastmath" if fastmath else ""), make, True))
    lib = tools.c_fast if fastmath else tools.c_strict
    c_label = "C gcc -O3 -march=native" + (" -ffast-math" if fastmath else "")
    if lib is None:
        found.append(Variant("C", c_label, _fail(tools.c_reason or "no C compiler")))
    else:
        found.append(Variant("C", c_label, _const(lib.kernel(case.kernel))))
        for label, symbol in c_impl.EXTRA.get(case.kernel, {}).items():
            found.append(Variant("C", f"{c_label} ({label})",
                                 _const(lib.kernel(case.kernel, symbol))))
    if tools.pyasc is None:
        found.append(Variant("pyasc", "pyasc hybrid", _fail(tools.pyasc_reason or "")))
    else:
        for label, make in pyasc_impl.variants(tools.pyasc, case.kernel, fastmath).items():
            found.append(Variant("pyasc", label, make, True))
    return found


def select(names: list[str] | None) -> tuple[Case, ...]:
    """The cases named in ``names`` (all when ``None``); unknown names raise ValueError."""
    if not names:
        return CASES
    known = {case.kernel: case for case in CASES}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown kernel(s) {unknown}; known: {sorted(known)}")
    return tuple(known[name] for name in names)
