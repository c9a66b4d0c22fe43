"""Shared helpers for the ascend-sim tests: build each kernel group once, concurrently.

The kernel sources live in ``kernels/``. Builds start together on first use (two
compiler processes on the two CI cores) and are cached for the whole session. The groups
use different optimisation levels so that -O0, -O1 and -O2 are all exercised.
"""

from __future__ import annotations

import functools
import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from pyasc.backend.ascendc.sim import SimConfig, SimLibrary, compile_kernels

KERNELS = Path(__file__).parent / "kernels"
_OPT = {"sim_elementwise.cpp": "-O0", "sim_cmp_reduce.cpp": "-O2", "sim_violations.cpp": "-O1",
        "sim_cube.cpp": "-O1", "sim_load3d.cpp": "-O1"}
_ENTRY = re.compile(r'^extern "C" __global__ __aicore__ void (\w+)\(', re.MULTILINE)
_MACRO_ENTRY = re.compile(r"^(?:BINARY|UNARY|SCALAR|CAST|TILE)_KERNEL\((\w+),|^KERNEL\((\w+)\)",
                          re.MULTILINE)


def kernel_names(source: str) -> list[str]:
    """The extern "C" kernels a test source defines (directly or through its macros)."""
    return _ENTRY.findall(source) + [a or b for a, b in _MACRO_ENTRY.findall(source)]


def _build(filename: str) -> SimLibrary:
    source = (KERNELS / filename).read_text()
    return compile_kernels(
        source, kernel_names(source), filename=filename, config=SimConfig(opt_level=_OPT[filename])
    )


@functools.cache
def _builds() -> dict[str, Future[SimLibrary]]:
    pool = ThreadPoolExecutor(max_workers=2)
    return {name: pool.submit(_build, name) for name in _OPT}


def library(filename: str) -> SimLibrary:
    """The compiled library of ``kernels/<filename>``."""
    return _builds()[filename].result()


def marked_line(filename: str, marker: str) -> int:
    """1-based line of ``kernels/<filename>`` that carries the comment ``marker``."""
    for number, text in enumerate((KERNELS / filename).read_text().splitlines(), start=1):
        if text.rstrip().endswith(marker):
            return number
    raise LookupError(f"no line ends with {marker!r} in {filename}")
