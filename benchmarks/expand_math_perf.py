"""Time a loop-level ``out[i] = f(x[i])`` over 16M float32 with and without expand-math.

    python benchmarks/expand_math_perf.py [exp tanh ...]

Without the pass the CPU backend calls ``llvm.exp``/libm per element (not vectorized
usefully); with it the loop is plain arithmetic that LLVM vectorizes.  Output goes
into a preallocated buffer, so page faults are not measured.  Median of 9 runs, one
thread; numpy's float32 ufunc (``out=``) alongside.  Not a test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
from pyasc.backend.base import Program
from pyasc.backend.llvm import LLVMBackend
from pyasc.ir import Builder
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import run_pipeline
from pyasc.ir.passes.mathlib.accuracy import OPS
from pyasc.ir.types import DYN, MemRefType, f32, index

N = 16 * 1024 * 1024
NUMPY: dict[str, Callable[..., object]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
}


def loop_module(name: str) -> ModuleOp:
    """``f(x, out)``: ``for i: out[i] = op(x[i])``."""
    buf = MemRefType((DYN,), f32)
    fn = FuncOp.empty("f", [buf, buf], [], ["x", "out"])
    b = Builder.at_end(fn.entry)
    x, out = fn.entry.args
    c0, c1 = (b.insert(arith.ConstantOp.new(v, index)).result for v in (0, 1))
    n = b.insert(mem.DimOp([x], [index], {"axis": 0})).result
    for_op = b.insert(loop.ForOp.empty(c0, n, c1, iv_name="i"))
    with b.at(for_op.body.blocks[0]):
        v = b.insert(mem.LoadOp([x, for_op.induction_var], [f32])).result
        y = b.insert(OPS[name].new(v)).result
        b.insert(mem.StoreOp([y, out, for_op.induction_var]))
        b.insert(loop.YieldOp([]))
    b.insert(func.ReturnOp([]))
    module = ModuleOp.empty()
    module.append(fn)
    return module


def kernel(name: str, expand: bool, fastmath: bool = False) -> Callable[..., object]:
    module = loop_module(name)
    if expand:
        run_pipeline(module, ["expand-math"], {"fastmath": fastmath})
    program = Program(module, "f", f"perf:{name}:{expand}:{fastmath}",
                      {"cache": False, "fastmath": fastmath})
    return LLVMBackend().compile(program)


def median_ms(fn: Callable[[], object], reps: int = 9) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def row(name: str, x: np.ndarray, out: np.ndarray) -> list[float]:
    """Times in ms: libm/intrinsic, expanded, expanded + fastmath, numpy."""
    cells = []
    for expand, fastmath in ((False, False), (True, False), (True, True)):
        k = kernel(name, expand, fastmath)
        cells.append(median_ms(lambda k=k: k([x, out])))
    ref = NUMPY.get(name)
    cells.append(median_ms(lambda: ref(x, out=out)) if ref else float("nan"))
    return cells


def main(names: list[str]) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, N).astype(np.float32)
    out = np.empty_like(x)
    print(f"{'':8s} {'libm/intrinsic':>15s} {'expanded':>10s} {'+fastmath':>10s} {'numpy':>8s}")
    for name in names or ["exp", "tanh"]:
        xin = np.abs(x) + np.float32(0.1) if name.startswith("log") else x
        a, b, c, d = row(name, xin, out)
        print(f"{name:8s} {a:13.1f}ms {b:8.1f}ms {c:8.1f}ms {d:6.1f}ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
