"""Several generated programs' kernels compiled into one ascend-sim library.

A sim build's cost is mostly fixed: starting the compiler, reading the sim headers and
instantiating the API templates the kernels use.  Built together, N programs pay it
once (nine fuzzed programs: 6.0 s of compiler CPU one by one, 1.3 s as one build).
Each program's source goes into its own namespace, with its kernel names renamed by
``#define`` (``prog_0`` -> ``prog_0__b3``) so that the ``extern "C"`` kernels of
different programs do not collide, and is exported under the new names; the
:class:`SimLibrary` of each program maps its own kernel names back.  The sources are
compiled unchanged (the same text a single build compiles): only the wrapper differs.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.sim.runner import (
    SimConfig,
    SimLibrary,
    build_command,
    export_line,
    find_compiler,
)
from pyasc.errors import ArgumentError

_MAIN = "pyasc_sim_main.cpp"


@dataclass(frozen=True)
class Unit:
    """One program of a batch: its source, its kernels, its file name and the core type
    of each kernel that is not a vector kernel."""

    source: str
    kernels: tuple[str, ...]
    filename: str
    cores: Mapping[str, str] = field(default_factory=dict)


def batch_source(units: Sequence[Unit]) -> str:
    """The translation unit of a batch (program ``i`` is included as ``b<i>_<file>``)."""
    parts = ['#include "kernel_operator.h"\n#include "sim_launch.h"\n']
    for i, unit in enumerate(units):
        renamed = {k: f"{k}__b{i}" for k in unit.kernels}
        parts += [f"#define {k} {new}\n" for k, new in renamed.items()]
        parts.append(f'namespace pyasc_batch_{i} {{\n#include "b{i}_{unit.filename}"\n')
        parts += [export_line(k, unit.cores.get(k, VECTOR), new) for k, new in renamed.items()]
        parts.append("}\n")
        parts += [f"#undef {k}\n" for k in renamed]
    return "".join(parts)


def compile_batch(units: Sequence[Unit], config: SimConfig,
                  pch_root: Path | None = None) -> list[SimLibrary] | None:
    """One library per unit from a single build, or None when the batch does not
    compile (then build the units one by one: each gets its own precise error)."""
    for unit in units:
        for name in unit.kernels:
            if not name.isidentifier():
                raise ArgumentError(f"'{name}' is not a C identifier")
    cxx = find_compiler()
    workdir = Path(tempfile.mkdtemp(prefix="pyasc-sim-batch-"))
    try:
        for i, unit in enumerate(units):
            (workdir / f"b{i}_{unit.filename}").write_text(unit.source)
        (workdir / _MAIN).write_text(batch_source(units))
        proc = subprocess.run(build_command(cxx, config, "batch.so", pch_root), cwd=workdir,
                              capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            return None
        lib = ctypes.CDLL(str(workdir / "batch.so"))  # stays mapped after the file is removed
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return [SimLibrary(lib, unit.kernels, source=unit.source, filename=f"b{i}_{unit.filename}",
                       config=config, symbols={k: f"{k}__b{i}" for k in unit.kernels})
            for i, unit in enumerate(units)]
