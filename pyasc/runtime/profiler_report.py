"""What a :class:`~pyasc.runtime.profiler.Profile` records and shows: the records of
calls and compiles, figures per specialization,
the report table and the Chrome trace (the JSON event format Perfetto and
``chrome://tracing`` open: complete events ``"ph": "X"`` in microseconds)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CompileRecord:
    """Making a specialization's kernel ready: ``source`` is ``"disk"`` (loaded from
    the disk cache) or ``"compiled"``."""

    function: str
    target: str
    source: str
    start_ns: int
    wall_ns: int
    thread: int


@dataclass(frozen=True)
class CallRecord:
    """One call of a compiled function."""

    function: str
    target: str
    signature: str  # the argument types of its specialization
    cache: str  # "memory", "disk" or "compiled"
    compile_ns: int
    start_ns: int
    wall_ns: int  # the whole call, compile included
    cpu_ns: int  # the calling thread's CPU time (kernels on pool threads not included)
    bytes_in: int
    bytes_out: int
    thread: int
    counters: dict[str, int] = field(default_factory=dict)  # ascend-sim's, else empty
    launches: tuple[tuple[str, int], ...] = ()  # (kernel, block_dim): ascend targets


GM_COUNTERS = ("gm_to_ub_bytes", "ub_to_gm_bytes", "gm_scalar_read_bytes",
               "gm_scalar_write_bytes", "gm_to_l1_bytes", "l0c_to_gm_bytes")
"""The ascend-sim counters that are global-memory traffic."""


def aggregate(calls: Sequence[CallRecord]) -> list[dict[str, Any]]:
    """One row per (function, target, signature), the largest total time first."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in calls:
        row = rows.setdefault((c.function, c.target, c.signature), {
            "function": c.function, "target": c.target, "signature": c.signature,
            "calls": 0, "memory_hits": 0, "disk_hits": 0, "compiles": 0,
            "compile_s": 0.0, "total_s": 0.0, "run_s": 0.0, "cpu_s": 0.0,
            "bytes_in": 0, "bytes_out": 0, "counters": {}, "launches": 0, "kernels": {}})
        row["calls"] += 1
        key = {"memory": "memory_hits", "disk": "disk_hits"}.get(c.cache, "compiles")
        row[key] += 1
        row["compile_s"] += c.compile_ns / 1e9
        row["total_s"] += c.wall_ns / 1e9
        row["run_s"] += max(c.wall_ns - c.compile_ns, 0) / 1e9
        row["cpu_s"] += c.cpu_ns / 1e9
        row["bytes_in"] += c.bytes_in
        row["bytes_out"] += c.bytes_out
        for name, value in c.counters.items():
            row["counters"][name] = row["counters"].get(name, 0) + value
        _add_launches(row, c.launches)
    for row in rows.values():
        _derived(row)
    return sorted(rows.values(), key=lambda r: -r["total_s"])


def _add_launches(row: dict[str, Any], launches: Sequence[tuple[str, int]]) -> None:
    """Count the launches per kernel name and their blocks (block_dim summed)."""
    row["launches"] += len(launches)
    for kernel, blocks in launches:
        k = row["kernels"].setdefault(kernel, {"launches": 0, "blocks": 0})
        k["launches"] += 1
        k["blocks"] += blocks


def _derived(row: dict[str, Any]) -> None:
    """Achieved bandwidth of the runs (argument and result bytes over run time) and,
    with simulator counters, the GM bytes against the minimum (each argument read once,
    each result written once)."""
    moved = row["bytes_in"] + row["bytes_out"]
    row["gb_per_s"] = moved / row["run_s"] / 1e9 if row["run_s"] > 0 else None
    gm = sum(row["counters"].get(k, 0) for k in GM_COUNTERS)
    row["gm_bytes"] = gm if row["counters"] else None
    row["gm_over_minimum"] = gm / moved if row["counters"] and moved else None


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The report: one line per specialization, columns aligned."""
    head = ("function", "target", "calls", "cache m/d/c", "compile ms", "run ms",
            "per call us", "cpu ms", "MB in/out", "GB/s", "GM/min", "launches")
    lines = [head]
    for r in rows:
        per_call = r["run_s"] / r["calls"] * 1e6
        lines.append((
            r["function"], r["target"], str(r["calls"]),
            f"{r['memory_hits']}/{r['disk_hits']}/{r['compiles']}",
            f"{r['compile_s'] * 1e3:.1f}", f"{r['run_s'] * 1e3:.3f}", f"{per_call:.1f}",
            f"{r['cpu_s'] * 1e3:.3f}",
            f"{r['bytes_in'] / 1e6:.2f}/{r['bytes_out'] / 1e6:.2f}",
            "-" if r["gb_per_s"] is None else f"{r['gb_per_s']:.2f}",
            "-" if r["gm_over_minimum"] is None else f"{r['gm_over_minimum']:.2f}x",
            _launch_cell(r)))
    if len(lines) == 1:
        return "no pyasc calls were profiled"
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                     for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
           for line in lines]
    out.insert(1, "-" * len(out[0]))
    out.append("cache m/d/c: kernels from memory / disk / compiled; run: wall time minus "
               "compile; cpu: the calling thread's CPU time, compile included; GM/min: "
               "ascend-sim GM bytes over the argument and result bytes; launches: "
               "kernel launches per call on the ascend targets (kernels: stats())")
    return "\n".join(out)


def _launch_cell(row: dict[str, Any]) -> str:
    """Kernel launches per call (ascend targets), ``-`` where nothing launches."""
    if not row["launches"]:
        return "-"
    per_call = row["launches"] / row["calls"]
    return f"{per_call:.0f}" if per_call == int(per_call) else f"{per_call:.2f}"


def chrome_trace(path: str, calls: Sequence[CallRecord], compiles: Sequence[CompileRecord],
                 origin_ns: int) -> None:
    """Write complete events (run and compile as separate slices) per thread."""
    pid = os.getpid()
    events: list[dict[str, Any]] = []
    for c in compiles:
        events.append({"name": f"compile {c.function}", "cat": "compile", "ph": "X",
                       "ts": (c.start_ns - origin_ns) / 1e3, "dur": c.wall_ns / 1e3,
                       "pid": pid, "tid": c.thread,
                       "args": {"target": c.target, "source": c.source}})
    for c in calls:
        events.append({"name": c.function, "cat": "call", "ph": "X",
                       "ts": (c.start_ns - origin_ns) / 1e3, "dur": c.wall_ns / 1e3,
                       "pid": pid, "tid": c.thread,
                       "args": {"target": c.target, "signature": c.signature,
                                "cache": c.cache, "bytes_in": c.bytes_in,
                                "bytes_out": c.bytes_out, **c.counters,
                                "launches": [f"{k} x{b}" for k, b in c.launches]}})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


__all__ = ["GM_COUNTERS", "CallRecord", "CompileRecord", "aggregate", "chrome_trace",
           "table"]
