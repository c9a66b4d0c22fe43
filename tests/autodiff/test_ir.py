"""``pyasc.ir.autodiff.build_backward`` at the IR level: a hand-written IR function's
backward, verified and run by the IR interpreter; the rule table; the kernels of the
compiled backward of fused forward chains."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc.ops as O
from pyasc.ir.autodiff import RULES, build_backward
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith, math
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.parser import parse_module
from pyasc.ir.verifier import verify_module
from pyasc.testing import parametrize_targets

FORWARD = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<3x4xf64>, %b: memref<4xf64>):
    %0 = "mem.to_tensor"(%x) : (memref<3x4xf64>) -> tensor<3x4xf64>
    %1 = "mem.to_tensor"(%b) : (memref<4xf64>) -> tensor<4xf64>
    %2 = "arith.mul"(%0, %1) : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
    %3 = "math.exp"(%2) : (tensor<3x4xf64>) -> tensor<3x4xf64>
    %4 = "tensor.max"(%3) {axes = [1], keepdims = false} : (tensor<3x4xf64>) -> tensor<3xf64>
    %5 = "tensor.sum"(%4) {axes = [0], keepdims = false} : (tensor<3xf64>) -> f64
    "func.return"(%5) : (f64) -> ()
  }) {function_type = (memref<3x4xf64>, memref<4xf64>) -> f64, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def reference(x, b):
    return np.exp(x * b).max(axis=1).sum()


def test_backward_of_ir_text_runs_in_the_interpreter():
    fwd = parse_module(FORWARD).get("f")
    bwd = build_backward(fwd, "f_grad", [0, 1], [0, 1], with_value=True)
    module = ModuleOp.empty()
    module.append(bwd)
    verify_module(module)
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    value, gx, gb = Interpreter(module).call("f_grad", x, b)
    assert value == pytest.approx(reference(x, b))
    eps = 1e-6
    for arr, got in ((x, gx), (b, gb)):
        want = np.zeros_like(arr)
        for k in np.ndindex(arr.shape):
            arr[k] += eps
            hi = reference(x, b)
            arr[k] -= 2 * eps
            lo = reference(x, b)
            arr[k] += eps
            want[k] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_the_forward_is_left_untouched():
    module = parse_module(FORWARD)
    before = str(module)
    build_backward(module.get("f"), "f_grad", [0, 1, None], [0, 1],
                   dout=module.get("f").function_type.results[0])
    assert str(module) == before


def test_float_elementwise_ops_have_rules():
    missing = [cls.__name__ for cls in (*math.UNARY_FLOAT_OPS, math.AbsOp, math.PowOp,
                                        math.FmaOp, arith.AddOp, arith.SubOp, arith.MulOp,
                                        arith.DivOp, arith.NegOp, arith.MaxOp, arith.MinOp,
                                        arith.SelectOp, arith.CastOp)
               if cls not in RULES]
    assert missing == []


def _kernels(fn, *args, **kwargs) -> int:
    spec = fn._specialization(args, kwargs)[0]
    return sum(op.name == "fusion.group" for op in spec.program.module.walk())


X = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)


FUSED = [  # (op, args, backward kernels on cpu, on ascend-sim)
    (O.gelu, (X,), 1, 1), (O.gelu, (X, "tanh"), 1, 1), (O.silu, (X,), 1, 1),
    (O.softmax, (X, -1), 1, 1), (O.log_softmax, (X, -1), 1, 1),
    # the weight's and bias's gradients are column sums: a second kernel (on the device
    # one `cols` vector kernel for both since the column schedule; before, two)
    (O.layer_norm, (X, (128,), X[0], X[1]), 2, 2), (O.rms_norm, (X, (128,), X[0]), 2, 2)]


@pytest.mark.parametrize("fn,args,cpu,sim", FUSED)
def test_backward_of_a_fused_chain_is_fused(fn, args, cpu, sim):
    # the row sums of the reverse sweep keep their dims (a row-shaped adjoint, fused
    # back into the row's work), a row schedule takes the backward's chained row sums,
    # and values of the row statistics are recomputed per row rather than stored
    auto = fn._automatic_vjp()
    assert _kernels(fn, *args) == 1
    assert _kernels(auto, *args, **{auto.dout_name: X}) == cpu


@pytest.mark.parametrize("fn,args,cpu,sim", FUSED)
def test_backward_kernels_on_ascend(fn, args, cpu, sim):
    from pyasc.backend.ascendc import lower_program

    auto = fn._automatic_vjp()
    with warnings.catch_warnings():  # column sums run on the scalar unit: a warning
        warnings.simplefilter("ignore")
        program = lower_program(auto.specialize(*args, **{auto.dout_name: X}))
    assert len(program.kernel_names) == sim


S, D = X[:8, :16], X[8:16, :16]


@pytest.mark.filterwarnings("ignore:.*scalar AscendC")  # column sums: scalar unit
@parametrize_targets(("ascend-sim",))
@pytest.mark.parametrize("fn,args", [(O.softmax, (S, -1)), (O.log_softmax, (S, -1)),
                                     (O.layer_norm, (S, (16,), X[0, :16], X[1, :16])),
                                     (O.rms_norm, (S, (16,), X[2, :16]))])
def test_fused_backwards_on_the_device_match_the_cpu(monkeypatch, target, fn, args):
    want = fn.vjp(*args, D)
    monkeypatch.setenv("PYASC_TARGET", target)
    for got, w in zip(fn.vjp(*args, D), want, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)


def _loop_depths(loop_ir: str, name: str) -> list[int]:
    """The number of ``loop.for`` around each ``name`` op of a kernel's loop IR."""
    def depth(op) -> int:
        n, parent = 0, op.parent_op
        while parent is not None:
            n += parent.name == "loop.for"
            parent = parent.parent_op
        return n
    return [depth(op) for op in parse_module(loop_ir).walk() if op.name == name]


@pytest.mark.parametrize("cols", [128, 37])
def test_softmax_backward_divides_once_per_row_and_exponentiates_once(cols):
    # d(e / s) with s = sum(e) broadcast along the row: the division rule takes 1 / s once
    # per row (depth 1: the row loop) and multiplies, where it divided three times per
    # element; the quotient e / s itself is dead in the backward.  One exp per element.
    x, d = X[:, :cols], X[::-1, :cols]
    auto = O.softmax._automatic_vjp()
    loops = auto.kernel(x, -1, **{auto.dout_name: d}).loop_ir
    assert _loop_depths(loops, "arith.div") == [1]
    # exp is expanded in the loop IR: one ``math.round`` (its range reduction) per copy;
    # a row of 37 has a lane loop and a tail loop, each its own copy
    assert len(_loop_depths(loops, "math.round")) == (1 if cols % 16 == 0 else 2)
    np.testing.assert_allclose(O.softmax.vjp(x, -1, d)[0],
                               _softmax_vjp(x.astype(np.float64), d), rtol=2e-5, atol=1e-6)


def _softmax_vjp(x, d):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    return y * (d - (d * y).sum(axis=-1, keepdims=True))
