"""The CPU backend on ``expand-math`` output: bit-identical to the interpreter, and the
loops vectorize with no libm calls left; plus the ``arith.bitcast`` emitter."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmkit import both, compile_ir, elementwise

from pyasc.backend.base import Program
from pyasc.backend.llvm.backend import build
from pyasc.ir import Builder
from pyasc.ir.ops import arith, func, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import run_pipeline
from pyasc.ir.passes.mathlib.accuracy import OPS, SPECIAL_VALUES, expanded, unary
from pyasc.ir.types import DYN, MemRefType, TensorType, f16, f32, f64, i16, i32, i64


def _expanded_kernel_module(name: str, fma: bool = False):
    module = elementwise([f32], lambda b, xs: [b.insert(OPS[name].new(xs[0])).result])
    return run_pipeline(module, ["expand-math"], {"fma": fma})


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    near = rng.uniform(-12, 12, 50_000).astype(np.float32)
    return np.concatenate([bits.view(np.float32), near, SPECIAL_VALUES])


@pytest.mark.parametrize("fma", [False, True], ids=["mul-add", "fma"])
@pytest.mark.parametrize("name", list(OPS))
def test_compiled_expansion_matches_interpreter_bitwise(name, fma):
    """The interpreter's ``math.fma`` (one rounding, ``semantics._fma``) is the host's."""
    x = _inputs()
    module = _expanded_kernel_module(name, fma)
    assert ('"math.fma"' in str(module)) == fma
    got = both(compile_ir(module), [x])[0]
    want = expanded(unary(OPS[name]), fma=fma)(x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.int32), want[~nan].view(np.int32))


def test_tensor_level_expansion_lowers_and_compiles():
    """Expanded before ``lower-to-loops`` (one loop per op unless fused): same bits."""
    t = TensorType((DYN,), f32)
    fn = FuncOp.empty("f", [MemRefType((DYN,), f32)], [t], ["x"])
    b = Builder.at_end(fn.entry)
    x = b.insert(mem.ToTensorOp([fn.entry.args[0]], [t])).result
    b.insert(func.ReturnOp([b.insert(OPS["tanh"].new(x)).result]))
    module = ModuleOp.empty()
    module.append(fn)
    run_pipeline(module, ["expand-math"])
    xs = np.linspace(-6, 6, 4001, dtype=np.float32)
    got = both(compile_ir(module), [xs])[0]
    np.testing.assert_array_equal(got, expanded(unary(OPS["tanh"]))(xs))


@pytest.mark.parametrize("name", ["exp", "tanh", "log", "erf", "sin", "atan"])
def test_expanded_loop_vectorizes_without_calls(name):
    module = _expanded_kernel_module(name)
    llvm_ir = build(Program(module, "f", f"t:{name}", {"cache": False})).llvm_ir
    assert re.search(r"<(8|16) x float>", llvm_ir)
    calls = set(re.findall(r"call [^@]*@([\w.]+)", llvm_ir))
    assert all(c.startswith(("llvm.", "pyasc.")) for c in calls), calls
    assert not any(c.startswith(("llvm.exp", "llvm.log", "llvm.sin", "llvm.cos"))
                   for c in calls), calls


@pytest.mark.parametrize("src, dst", [(f32, i32), (i32, f32), (f64, i64), (i64, f64),
                                      (f16, i16), (i16, f16)])
def test_bitcast_emitter(src, dst):
    module = elementwise([src], lambda b, xs: [b.insert(arith.BitcastOp.new(xs[0], dst))
                                               .result])
    raw = f"u{src.to_numpy().itemsize}"  # unsigned int dtype of the same width
    x = np.array([0, 1, -1, 0x3C00, 0x7C00, 0x7FF, 1234]).astype(raw).view(src.to_numpy())
    got = both(compile_ir(module), [x])[0]
    want = x.view(dst.to_numpy())
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(raw), want.view(raw))


@pytest.mark.parametrize("name", ["exp", "log", "log10", "cos"])
def test_fastmath_keeps_the_polynomial_order(name):
    """Under fastmath the expansion drops its special-value selects but its ops carry
    ``strict``, so the backend's reassociation cannot reorder the polynomial: the compiled
    code stays bit-identical to the interpreter on ordinary inputs."""
    module = elementwise([f32], lambda b, xs: [b.insert(OPS[name].new(xs[0])).result])
    run_pipeline(module, ["expand-math"], {"fastmath": True})
    assert '{strict = true}' in str(module)
    rng = np.random.default_rng(3)
    lo, hi = {"exp": (-80, 80), "log": (1e-30, 1e30), "log10": (1e-30, 1e30),
              "cos": (-7000, 7000)}[name]
    x = (rng.uniform(lo, hi, 100_000) if name in ("exp", "cos")
         else np.exp(rng.uniform(np.log(lo), np.log(hi), 100_000))).astype(np.float32)
    want = expanded(unary(OPS[name]), fastmath=True)(x)  # tensor level: vectorized numpy
    got = both(compile_ir(module, fastmath=True), [x])[0]
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
