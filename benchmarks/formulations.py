"""The formulation matrix (issue 17): one computation written the ordinary ways users
write it, each timed single-threaded against numpy, Numba and hand-written C.

    python benchmarks/formulations.py                  # every family, full sizes
    python benchmarks/formulations.py --only softmax --repeat 21 --small

Families: softmax, layernorm, squared-error sum, direct convolution, tanh, gelu, NMS,
bilateral filter, FIR filter (15 and 151 taps).
Formulations: whole-array numpy style, a per-row Python loop over slices
(``np.empty_like`` output), explicit scalar loops with scalar accumulators (``np.empty``
output), ``+=`` into the output, writes into a preallocated output argument
(``out[...] = ...``, ``out[i] = ...``: :class:`IntoOut`, the array made once outside the
timing), and a few variants.  Columns:

* pyasc: the formulation under ``@pyasc.hybrid`` with ``PYASC_NUM_THREADS=1``;
* numpy: the family's whole-array formulation run by numpy (scalar loops under CPython
  would be seconds, so the numpy column is numpy's own best);
* Numba: the same formulation under ``numba.njit`` (single thread), if Numba imports;
* C: the family's hand-written kernel in ``benchmarks/c`` (``gcc -O3 -march=native``,
  strict IEEE) and the same with ``-ffast-math`` (which lets gcc call libmvec);
* C same order: for the scalar-loop formulations whose sum is one sequential float32
  accumulator, the C written in that same order (strict IEEE keeps it, so no compiler may
  vectorize the chain without changing the result; the C column sums in 8 lanes, a
  different order and a different result).

Each variant's first call (compiling) is untimed; then all variants of a family are timed
round-robin, ``--repeat`` repetitions of enough calls to last ``--min-time``.  Reported:
the median over repetitions of the **per-thread CPU time** of a call
(``time.thread_time_ns``; the machine is shared and noisy, so this is the figure to
quote) and, beside it, the median wall time (``perf_counter_ns``).  Ratios are of CPU
times.  Every result is checked against the numpy formulation first.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

os.environ["PYASC_NUM_THREADS"] = "1"  # read at every call; set before pyasc starts a pool

import numpy as np  # noqa: E402

import c_impl  # noqa: E402
import kernels  # noqa: E402
from formulation_kernels import (  # noqa: E402
    TANH_C,
    bilateral_scalar,
    bilateral_shifted,
    conv_accumulator,
    conv_into_output,
    conv_slices,
    fir_empty,
    fir_float64,
    fir_slices,
    gelu_rows,
    gelu_whole,
    layernorm_out_rows,
    layernorm_out_whole,
    layernorm_rows,
    layernorm_scalar,
    layernorm_whole,
    nms_mask,
    nms_slices,
    softmax_out_rows,
    softmax_out_whole,
    softmax_rows,
    softmax_scalar,
    sqdiff_scalar,
    sqdiff_temp,
    sqdiff_whole,
    tanh_rows,
    tanh_whole,
)


@dataclass
class Family:
    """A computation: its formulations, its numpy reference, its C kernel, its inputs."""

    name: str
    formulations: dict[str, Callable]
    numpy: Callable
    c_name: str | None
    inputs: Callable[[bool], tuple]
    rtol: float = 1e-4
    c_call: Callable | None = None  # adapts the C kernel's signature, if needed
    same_order: tuple[str, ...] = ()  # formulations the "same order" C kernel matches


@dataclass(frozen=True)
class IntoOut:
    """A formulation ``fn(*inputs, out)`` that writes its result into ``out``, an array
    of the result's shape and dtype preallocated once (as a caller reusing a buffer does)."""

    fn: Callable


def _into(compiled: Callable, want: object) -> Callable:
    """``compiled(*inputs, out)`` as a function of the inputs returning ``out``."""
    out = np.empty_like(np.asarray(want))

    def call(*args: object) -> np.ndarray:
        compiled(*args, out)
        return out
    return call


def _rand(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


FAMILIES = [
    Family("softmax", {"whole array": kernels.softmax, "rows loop": softmax_rows,
                       "scalar loops": softmax_scalar,
                       "`out[...] =` whole array": IntoOut(softmax_out_whole),
                       "`out[i] =` rows loop": IntoOut(softmax_out_rows)},
           kernels.softmax, "softmax",
           lambda small: (_rand((256, 512) if small else (2048, 1024), 1),),
           same_order=("scalar loops",)),
    Family("layernorm", {"whole array": layernorm_whole, "rows loop, np.empty_like":
                         layernorm_rows, "scalar loops, np.empty": layernorm_scalar,
                         "`out[...] =` whole array": IntoOut(layernorm_out_whole),
                         "`out[i] =` rows loop": IntoOut(layernorm_out_rows)},
           layernorm_whole, "layernorm",
           lambda small: (_rand((256, 512) if small else (2048, 1024), 2),
                          _rand((512 if small else 1024,), 3),
                          _rand((512 if small else 1024,), 4)),
           same_order=("scalar loops, np.empty",)),
    Family("squared-error sum", {"whole array": sqdiff_whole, "temporary": sqdiff_temp,
                                 "scalar loop": sqdiff_scalar}, sqdiff_whole,
           "sq_error_loss", lambda small: (_rand((1 << 16 if small else 1 << 23,), 5),
                                           _rand((1 << 16 if small else 1 << 23,), 6)),
           rtol=5e-2,  # a sequential float32 sum of 8M terms is that far off
           same_order=("scalar loop",)),
    Family("direct convolution", {"window slices (numpy style)": conv_slices,
                                  "scalar accumulator": conv_accumulator,
                                  "+= into the output": conv_into_output},
           conv_slices, "conv2d",
           lambda small: (_rand((1, 8, 34, 34) if small else (1, 16, 128, 128), 9),
                          _rand((16, 8, 3, 3) if small else (32, 16, 3, 3), 10, 0.1)),
           rtol=1e-3),
    Family("nms", {"break at the first overlap": kernels.nms, "keep mask, guarded loads":
                   nms_mask, "slices against later boxes": nms_slices}, nms_slices, "nms",
           lambda small: kernels.make_inputs("nms", "small" if small else "full"), rtol=0.0),
    Family("bilateral filter", {"window slices (numpy style)": kernels.bilateral_filter,
                                "scalar loops": bilateral_scalar,
                                "shifted planes": bilateral_shifted},
           kernels.bilateral_filter, "bilateral_filter",
           lambda small: kernels.make_inputs("bilateral_filter", "small" if small else "full"),
           rtol=1e-5),
    *(Family(f"FIR filter, {taps} taps", {"window slices (numpy style)": fir_slices,
                                           "scalar accumulator, `np.empty`": fir_empty,
                                           "`acc = 0.0` (float32 sum)": fir_float64},
             fir_slices, "fir",
             lambda small, taps=taps: (_rand((1 << 14 if small else 1 << 22,), 11),
                                       _rand((taps,), 12, 0.1)), rtol=1e-4)
      for taps in (15, 151)),
    Family("tanh", {"whole array": tanh_whole, "rows loop": tanh_rows}, tanh_whole,
           "tanh_rows", lambda small: (_rand((64, 1024) if small else (1024, 4096), 7, 3.0),)),
    Family("gelu (tanh)", {"whole array": gelu_whole, "rows loop": gelu_rows}, gelu_whole,
           "gelu_tanh",
           lambda small: (_rand((64, 1024) if small else (1024, 4096), 8, 3.0),)),
]


# ---------------------------------------------------------------------- timing


@dataclass
class Timed:
    """Per-call medians of one variant (seconds), or why it has none."""

    label: str
    fn: Callable
    calls: int = 1
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def cpu_ms(self) -> float | None:
        return statistics.median(self.cpu) * 1e3 if self.cpu else None

    @property
    def wall_ms(self) -> float | None:
        return statistics.median(self.wall) * 1e3 if self.wall else None


def _prepare(t: Timed, args: tuple, want: object, rtol: float, min_time: float) -> None:
    try:
        got = t.fn(*args)  # compiles
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=rtol, atol=rtol)
        start = time.perf_counter()
        t.fn(*args)
        once = max(time.perf_counter() - start, 1e-7)
        t.calls = max(1, int(min_time / once))
    except Exception as exc:  # a variant that fails is reported, not fatal
        t.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"


def _time(variants: list[Timed], args: tuple, repeat: int) -> None:
    for _ in range(repeat):
        for t in variants:
            if t.error:
                continue
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(t.calls):
                t.fn(*args)
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            t.cpu.append((c1 - c0) * 1e-9 / t.calls)
            t.wall.append((w1 - w0) * 1e-9 / t.calls)


# ---------------------------------------------------------------------- the matrix


def _tools(pyasc_only: bool) -> tuple[object, object | None, tuple]:
    import pyasc

    if pyasc_only:
        return pyasc, None, ()
    try:
        import numba
    except Exception:  # an optional column
        numba = None
    libs = tuple(_CLibs(fast) for fast in (False, True))
    return pyasc, numba, libs


class _CLibs:
    """``benchmarks/c`` (``c_impl.CLibrary``) plus this script's tanh kernel."""

    def __init__(self, fastmath: bool) -> None:
        import ctypes
        import tempfile
        from pathlib import Path

        self.lib = c_impl.CLibrary(fastmath)
        self._tmp = tempfile.TemporaryDirectory(prefix="pyasc-formulations-")
        src, so = Path(self._tmp.name) / "tanh.c", Path(self._tmp.name) / "tanh.so"
        src.write_text(TANH_C)
        c_impl.compile_shared([src], so, self.lib.flags)
        self.tanh = ctypes.CDLL(str(so)).tanh_rows
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        self.tanh.restype, self.tanh.argtypes = None, [p, p, i64, i64]

    def kernel(self, name: str, symbol: str | None = None) -> Callable:
        if name == "tanh_rows":
            return lambda x: c_impl.WRAPPERS["softmax"](self.tanh, x)  # (x, out, rows, cols)
        return self.lib.kernel(name, symbol)


def run_family(fam: Family, small: bool, repeat: int, min_time: float, tools) -> list[str]:
    pyasc, numba, libs = tools
    args = fam.inputs(small)
    want = fam.numpy(*args)
    variants: dict[str, Timed] = {"numpy": Timed("numpy", fam.numpy)}
    if fam.c_name and libs:
        c_strict, c_fast = libs
        variants["C"] = Timed("C", c_strict.kernel(fam.c_name))
        variants["C fast"] = Timed("C fast", c_fast.kernel(fam.c_name))
        symbol = c_impl.EXTRA.get(fam.c_name, {}).get("same order")
        if fam.same_order and symbol:
            variants["C same"] = Timed("C same", c_strict.kernel(fam.c_name, symbol))
    for label, fn in fam.formulations.items():
        wrap, py = (lambda f: _into(f, want), fn.fn) if isinstance(fn, IntoOut) \
            else (lambda f: f, fn)
        variants[f"pyasc {label}"] = Timed(label, wrap(pyasc.hybrid(py)))
        if numba is not None:
            variants[f"numba {label}"] = Timed(label, wrap(numba.njit(py)))
    if fam.c_name == "gelu_tanh" and libs:  # the C kernel is 1-D
        for key in ("C", "C fast"):
            flat = variants[key].fn
            variants[key].fn = lambda x, f=flat: f(x.reshape(-1)).reshape(x.shape)
    for t in variants.values():
        _prepare(t, args, want, fam.rtol, min_time)
    _time(list(variants.values()), args, repeat)
    return _rows(fam, variants)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}"


def _rows(fam: Family, v: dict[str, Timed]) -> list[str]:
    c, fast, npy, same = (v.get(k) for k in ("C", "C fast", "numpy", "C same"))
    rows = []
    for label in fam.formulations:
        p, nb = v[f"pyasc {label}"], v.get(f"numba {label}")
        seq = same if same is not None and label in fam.same_order else None
        err = "; ".join(e[:40] for e in (p.error, nb.error if nb else None) if e)
        rows.append(
            f"| {fam.name} | {label} | {_fmt(p.cpu_ms)} ({_fmt(p.wall_ms)}) | "
            f"{_fmt(npy.cpu_ms)} | {_fmt(nb.cpu_ms) if nb else '-'} | "
            f"{_fmt(c.cpu_ms) if c else '-'} | {_fmt(fast.cpu_ms) if fast else '-'} | "
            f"{_ratio(p.cpu_ms, c.cpu_ms) if c else '-'} | {_ratio(p.cpu_ms, npy.cpu_ms)} | "
            f"{_ratio(p.cpu_ms, nb.cpu_ms) if nb else '-'} | "
            f"{_fmt(seq.cpu_ms) if seq else '-'} | {_ratio(p.cpu_ms, seq.cpu_ms) if seq else '-'}"
            f" | {err} |")
    return rows


HEADER = ("| family | formulation | pyasc ms CPU (wall) | numpy | Numba | C | C -ffast-math | "
          "pyasc/C | pyasc/numpy | pyasc/Numba | C same order | pyasc/C same order | errors |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated family name prefixes")
    parser.add_argument("--small", action="store_true", help="small inputs (a quick run)")
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--min-time", type=float, default=0.05)
    parser.add_argument("--pyasc-only", action="store_true",
                        help="no Numba or C columns (comparing pyasc builds)")
    args = parser.parse_args()
    chosen = [f for f in FAMILIES if not args.only or
              any(f.name.startswith(p) for p in args.only.split(","))]
    tools = _tools(args.pyasc_only)
    print(f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"{c_impl.gcc_version()}; PYASC_NUM_THREADS=1; medians of per-call CPU time "
          f"(wall in parentheses for pyasc), ms; pyasc from {tools[0].__file__}")
    print(HEADER)
    for fam in chosen:
        for row in run_family(fam, args.small, args.repeat, args.min_time, tools):
            print(row, flush=True)


if __name__ == "__main__":
    main()
