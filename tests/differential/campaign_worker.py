"""The worker side of the fuzzing campaign (``campaign``): judge programs ``[first,
end)`` of a seed and append one JSON record per program to the chunk's file.

A record is ``{"index", "hash", "constructs", "outcomes": {runner: {"status",
"kind", "seconds", "cpu"}}}``; with ascend-sim, each batch of programs starts with
``{"batch", "built", "seconds", "cpu"}`` (one C++ build for the batch's kernels,
``pyasc.backend.ascendc.sim_backend.prebuild``); the chunk ends with ``{"done":
true}``.  Every failed runner is saved as a case (:func:`save_case`).  The libraries
of programs built alone go to a cache private to the worker, removed at its end:
fuzzed programs never repeat, and 10,000 kept libraries would fill the disk.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHUNK_DONE = "done"


def save_case(out: Path, seed: int, index: int, runner: str, kind: str, detail: str,
              program: Any = None, profile: str = "default") -> Path:
    """Write ``<out>/cases/<index>-<runner>/``: ``case.json`` (seed, index, runner,
    kind, budget, the layout of ``a`` and ``s``), ``prog.py``, ``inputs.npz`` (``a``
    and ``b``) and ``error.txt``; ``--replay`` runs it from these files alone."""
    import numpy as np

    if program is None:
        from progen import generate_seeded

        program = generate_seeded(f"{seed}:{index}", profile)
    folder = out / "cases" / f"{index:07d}-{runner}"
    folder.mkdir(parents=True, exist_ok=True)
    a, b, s = program.args
    tol = program.tol
    case = {"seed": seed, "profile": profile, "index": index, "runner": runner, "kind": kind,
            "layout": program.layout, "s": s,
            "tol": tol if isinstance(tol, float) else dataclasses.asdict(tol),
            "replay": f"python -m tests.differential.campaign --replay {folder}"}
    (folder / "case.json").write_text(json.dumps(case, indent=1) + "\n")
    (folder / "prog.py").write_text(program.source)
    np.savez(folder / "inputs.npz", a=np.ascontiguousarray(a), b=b)
    (folder / "error.txt").write_text(detail + "\n")
    return folder


def load_case(folder: Path) -> tuple[dict, Any]:
    """The case's record and its program rebuilt from the saved files."""
    import numpy as np
    from diff import Tol, in_layout
    from progen import Program, load

    case = json.loads((folder / "case.json").read_text())
    source = (folder / "prog.py").read_text()
    with np.load(folder / "inputs.npz") as f:
        args = (in_layout(f["a"], case["layout"]), f["b"], case["s"])
    tol = case["tol"] if isinstance(case["tol"], float) else Tol(**case["tol"])
    return case, Program(source, load(source), args, tol, case["layout"])


def _private_sim_backend(root: Path, prebuilt: dict) -> None:
    """Make the differential runner build ascend-sim libraries into ``root``, using the
    ``prebuilt`` ones (filled batch by batch) first."""
    import diff

    from pyasc.backend.ascendc.sim_backend import SimBackend
    from pyasc.runtime.disk_cache import DiskCache

    diff.BACKENDS["ascend-sim"] = lambda: SimBackend(DiskCache(root, backend="ascend-sim"),
                                                     prebuilt)


def _prebuild(programs: list, prebuilt: dict) -> dict:
    """Build the ascend-sim kernels of ``programs`` in one C++ build; its costs."""
    import numpy as np

    from pyasc.backend.ascendc.sim_backend import prebuild

    start, cpu = time.perf_counter(), _cpu()
    specs = []
    for program in programs:
        try:
            with np.errstate(all="ignore"):
                specs.append(program.fn.specialize(*program.args))
        except Exception:  # noqa: BLE001 - the judge reports it
            continue
    prebuilt.clear()
    prebuilt.update(prebuild(specs))
    return {"batch": len(programs), "built": len(prebuilt),
            "seconds": round(time.perf_counter() - start, 4), "cpu": round(_cpu() - cpu, 4)}


def _cpu() -> float:
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_chunk(out: Path, seed: int, first: int, end: int, runners: Sequence[str],
              limit: float, path: Path, batch: int = 10, profile: str = "default") -> None:
    """Judge programs ``first .. end - 1`` of ``seed``, appending records to ``path``;
    with ascend-sim, ``batch`` programs' kernels are built at a time."""
    warnings.simplefilter("ignore")
    from progen import generate_seeded

    libs, prebuilt = Path(tempfile.mkdtemp(prefix="pyasc-fuzz-sim-")), {}
    _private_sim_backend(libs, prebuilt)
    try:
        with path.open("a") as f:
            for start in range(first, end, batch):
                indices = range(start, min(start + batch, end))
                programs = [(i, generate_seeded(f"{seed}:{i}", profile)) for i in indices]
                if "ascend-sim" in runners:
                    f.write(json.dumps(_prebuild([p for _, p in programs], prebuilt)) + "\n")
                for index, program in programs:
                    record = _judge(out, seed, index, program, runners, limit, profile)
                    f.write(json.dumps(record) + "\n")
                    f.flush()
            f.write(json.dumps({CHUNK_DONE: True}) + "\n")
    finally:
        shutil.rmtree(libs, ignore_errors=True)


def _judge(out: Path, seed: int, index: int, program, runners: Sequence[str],
           limit: float, profile: str = "default") -> dict:
    """Judge one program, save its failures as cases; its record."""
    from judge import judge
    from progen_constructs import constructs_in

    verdict = judge(program, runners, limit)
    for runner, o in verdict.failed.items():
        save_case(out, seed, index, runner, o.kind, o.detail, program, profile)
    return {"index": index, "hash": _digest(program.source),
            "constructs": constructs_in(program.source),
            "outcomes": {r: {"status": o.status, "kind": o.kind,
                             "seconds": round(o.seconds, 4), "cpu": round(o.cpu, 4)}
                         for r, o in verdict.outcomes.items()}}


def _digest(source: str) -> str:
    import hashlib

    return hashlib.sha1(source.encode()).hexdigest()[:16]
