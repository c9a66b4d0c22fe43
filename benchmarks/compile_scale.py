"""Compile time and peak memory of generated N-statement programs, per N and per stage.

    python benchmarks/compile_scale.py [--sizes 100,200,...] [--shapes chain,fresh,...]
                                       [--targets cpu,ascendc] [--configs default,nofusion]
                                       [--timeout 600] [--markdown]

Every (shape, N, target, config) compiles cold in its own subprocess (no disk cache) under
the default recursion limit; times are CPU seconds of the compiling process
(``time.process_time``: the machine is shared, CPU time is what the compile costs).
``cpu`` is ``fn.kernel(x, y)`` (frontend, default passes,
loop passes, LLVM IR generation, LLVM -O3 and object emission); ``ascendc`` is
``fn.ascendc(x, y)`` (frontend, default passes, AscendC source generation, no g++).
``nofusion`` sets ``PYASC_DISABLE_PASSES=fusion``.  Stage times are exclusive (a stage's
time excludes the stages it calls); ``peak MB`` is the process's peak RSS growth over the
compile (LLVM's own memory included).  Program shapes (``SHAPES``): ``chain`` is
``x = x * 1.0001 + y`` N times; ``fresh`` gives every statement a new name;
``reduce``/``rows`` make every 4th statement a full / row reduction; ``slices`` every
3rd ``x = x + x[::-1] * 0.5``; ``loop`` every 5th a Python loop with an ``if`` inside;
``if`` every 5th an if/else on an element.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SHAPES: dict[str, Callable[[int], list[str]]] = {
    "chain": lambda i: ["x = x * 1.0001 + y"],
    "fresh": lambda i: [f"t{i + 1} = t{i} * 1.0001 + y"],
    "reduce": lambda i: ["x = x * 1.0001 + y"] if i % 4 else ["x = x - np.sum(x) * 0.0001"],
    "rows": lambda i: ["x = x * 1.0001 + y"] if i % 4 else
    ["x = x - np.max(x, axis=-1, keepdims=True) * 0.5"],
    "slices": lambda i: ["x = x * 1.0001 + y"] if i % 3 else ["x = x + x[::-1] * 0.5"],
    "loop": lambda i: ["x = x * 1.0001 + y"] if i % 5 else
    ["for k in range(2):", "    x = x * 0.999 + y", "    if k > 0:", "        x = x - y * 0.5"],
    "if": lambda i: ["x = x * 1.0001 + y"] if i % 5 else
    ["if x[0] > y[0]:", "    x = x - y * 0.5", "else:", "    x = x + y * 0.25"],
}
SIZES = (100, 200, 500, 1000, 2000, 5000, 10000)
STAGE_ORDER = ("frontend", "verify", "canonicalize", "cse", "hoist-checks", "dce", "fusion",
               "lower-to-loops", "expand-math", "layout", "memplan", "interrupt-poll",
               "llvm-gen", "llvm-O3", "ascendc-gen", "other")


def program_source(shape: str, n: int) -> str:
    """``def f(x, y)`` of ``n`` generated statements of ``shape``."""
    lines = ["import numpy as np", "", "", "def f(x, y):"]
    if shape == "fresh":
        lines.append("    t0 = x")
    for i in range(n):
        lines += ["    " + s for s in SHAPES[shape](i)]
    lines.append(f"    return t{n}" if shape == "fresh" else "    return x")
    return "\n".join(lines) + "\n"


def load(shape: str, n: int, directory: str) -> Callable:
    """The generated function, imported from a real file (pyasc reads it with inspect)."""
    path = Path(directory) / f"scale_{shape}_{n}.py"
    path.write_text(program_source(shape, n))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


class StageTimer:
    """Exclusive CPU time per stage of wrapped functions (nested calls subtracted)."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._stack: list[float] = []  # time spent in children, per open stage

    def wrap(self, owner: object, attr: str, stage: str | Callable[..., str]) -> None:
        original = getattr(owner, attr)

        def timed(*args, **kwargs):
            name = stage(*args) if callable(stage) else stage
            self._stack.append(0.0)
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                children = self._stack.pop()
                self.times[name] = self.times.get(name, 0.0) + spent - children
                if self._stack:
                    self._stack[-1] += spent

        setattr(owner, attr, timed)


def instrument(timer: StageTimer) -> None:
    """Wrap the frontend, every pass, the verifier and the backends' stages."""
    from pyasc.backend.ascendc import codegen
    from pyasc.backend.llvm import generate, jit
    from pyasc.frontend import compiler
    from pyasc.ir.passes import PASS_REGISTRY, manager

    timer.wrap(compiler, "build_module", "frontend")
    timer.wrap(manager, "verify_module", "verify")
    for cls in {type(p) if not isinstance(p, type) else p for p in PASS_REGISTRY.values()}:
        timer.wrap(cls, "run", lambda self, *a: self.name)
    timer.wrap(generate, "generate", "llvm-gen")
    timer.wrap(jit, "compile_ir", "llvm-O3")
    timer.wrap(codegen, "lower_program", "ascendc-gen")


def measure_one(shape: str, n: int, target: str) -> dict:
    """Compile one program cold in this process; stage times and peak RSS growth."""
    import numpy as np
    from pyasc import hybrid

    timer = StageTimer()
    instrument(timer)
    with tempfile.TemporaryDirectory() as tmp:
        fn = hybrid(load(shape, n, tmp), cache=False)
        x = np.ones((3, 5) if shape == "rows" else 100, np.float32)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.process_time()
        if target == "cpu":
            fn.kernel(x, x, target="cpu")
        else:
            fn.ascendc(x, x)
        total = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    stages = dict(timer.times)
    stages["other"] = max(0.0, total - sum(stages.values()))
    return {"total": total, "peak_mb": peak / 1024, "stages": stages}


def run_child(shape: str, n: int, target: str, config: str, timeout: float) -> dict:
    env = dict(os.environ)
    if config == "nofusion":
        env["PYASC_DISABLE_PASSES"] = "fusion"
    cmd = [sys.executable, __file__, "--one", shape, str(n), target]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s"}
    if out.returncode:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:60]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def top_stages(stages: dict[str, float], k: int = 3) -> str:
    ranked = sorted(stages.items(), key=lambda kv: -kv[1])[:k]
    return ", ".join(f"{name} {t:.2f}" for name, t in ranked)


def report(rows: list[tuple[str, int, str, str, dict]], markdown: bool) -> None:
    head = ("shape", "N", "target", "config", "CPU s", "peak MB", "CPU s per 1000 stmts",
            "largest stages (s)")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for shape, n, target, config, r in rows:
        if "error" in r:
            cells = [shape, str(n), target, config, r["error"], "", "", ""]
        else:
            cells = [shape, str(n), target, config, f"{r['total']:.2f}", f"{r['peak_mb']:.0f}",
                     f"{r['total'] / n * 1000:.2f}", top_stages(r["stages"])]
        if markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print(" ".join(f"{c:>10s}" for c in cells[:7]), cells[7])
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--shapes", default="chain")
    parser.add_argument("--targets", default="cpu,ascendc")
    parser.add_argument("--configs", default="default,nofusion")
    parser.add_argument("--timeout", type=float, default=600.0, help="per compile, seconds")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--one", nargs=3, metavar=("SHAPE", "N", "TARGET"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        shape, n, target = args.one
        print(json.dumps(measure_one(shape, int(n), target)))
        return
    rows = []
    for shape in args.shapes.split(","):
        for target in args.targets.split(","):
            for config in args.configs.split(","):
                for n in map(int, args.sizes.split(",")):
                    r = run_child(shape, n, target, config, args.timeout)
                    rows.append((shape, n, target, config, r))
                    if not args.markdown:
                        report(rows[-1:], False)
    if args.markdown:
        report(rows, True)


if __name__ == "__main__":
    main()
