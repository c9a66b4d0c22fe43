"""Result tables: the side-by-side summary, memory bandwidth, every variant, the machine.

Tables are built as lists of string cells and rendered either as aligned plain text (the
terminal) or as GitHub markdown (``--markdown``, for RESULTS.md).  In plain text a cell that
holds an error message is cut to ``ERROR_WIDTH`` characters; the full first line is in the
"all variants" table.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

import c_impl
from cases import Tools
from harness import Result, Row

ERROR_WIDTH = 38

NOTES = (
    "Times are per call, median over the repetitions (each repetition averages enough "
    "calls to last >= 20 ms), after a warm-up call for what compiles (Numba, pyasc), "
    "all implementations of a kernel in one process and timed round-robin; every "
    "implementation allocates its output like numpy does.",
    "A column shows its fastest variant whose result matches the reference (the kernel as "
    "written, run by CPython + numpy) within the stated rtol/atol; the all-variants table "
    "lists each one.",
    "CPython: the kernel as written, interpreted (loop-heavy kernels only); for those, "
    "numpy = CPython unless a vectorized numpy formulation exists (NMS).",
    "Numba: best of `njit` of the kernel as written and an explicit-loop version with the "
    "same algorithm as the C code; `fastmath=False` except in +fastmath rows.",
    "C: `gcc -O3 -march=native` (gcc's default `-ffp-contract=fast` lets it use FMA), "
    "`-ffast-math` only in +fastmath rows, where pyasc runs with `fastmath=True`.",
    "Ratios are pyasc time / other time (below 1.00x: pyasc is faster); CPython/pyasc is "
    "the speed-up over the interpreted kernel.  pyasc 1st call = compile (cold cache) + "
    "one run.",
)


def fmt_time(seconds: float) -> str:
    """Seconds with 3 significant digits and a unit (s, ms, µs, ns)."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _error_cell(results: list[Result], markdown: bool) -> str:
    errors = [r.error for r in results if r.error]
    text = errors[0] if errors else "-"
    if not markdown and len(text) > ERROR_WIDTH:
        text = text[: ERROR_WIDTH - 1] + "…"
    return text.replace("|", "\\|") if markdown else text


def _time_cell(row: Row, column: str, markdown: bool) -> str:
    if column == "numpy" and row.case.loop_heavy and row.columns.get("numpy") is \
            row.columns.get("CPython"):
        return "= CPython"
    best = row.best(column)
    if best is not None:
        return fmt_time(best.median)
    return _error_cell(row.columns.get(column, []), markdown)


def _ratio(row: Row, column: str) -> str:
    mine, other = row.best("pyasc"), row.best(column)
    if mine is None or other is None:
        return "-"
    return f"{mine.median / other.median:.2f}x"


def _speedup(row: Row) -> str:
    mine, cpython = row.best("pyasc"), row.best("CPython")
    if mine is None or cpython is None:
        return "-"
    return f"{cpython.median / mine.median:.3g}x"


def summary_table(rows: list[Row], columns: tuple[str, ...], markdown: bool
                  ) -> list[list[str]]:
    """Header + one line per row: best time per column, pyasc's first call, ratios."""
    ratio_cols = [c for c in ("numpy", "numba", "C") if c in columns]
    header = ["kernel", "size", *columns, "pyasc 1st call",
              *[f"pyasc/{c}" for c in ratio_cols], "CPython/pyasc"]
    table = [header]
    for row in rows:
        pyasc = row.best("pyasc")
        first = fmt_time(pyasc.first) if pyasc is not None else "-"
        table.append([row.name, row.size, *[_time_cell(row, c, markdown) for c in columns],
                      first, *[_ratio(row, c) for c in ratio_cols], _speedup(row)])
    return table


def bandwidth_table(rows: list[Row], columns: tuple[str, ...], triad: float | None
                    ) -> list[list[str]]:
    """Effective GB/s (argument + result bytes per call) and % of STREAM triad."""
    table = [["kernel", "MB/call", *columns]]
    for row in rows:
        if row.traffic is None:
            continue
        cells = []
        for column in columns:
            best = row.best(column)
            if best is None:
                cells.append("-")
                continue
            gbs = row.traffic / best.median / 1e9
            pct = f" ({100 * gbs / triad:.0f}%)" if triad else ""
            cells.append(f"{gbs:.1f} GB/s{pct}")
        table.append([row.name, f"{row.traffic / 1e6:.0f}", *cells])
    return table


def variants_table(rows: list[Row], markdown: bool) -> list[list[str]]:
    """Every variant of every row: median, min, first call, calls x repetitions, status."""
    table = [["kernel", "column", "variant", "median", "min", "1st call", "calls/rep",
              "status"]]
    seen: set[int] = set()
    for row in rows:
        for column, results in row.columns.items():
            for res in results:
                if id(res) in seen:  # shared CPython/numpy results: list them once
                    continue
                seen.add(id(res))
                status = "ok" if res.ok else (res.error or "?")
                if markdown:
                    status = status.replace("|", "\\|")
                times = [fmt_time(t) if t is not None else "-"
                         for t in (res.median, res.best, res.first)]
                table.append([row.name, column, res.label, *times, str(res.calls or "-"),
                              status])
    return table


def fusion_lines(rows: list[Row]) -> list[str]:
    """For compositions: pyasc's fused time against its callees called one by one."""
    lines = []
    for row in rows:
        found = {r.label: r for r in row.columns.get("pyasc", []) if r.ok}
        fused, unfused = found.get("pyasc fusion_group"), found.get("pyasc unfused calls")
        if fused and unfused:
            gain = unfused.median / fused.median - 1
            lines.append(f"{row.name}: fusion_group {fmt_time(fused.median)}, unfused calls "
                         f"{fmt_time(unfused.median)} (fusion {100 * gain:+.0f}% speed)")
    return lines


def render(table: list[list[str]], markdown: bool) -> str:
    """Aligned plain text, or a GitHub markdown table."""
    if markdown:
        lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
        lines += ["| " + " | ".join(line) + " |" for line in table[1:]]
        return "\n".join(lines)
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
           for line in table]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            lines = info.read().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")),
                 platform.machine())
    flags = next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), [])
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16") if f in flags]
    return f"{model} ({', '.join(isa) or 'no AVX2'})"


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # optional packages
        return "not installed"


def _git_revision() -> str:
    # --no-optional-locks: `status` must not even refresh the index of a shared checkout.
    root = str(Path(__file__).resolve().parent.parent)
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        changes = subprocess.run(["git", "--no-optional-locks", "-C", root, "status",
                                  "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return head + ("-dirty" if changes else "")


def machine(tools: Tools, threads: int, triad: dict[int, float]) -> list[str]:
    """Lines describing the machine and software, for the top of RESULTS.md."""
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    try:
        gcc = c_impl.gcc_version()
    except Exception as exc:  # no gcc: say so
        gcc = f"unavailable ({exc})"
    pyasc = tools.pyasc.__version__ if tools.pyasc is not None else \
        f"unavailable ({tools.pyasc_reason})"
    bandwidth = ", ".join(f"{n} thread{'s' * (n > 1)}: {gbs:.1f} GB/s"
                          for n, gbs in sorted(triad.items()))
    return [
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical cores; "
        f"STREAM triad {bandwidth or 'not measured'}",
        f"- Python {platform.python_version()} ({sys.platform}), numpy {np.__version__} "
        f"({blas['name']} {blas.get('version', '')}), numba {_version('numba')}, "
        f"llvmlite {_version('llvmlite')}, {gcc}",
        f"- pyasc {pyasc}, git {_git_revision()}",
        f"- threads: {threads} (OMP/OPENBLAS/MKL/NUMBA/PYASC_NUM_THREADS); "
        f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
    ]
