"""Shared machinery of the AscendC backend tests.

Programs are lowered in the test process and their C++ builds run two at a time in a
thread pool, into a disk cache private to the test session; each library is built once
and shared by every test that runs the program.  :func:`check` runs a ``@hybrid``
function on ascend-sim and compares it with the function run as plain numpy (the
``interpret`` target).
"""

from __future__ import annotations

import copy
import dataclasses
import tempfile
import warnings
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pyasc.backend.ascendc import PyascPerformanceWarning, SimKernel, lower_program
from pyasc.backend.ascendc import soc as soc_table
from pyasc.backend.ascendc.sim_backend import build_library
from pyasc.runtime.disk_cache import DiskCache

OPT = "-O0"  # the library default is -O2; -O0 builds fastest and runs the same code


@dataclass
class Build:
    program: Any
    ascend: Any
    library: Future


class KernelStore:
    """Compiled SimKernels by (function, specialization)."""

    def __init__(self) -> None:
        self.cache = DiskCache(Path(tempfile.mkdtemp(prefix="pyasc-ascendc-tests-")),
                               backend="ascend-sim")
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.builds: dict[tuple[Any, str], Build] = {}

    def submit(self, fn: Any, *args: Any) -> Build:
        """Lower ``fn`` for ``args`` now; its C++ build runs in the pool."""
        program = fn.specialize(*args)
        key = (fn, program.cache_key)
        if key not in self.builds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PyascPerformanceWarning)
                ascend = lower_program(program)
            lib = self.pool.submit(build_library, ascend, True, self.cache, OPT)
            self.builds[key] = Build(program, ascend, lib)
        return self.builds[key]

    def get(self, fn: Any, *args: Any) -> SimKernel:
        b = self.submit(fn, *args)
        return SimKernel(b.program, b.ascend, b.library.result())


STORE = KernelStore()


@contextmanager
def float64_device() -> Iterator[None]:
    """The default SoC as if its table allowed float64 (``SoC.float64``; no real one
    does): keeps the ``double`` code paths tested (scalar_math's double helpers)."""
    key = soc_table.DEFAULT_SOC
    old = soc_table.SOCS[key]
    soc_table.SOCS[key] = dataclasses.replace(old, float64=True)
    try:
        yield
    finally:
        soc_table.SOCS[key] = old


@contextmanager
def float64_device_for(request: Any, *names: str) -> Iterator[None]:
    """:func:`float64_device` for a test whose ``dtype`` parameter is float64 (or whose
    name is among ``names``: float64 results of other dtypes), else nothing."""
    spec = getattr(request.node, "callspec", None)
    dtype = spec.params.get("dtype") if spec is not None else None
    wide = dtype == "float64" or request.node.originalname in names
    if not wide:
        yield
        return
    with float64_device():
        yield


def kernel(fn: Any, *args: Any) -> SimKernel:
    return STORE.get(fn, *args)


def run_sim(fn: Any, *args: Any) -> tuple[Any, SimKernel]:
    """``fn(*args)`` on ascend-sim, and the kernel (for its counters)."""
    k = kernel(fn, *args)
    return fn.run_with(lambda program: k, *args), k


def assert_close(got: Any, want: Any, rtol: float, atol: float, where: str = "") -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, rtol, atol, f"{where}[{i}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                               atol=atol, err_msg=where)


def check(fn: Any, *args: Any, rtol: float = 1e-5, atol: float = 1e-6) -> SimKernel:
    """ascend-sim result == the numpy result (and arguments afterwards) within tolerance."""
    ref_args = copy.deepcopy(args)
    want = fn.__wrapped__(*ref_args)
    sim_args = copy.deepcopy(args)
    got, k = run_sim(fn, *sim_args)
    assert_close(got, want, rtol, atol, fn.__name__)
    for i, (a, b) in enumerate(zip(sim_args, ref_args, strict=True)):
        if isinstance(b, np.ndarray):
            assert_close(a, b, rtol, atol, f"{fn.__name__} argument {i}")
    return k
