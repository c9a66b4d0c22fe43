"""The ``pyasc`` command line.

``pyasc demo`` compiles and runs the example operators in ``examples/`` (shipped in the
wheel as ``pyasc/examples``) on the default target, checks each against the same Python
function run on numpy, prints the time per call of both, and writes every kernel's
generated code (tensor IR, loop IR, LLVM IR and AscendC source) under an output folder
it names; then, when torch is installed, it trains the MLP of
``examples/training/train_mlp.py`` beside torch (:mod:`pyasc.tools.training_demo`).
``pyasc doctor`` checks this machine for each target
(:mod:`pyasc.tools.doctor`).  ``pyasc opt`` runs passes on an IR file and ``pyasc cache``
shows or clears the kernel cache (:mod:`pyasc.tools.commands`).  ``pyasc --help`` lists
the commands (:data:`COMMANDS`); ``pyasc <command> --help`` a command's options.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _default_examples() -> Path:
    """The example operators: ``examples/`` of a source checkout (editable installs), else
    the copy an installed wheel ships as ``pyasc/examples`` (see ``setup.py``)."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "examples"
    return checkout if (checkout / "relu.py").is_file() else here / "examples"


DEFAULT_EXAMPLES = _default_examples()


def _load_cases(folder: Path) -> list[dict[str, Any]]:
    """The ``DEMO_CASES`` of every example module in ``folder``, in file-name order."""
    cases: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"pyasc_example_{path.stem}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in getattr(module, "DEMO_CASES", []):
            cases.append({**case, "file": path.name})
    return cases


def _median_time(fn: Callable[[], object], repeat: int, budget: float = 1.0) -> float:
    """Median seconds per call over ``repeat`` runs (fewer if one run exceeds budget)."""
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if sum(times) > budget * 3 and len(times) >= 3:
            break
    return statistics.median(times)


def _agree(got: object, want: object, rtol: float) -> tuple[bool, float]:
    """Compare results (arrays, scalars or tuples); returns (ok, max abs error)."""
    if isinstance(want, tuple):
        pairs = [_agree(g, w, rtol) for g, w in zip(got, want, strict=True)]  # type: ignore
        return all(p[0] for p in pairs), max(p[1] for p in pairs)
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return False, float("inf")
    err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)), initial=0.0))
    return bool(np.allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)), err


def _write_code(fn: Any, args: tuple, folder: Path) -> list[str]:
    """Write the kernel's generated code; returns the names of the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    call = fn.bind(*args)  # the call's arguments apart from the options below
    (folder / "tensor.ir").write_text(call.ir() + "\n")
    written.append("tensor.ir")
    kernel = call.kernel(target="cpu")
    for name, attr in (("loop.ir", "loop_ir"), ("kernel.ll", "llvm_ir")):
        (folder / name).write_text(getattr(kernel, attr) + "\n")
        written.append(name)
    if getattr(call, "ascendc", None) is not None:
        (folder / "kernel_ascendc.cpp").write_text(_ascendc_text(call))
        written.append("kernel_ascendc.cpp")
    return written


def _ascendc_text(call: Any) -> str:
    """The call's AscendC; for a function computing in float64 (numpy's rules, which no
    AI Core computes: E50041) the float32 kernel ``device_float64="demote"`` gives,
    headed by a comment saying so."""
    from pyasc.backend.ascendc.fit import DeviceFloat64Error
    from pyasc.errors import DeviceFloat64Warning

    try:
        return call.ascendc()
    except DeviceFloat64Error as exc:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeviceFloat64Warning)
            source = call.ascendc(device_float64="demote")
        first = str(exc).splitlines()[0]
        return (f"// pyasc demo: this function computes in float64, which no AI Core does\n"
                f"// ({first});\n// below, the float32 kernel of "
                f"@hybrid(device_float64='demote').\n{source}")


def _run_case(case: dict[str, Any], size: str, repeat: int, out: Path) -> dict[str, Any]:
    fn, rng = case["fn"], np.random.default_rng(0)
    args = case["inputs"](rng, size)
    start = time.perf_counter()
    got = fn(*args)  # compiles on first call
    first = time.perf_counter() - start
    reference = case.get("reference") or fn.__wrapped__  # (an AscendOperator names one)
    want = reference(*args)
    ok, err = _agree(got, want, case.get("rtol", 1e-6))
    files = _write_code(fn, args, out / case["name"])
    return {
        "name": case["name"], "ok": ok, "err": err, "first": first,
        "pyasc": _median_time(lambda: fn(*args), repeat),
        "numpy": _median_time(lambda: reference(*args), repeat),
        "files": files,
    }


def _print_table(rows: Sequence[dict[str, Any]], target: str, out: Path) -> None:
    head = f"{'operator':<20} {'check':<6} {'max err':>9} {'compile':>9} " \
           f"{'pyasc':>11} {'numpy':>11} {'speedup':>8}"
    print(f"target: {target}    times are medians per call\n{head}\n{'-' * len(head)}")
    for r in rows:
        if "error" in r:
            print(f"{r['name']:<20} FAILED {r['error']}")
            continue
        print(f"{r['name']:<20} {'ok' if r['ok'] else 'WRONG':<6} {r['err']:>9.2e} "
              f"{r['first'] * 1e3:>7.0f}ms {_fmt(r['pyasc']):>11} {_fmt(r['numpy']):>11} "
              f"{r['numpy'] / r['pyasc']:>7.1f}x")
    print(f"\ngenerated code written under {out.resolve()}/<operator>/")


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def demo(argv: Sequence[str]) -> int:
    """``pyasc demo``: run the examples; returns the exit status (1 if any check fails)."""
    parser = argparse.ArgumentParser(prog="pyasc demo", description=demo.__doc__)
    parser.add_argument("--examples", type=Path, default=DEFAULT_EXAMPLES,
                        help="folder of example modules defining DEMO_CASES")
    parser.add_argument("--out", type=Path, default=Path("pyasc-demo-out"),
                        help="where generated code is written (default: ./pyasc-demo-out)")
    parser.add_argument("--size", choices=("small", "default"), default="default")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated operator names "
                        "(train_mlp: the MLP training)")
    opts = parser.parse_args(argv)
    if not opts.examples.is_dir():
        print(f"pyasc demo: no examples folder at {opts.examples}; pass --examples DIR "
              "(a source checkout has examples/, an installed wheel pyasc/examples/)",
              file=sys.stderr)
        return 2
    wanted = {n for n in opts.only.split(",") if n}
    cases = _load_cases(opts.examples)
    from pyasc.tools import training_demo

    unknown = sorted(wanted - {c["name"] for c in cases} - {training_demo.NAME})
    if unknown:
        print(f"pyasc demo: unknown operator {', '.join(map(repr, unknown))} in --only; the "
              f"operators are: {', '.join(sorted(c['name'] for c in cases))}", file=sys.stderr)
        return 2
    rows = []
    for case in cases:
        if wanted and case["name"] not in wanted:
            continue
        try:
            rows.append(_run_case(case, opts.size, opts.repeat, opts.out))
        except Exception as exc:  # report and keep going: one broken example is a finding
            rows.append({"name": case["name"], "error": f"{type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}"})
    if rows:
        _print_table(rows, _default_target(), opts.out)
    trained = True  # (the MLP training: after the operators, or alone with --only)
    if not wanted or training_demo.NAME in wanted:
        trained = training_demo.run(opts.examples, opts.size)
    ok = all(r.get("ok") for r in rows) and trained
    return 0 if (rows or training_demo.NAME in wanted) and ok else 1


def _default_target() -> str:
    from pyasc.jit.options import make_options, resolve_target

    return resolve_target(make_options({}))


def doctor(argv: Sequence[str]) -> int:
    """``pyasc doctor``: the report of :mod:`pyasc.tools.doctor`; returns its exit status."""
    from pyasc.tools.doctor import main as doctor_main

    return doctor_main(argv)


def opt(argv: Sequence[str]) -> int:
    """``pyasc opt``: passes on an IR file (:mod:`pyasc.tools.commands`)."""
    from pyasc.tools.commands import opt as run

    return run(argv)


def compile_(argv: Sequence[str]) -> int:
    """``pyasc compile``: generated code without running (:mod:`pyasc.tools.commands`)."""
    from pyasc.tools.commands import compile_ as run

    return run(argv)


def cache(argv: Sequence[str]) -> int:
    """``pyasc cache``: the on-disk kernel cache (:mod:`pyasc.tools.commands`)."""
    from pyasc.tools.commands import cache as run

    return run(argv)


COMMANDS: dict[str, tuple[Callable[[Sequence[str]], int], str]] = {
    "demo": (demo, "compile the example operators, check them against numpy, time them "
                   "and write their generated code"),
    "doctor": (doctor, "check Python, LLVM, the C++ compiler, CANN, AscendCL and the NPU "
                       "driver; say how to fix what a target needs"),
    "opt": (opt, "run IR passes on an IR file and print the result"),
    "compile": (compile_, "print the IR, LLVM IR, assembly or AscendC of FILE.py:NAME for "
                          "the given argument types, running nothing"),
    "cache": (cache, "the on-disk kernel cache: info, list or clear"),
}
"""Subcommands: name -> (function taking the remaining arguments, one-line summary)."""


def usage() -> str:
    """``pyasc --help``: the commands and what each does."""
    width = max(map(len, COMMANDS))
    lines = ["usage: pyasc <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "'pyasc <command> --help' describes the options of a command."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyasc`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if not argv or argv[0] not in COMMANDS:
        problem = f"unknown command {argv[0]!r}" if argv else "no command given"
        print(f"pyasc: {problem}\n\n{usage()}", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]][0](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
