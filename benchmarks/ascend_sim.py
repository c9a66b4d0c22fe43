"""ascend-sim counters of the issue-6 kernels: GM traffic, UB use, double buffering.

    python benchmarks/ascend_sim.py [--quick] [--soc Ascend910B1] [--only relu,softmax]
                                    [--dtypes float32,float16] [--repeat 3] [--markdown]

Each kernel of issue 6's "Done when" list, exactly as ``kernels.py`` defines it, is compiled
for ``target="ascend-sim"`` (pyasc's host model of the AscendC API, see
``pyasc/backend/ascendc/sim/README.md``), run, and compared with the kernel run as written by
numpy (what the ``interpret`` target does).  The sim's counters of that call give the GM
traffic (DMA and scalar), the UB budget used and how the copy-ins were buffered; the row
also says whether the issue's performance targets hold.  Sizes are the "full" inputs of the
CPU benchmarks (``--quick``: "small").  A kernel the device path does not support is a row
with its E50010 reason; any other failure is a FAIL row and the exit status is 1.
"""

from __future__ import annotations

import argparse
import faulthandler
import linecache
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.sim_backend import compiler_version
from pyasc.backend.ascendc.soc import DEFAULT_SOC, SoC, get_soc
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError
from pyasc.errors import PyascError

import kernels
from report import fmt_time, render

SECTION = "## ascend-sim (issue 6): GM traffic, UB use, double buffering"
TOLERANCES = {"float32": (1e-5, 1e-6), "float16": (4e-3, 4e-3)}  # (rtol, atol)
BLOCK_SLOT = 32  # bytes a whole-array reduction writes per block: one 32-byte DMA block
ERROR_WIDTH = 60
HEADER = ["kernel", "dtype", "size", "max abs err", "max rel err", "check", "blocks",
          "GM→UB bytes", "UB→GM bytes", "UB peak (% budget)", "copy-in (single-buf)",
          "scalar GM read / write", "sim call", "issue-6 targets"]


@dataclass(frozen=True)
class SimCase:
    """A kernel of the issue's list.  ``row_vectors``: argument positions broadcast over the
    rows (loaded once per block); ``whole_reduce``: the result reduces the whole array (each
    block writes one partial result, the host adds them)."""

    kernel: str
    row_vectors: tuple[int, ...] = ()
    whole_reduce: bool = False


CASES = (
    SimCase("relu"),
    SimCase("gelu_tanh"),
    SimCase("softmax"),
    SimCase("layernorm", row_vectors=(1, 2)),
    SimCase("sq_error_loss", whole_reduce=True),
    SimCase("adaptive_avg_pool"),
    SimCase("bilateral_filter"),
)


@dataclass
class Measured:
    """One kernel at one dtype: inputs, counters of the checked call, comparison, time."""

    case: SimCase
    dtype: str
    size: str
    args: tuple
    counters: dict[str, int] = field(default_factory=dict)
    launches: int = 0
    scalar: list[str] = field(default_factory=list)  # "file:line: why" of each warning
    abs_err: float = math.nan
    rel_err: float = math.nan
    out_bytes: int = 0
    ok: bool = False
    unsupported: bool = False
    error: str | None = None
    seconds: float | None = None

    @property
    def in_bytes(self) -> int:
        return sum(a.nbytes for a in self.args if isinstance(a, np.ndarray))

    def min_in(self) -> int:
        """Every input read once; row vectors once per block."""
        rows = sum(self.args[i].nbytes for i in self.case.row_vectors)
        return self.in_bytes + rows * (self.counters["blocks"] - 1)

    def min_out(self) -> int:
        """The result written once; a whole-array reduction: one slot per block."""
        return self.counters["blocks"] * BLOCK_SLOT if self.case.whole_reduce else self.out_bytes


def make_inputs(case: SimCase, size: str, dtype: str) -> tuple:
    """``kernels.make_inputs`` at ``size``, cast to ``dtype`` (float16: the same values)."""
    args = kernels.make_inputs(case.kernel, size)
    if dtype == "float32":
        return args
    cast = tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in args)
    if case.whole_reduce:
        # n squared differences of N(0, 2) values sum to ~2n, far past float16's 65504:
        # scaled by 64/sqrt(n) the sum is ~8192.
        scale = np.float16(64 / math.sqrt(cast[0].size))
        cast = tuple(a * scale for a in cast)
    return cast


def measure(case: SimCase, dtype: str, size: str, soc: SoC, repeat: int) -> Measured:
    """Kernel ``case`` of ``kernels.py`` on its inputs at ``size`` and ``dtype``."""
    m = Measured(case, dtype, kernels.describe_size(case.kernel, size),
                 make_inputs(case, size, dtype))
    return run(m, getattr(kernels, case.kernel), soc, repeat)


def run(m: Measured, kernel_fn: Callable, soc: SoC, repeat: int) -> Measured:
    """Compile ``kernel_fn`` for ascend-sim on ``m.args``, run it, check it against the
    function run by numpy, read the counters and time it; fills in and returns ``m``."""
    fn = hybrid(kernel_fn, device_type=[soc.name])
    try:
        kernel = _compile(fn, m)
        got = fn.run_with(lambda _: kernel, *m.args)
    except DeviceUnsupportedError as exc:
        m.unsupported, m.error = True, _describe(exc)
        return m
    except Exception as exc:  # a benchmark reports a failure as a row, never crashes
        m.error = _describe(exc) if isinstance(exc, PyascError) else \
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return m
    m.counters, m.launches = dict(kernel.last_counters), len(kernel.last_launches)
    _compare(m, got, kernel_fn(*m.args))
    m.seconds = _median_call(fn, kernel, m.args, repeat)
    return m


def _compile(fn, m: Measured):
    """``fn.kernel`` for ascend-sim; records the performance warnings of the lowering."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = fn.bind(*m.args).kernel(target="ascend-sim")
    for w in caught:
        if issubclass(w.category, PyascPerformanceWarning):
            why = str(w.message).rpartition("): ")[2]  # after "(GetValue/SetValue ...): "
            line = linecache.getline(w.filename, w.lineno).strip()
            m.scalar.append(f"{Path(w.filename).name}:{w.lineno} `{line}`: {why}")
        else:  # not ours to swallow
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return kernel


def _describe(exc: PyascError) -> str:
    where = f" ({Path(exc.filename).name}:{exc.lineno})" if exc.lineno else ""
    return f"{exc.code}: {exc.message}{where}"


def _compare(m: Measured, got, want) -> None:
    """Same dtype and shape, then ``np.allclose`` at the dtype's tolerance."""
    g, w = np.asarray(got), np.asarray(want)
    m.out_bytes = g.nbytes
    if g.dtype != w.dtype or g.shape != w.shape:
        m.error = f"result {g.dtype}{list(g.shape)}, interpret {w.dtype}{list(w.shape)}"
        return
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    m.abs_err = float(np.max(np.abs(g64 - w64), initial=0.0))
    scale = float(np.max(np.abs(w64), initial=0.0))
    m.rel_err = m.abs_err / scale if scale else m.abs_err
    rtol, atol = TOLERANCES[m.dtype]
    m.ok = bool(np.allclose(g64, w64, rtol=rtol, atol=atol))


def _median_call(fn, kernel, args: tuple, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn.run_with(lambda _: kernel, *args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------------------- report


def _vs_min(actual: int, minimum: int) -> str:
    return f"{actual:,} = min" if actual == minimum else f"{actual:,} (min {minimum:,})"


def _scalar_cell(m: Measured) -> str:
    read, write = m.counters["gm_scalar_read_bytes"], m.counters["gm_scalar_write_bytes"]
    if not read and not write:
        return "0 / 0"
    return f"{read:,} ({read / m.in_bytes:.3g}x inputs) / {write:,}"


def targets(m: Measured, budget: int) -> str:
    """Which of issue 6's targets the row misses ("met" if none; scalar code has no DMA)."""
    c = m.counters
    if m.scalar and not c["copy_in_calls"]:
        return "n/a: scalar code"
    misses = []
    if c["gm_to_ub_bytes"] != m.min_in() or c["ub_to_gm_bytes"] != m.min_out():
        misses.append("GM bytes > min")
    if c["copy_in_single_buffered_calls"] > c["blocks"] * len(m.case.row_vectors):
        misses.append("single-buffered copy-in")
    if c["ub_peak_bytes"] < budget / 2:
        misses.append(f"UB {100 * c['ub_peak_bytes'] / budget:.0f}% < 50%")
    misses += ["partly scalar code"] if m.scalar else []
    return ", ".join(misses) or "met"


def _check_cell(m: Measured) -> str:
    if m.unsupported:
        return "unsupported"
    return "ok" if m.ok and m.error is None else "FAIL"


def row_cells(m: Measured, budget: int, markdown: bool) -> list[str]:
    """One table line."""
    head = [m.case.kernel, m.dtype, m.size]
    if not m.counters:  # unsupported or failed before the sim ran: the reason instead
        text = m.error or "?"
        if not markdown and len(text) > ERROR_WIDTH:
            text = text[: ERROR_WIDTH - 1] + "…"
        return [*head, "-", "-", _check_cell(m), *["-"] * 7, text.replace("|", "\\|")]
    c = m.counters
    blocks = f"{c['blocks']}" + (f" ({m.launches} launches)" if m.launches != 1 else "")
    return [*head, f"{m.abs_err:.3g}", f"{m.rel_err:.3g}", _check_cell(m), blocks,
            _vs_min(c["gm_to_ub_bytes"], m.min_in()), _vs_min(c["ub_to_gm_bytes"], m.min_out()),
            f"{c['ub_peak_bytes']:,} ({100 * c['ub_peak_bytes'] / budget:.0f}%)",
            f"{c['copy_in_calls']:,} ({c['copy_in_single_buffered_calls']:,})",
            _scalar_cell(m), fmt_time(m.seconds) if m.seconds is not None else "-",
            targets(m, budget) if m.error is None else m.error]


RULES = (
    "GM→UB minimum: each input read once by DMA (`DataCopy`/`DataCopyPad`); a row vector "
    "broadcast over rows (layernorm's gamma, beta) is read once per block, i.e. `blocks` "
    "times. UB→GM minimum: the result written once; a whole-array reduction (sq_error_loss) "
    f"writes one {BLOCK_SLOT}-byte partial result per block and the host adds the `blocks` "
    "partials.",
    "UB peak: the block's `InitBuffer` total. copy-in: GM→UB copy calls summed over blocks "
    "(in parentheses: those into a single-buffered TQue or a TBuf); double buffering holds "
    "when only the once-per-block row-vector loads are single-buffered.",
    "issue-6 targets: GM bytes = minimum, every per-tile copy-in double-buffered, UB peak "
    ">= 50% of the budget (for data large enough to fill it; `--quick` data may not).",
)


def notes(rows: list[Measured], soc: SoC, size: str, repeat: int) -> list[str]:
    """What the columns mean, the rules behind the minima, and where code is scalar."""
    threads = os.environ.get("PYASC_SIM_THREADS") or str(os.cpu_count())
    tolerances = ", ".join(f"{d} rtol {_sci(r)} / atol {_sci(a)}"
                           for d, (r, a) in TOLERANCES.items())
    return [
        f"SoC {soc.name}: InitBuffer budget {soc.init_buffer_bytes:,} bytes "
        f"({soc.init_buffer_bytes // 1024} KB of {soc.ub_bytes // 1024} KB UB), block_dim <= "
        f"{soc.vector_blocks}. Inputs: `kernels.make_inputs(name, \"{size}\")`; float16 rows "
        "cast the same values (sq_error_loss's scaled by 64/sqrt(n), so the sum, ~8192, is "
        "finite in float16).",
        "check: ascend-sim result vs the kernel run by numpy as written (the `interpret` "
        f"target): same dtype and shape, and `np.allclose` with {tolerances} (numpy rounds "
        "every step of a composite to float16, the kernels compute composites in float and "
        "round once). max rel err = max|sim - numpy| / max|numpy|.",
        *RULES,
        "scalar GM read / write: bytes moved by `GlobalTensor::GetValue/SetValue` on the "
        "scalar unit (x: multiple of the input bytes). Scalar code, from the backend's "
        "PyascPerformanceWarning (the vector schedules cover elementwise chains and "
        "reductions; a Python loop working on array windows has none, so its loop nest is "
        "one scalar AscendC kernel): " + (_scalar_list(rows) or "none") + ".",
        f"sim call: median wall time of {repeat} call{'s' * (repeat > 1)} on this host (the "
        f"compiled sim library, blocks on {threads} threads, plus the host program); a "
        "functional host model, not NPU time: nothing here has run on a real NPU. "
        f"{compiler_version()}; load average {_load()} at the end of the run.",
        *[f"{m.case.kernel} {m.dtype}: {m.error}" for m in rows if m.error],
    ]


def _load() -> str:
    try:  # other processes share the CPU the blocks run on
        return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


def _sci(x: float) -> str:
    return f"{x:.0e}".replace("e-0", "e-")  # 1e-5, 4e-3


def _scalar_list(rows: list[Measured]) -> str:
    seen: dict[str, list[str]] = {}
    for m in rows:
        for warning in m.scalar:
            seen.setdefault(m.case.kernel, [])
            if warning not in seen[m.case.kernel]:
                seen[m.case.kernel].append(warning)
    return "; ".join(f"{name} ({', '.join(w)})" for name, w in seen.items())


def report(rows: list[Measured], soc: SoC, size: str, repeat: int, markdown: bool) -> str:
    """The section: title, table, notes (plain text or Markdown)."""
    budget = soc.init_buffer_bytes
    table = [HEADER] + [row_cells(m, budget, markdown) for m in rows]
    bullets = [f"- {line}" for line in notes(rows, soc, size, repeat)]
    title = SECTION if markdown else SECTION.removeprefix("## ")
    return "\n".join([title, "", render(table, markdown), "", *bullets])


# ---------------------------------------------------------------------------- command line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (names and dtypes validated)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help='the "small" inputs of kernels.py (default: "full")')
    parser.add_argument("--soc", default=DEFAULT_SOC, help="SoC to compile for")
    parser.add_argument("--only", help="comma-separated kernel names (default: all)")
    parser.add_argument("--dtypes", default="float32,float16")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per row")
    parser.add_argument("--markdown", action="store_true", help="print a RESULTS.md section")
    args = parser.parse_args(argv)
    known = {c.kernel: c for c in CASES}
    names = args.only.split(",") if args.only else list(known)
    if bad := [n for n in names if n not in known]:
        parser.error(f"unknown kernel(s) {', '.join(bad)}; known: {', '.join(known)}")
    args.cases = [known[n] for n in names]
    args.dtypes = args.dtypes.split(",")
    if bad := [d for d in args.dtypes if d not in TOLERANCES]:
        parser.error(f"unsupported dtype(s) {', '.join(bad)}; use {', '.join(TOLERANCES)}")
    try:
        args.soc = get_soc(args.soc)
    except PyascError as exc:
        parser.error(str(exc).splitlines()[0])
    args.repeat = max(1, args.repeat)
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure every selected kernel and dtype, print the section; 1 if a row FAILed."""
    args = parse_args(argv)
    size = "small" if args.quick else "full"
    rows = []
    for case in args.cases:
        for dtype in args.dtypes:
            print(f"ascend_sim: {case.kernel} {dtype} ...", file=sys.stderr, flush=True)
            rows.append(measure(case, dtype, size, args.soc, args.repeat))
    print(report(rows, args.soc, size, args.repeat, args.markdown))
    return int(any(_check_cell(m) == "FAIL" for m in rows))


if __name__ == "__main__":
    faulthandler.enable()  # a crash inside the sim library still names the kernel's frame
    sys.exit(main())
