"""Lowering of fused groups (``lower_group``): one loop nest per group, no buffer but
the outputs (and the one stated row buffer), results equal to the tensor-level
interpreter on random inputs, for static and dynamic sizes, views (strided, negative
steps), sizes 0 and 1, f16, f64 and integers."""

from __future__ import annotations

from pathlib import Path

import loops_harness as H
import numpy as np
import pytest
from fusion_dags import dags
from hypothesis import HealthCheck, given, settings
from test_fusion import random_inputs

from pyasc.ir import parse_module
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FusionGroupOp, ModuleOp
from pyasc.ir.passes import run_pipeline
from pyasc.ir.types import TensorType, f16

TEXT = Path(__file__).parent / "text"
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def fused(module: ModuleOp) -> ModuleOp:
    copy = parse_module(str(module))
    run_pipeline(copy, ["dce", "fusion"])
    return copy


def group_outputs(module: ModuleOp) -> int:
    return sum(isinstance(r.type, TensorType) for op in module.walk()
               if isinstance(op, FusionGroupOp) for r in op.result_values)


def check(module: ModuleOp, args: list, rtol: float = 0.0) -> tuple[ModuleOp, ModuleOp]:
    """Fuse, lower, and compare the loop-level interpreter with the tensor-level one
    (results, and arguments written in place); no buffer may leak."""
    f = fused(module)
    name = next(iter(f.functions)).sym_name
    before, after, a0, a1, lowered = H.run_both(f, args, name)
    assert len(before) == len(after)
    for x, y in zip(before, after, strict=True):
        H.assert_same(x, y, rtol)
    for x, y in zip(a0, a1, strict=True):
        if isinstance(x, np.ndarray):
            H.assert_same(x, y)
    return f, lowered


def rtol_of(args: list) -> float:
    kinds = [a.dtype.name for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    return max((RTOL[k] for k in kinds), default=0.0)


# ---------------------------------------------------------------------------- samples

SAMPLE_ALLOCS = {  # allocations after lowering: the group outputs (+ user buffers)
    "fusion_elementwise_chain": 1, "fusion_broadcast": 2, "fusion_softmax": 1,
    "fusion_layernorm": 1, "fusion_horizontal": 2, "fusion_reductions": 3,
    "fusion_multi_consumer_recompute": 2, "fusion_multi_consumer_materialize": 3,
    "fusion_access": 3, "fusion_loop_body": 2, "fusion_scope": 3,
}


def lane_buffers(lowered) -> list:
    """The lane buffers of float sums (``lower_group_reduce``)."""
    return [op for op in lowered.walk() if op.name == "mem.alloc" and
            op.result.name_hint == "lanes"]


@pytest.mark.parametrize("name", sorted(SAMPLE_ALLOCS))
def test_samples_lower_to_one_nest_per_group(name: str) -> None:
    module = parse_module((TEXT / f"{name}.ir").read_text())
    args = random_inputs(module, seed=3)
    if name == "fusion_access":  # gather indices must be in range
        args[2] = np.array([5, 0, -2], np.int64)
    f, lowered = check(module, args, rtol=1e-5)
    assert group_outputs(f) + ("loop_body" in name) == SAMPLE_ALLOCS[name]
    lanes = lane_buffers(lowered)  # the small-window rule's buffers
    assert H.count_ops(lowered, "mem.alloc") - len(lanes) == SAMPLE_ALLOCS[name]


def test_bilateral_window_keeps_its_lanes_in_two_small_buffers() -> None:
    module = parse_module((TEXT / "fusion_loop_body.ir").read_text())
    _, lowered = check(module, random_inputs(module, seed=1), rtol=1e-5)
    loops = [op for op in lowered.walk() if op.name == "loop.for"]
    inside = {op for loop in loops for op in loop.walk() if op.name == "mem.alloc"}
    # the small-window rule's lanes: 11 columns of each of the two sums
    assert sorted(op.result.type.shape for op in inside) == [(11,), (11,)]
    exps = [op for op in lowered.walk() if op.name == "math.exp"]
    # the space kernel once; the colour kernel once, in the loop over a window row's
    # columns (shared by both sums)
    assert len(exps) == 1 + 1
    assert not [op for op in loops if len(op.inits) > 1]  # no carried lanes


# ---------------------------------------------------------------------------- kernels

def softmax(b, x):
    ax = [x.type.rank - 1]
    mx = b.insert(tensor.ReduceMaxOp.new(x, ax, True)).result
    e = b.insert(m.ExpOp.new(b.insert(arith.SubOp.new(x, mx)).result)).result
    s = b.insert(tensor.SumOp.new(e, ax, True)).result
    return [b.insert(arith.DivOp.new(e, s)).result]


def layernorm(b, x, g, beta):
    ax = [x.type.rank - 1]
    s = b.insert(tensor.SumOp.new(x, ax, True)).result
    mean = b.insert(arith.MulOp.new(s, H.dense(b, np.full((1, 1), 0.125, x.type.element
                                                         .to_numpy())))).result
    d = b.insert(arith.SubOp.new(x, mean)).result
    v = b.insert(tensor.SumOp.new(b.insert(arith.MulOp.new(d, d)).result, ax, True)).result
    r = b.insert(m.RsqrtOp.new(v)).result
    y = b.insert(arith.MulOp.new(b.insert(arith.MulOp.new(d, r)).result, g)).result
    return [b.insert(arith.AddOp.new(y, beta)).result]


def columns(b, x):
    t = b.insert(arith.MulOp.new(x, x)).result
    return [b.insert(tensor.SumOp.new(t, [0], False)).result,
            b.insert(tensor.ReduceMaxOp.new(t, [0], True)).result, t]


def middle(b, x):
    a = b.insert(m.AbsOp.new(x)).result
    return [b.insert(tensor.SumOp.new(a, [1], True)).result,
            b.insert(tensor.ProdOp.new(a, [1], False)).result]


def everything(b, x):
    s = b.insert(tensor.SumOp.new(x, list(range(x.type.rank)), False)).result
    return [s, b.insert(arith.SubOp.new(x, s)).result]


def bias_tanh(b, x, y):
    t = b.insert(m.TanhOp.new(b.insert(arith.AddOp.new(x, y)).result)).result
    return [b.insert(arith.MulOp.new(t, t)).result]


KERNELS = {"softmax": softmax, "layernorm": layernorm, "columns": columns,
           "middle": middle, "everything": everything, "bias_tanh": bias_tanh}


def _arrays(name: str, shape: tuple[int, ...], dtype: str, layout: str, seed: int) -> list:
    rng = np.random.default_rng(seed)

    def make(sh):
        if np.dtype(dtype).kind == "f":
            return rng.standard_normal(sh).astype(dtype)
        return rng.integers(-3, 4, sh).astype(dtype)

    def lay(a):
        if layout == "reversed" and a.ndim:
            return make(a.shape)[::-1, ...]
        if layout == "strided" and a.ndim:
            return make((*a.shape[:-1], 2 * a.shape[-1]))[..., ::2]
        return a
    x = lay(make(shape))
    if name == "layernorm":
        return [x, lay(make(shape[-1:])), make(shape[-1:])]
    if name == "bias_tanh":
        return [x, lay(make(shape[-1:]))]
    return [x]


CASES = [  # kernel, shape, dtype, layout
    ("softmax", (3, 37), "float32", "plain"), ("softmax", (2, 300), "float32", "strided"),
    ("softmax", (1, 1), "float32", "plain"), ("softmax", (0, 5), "float32", "plain"),
    ("softmax", (3, 20), "float16", "reversed"), ("softmax", (2, 3, 17), "float64", "plain"),
    ("layernorm", (4, 8), "float32", "plain"), ("layernorm", (3, 8), "float64", "reversed"),
    ("columns", (5, 7), "float32", "reversed"), ("columns", (4, 6), "int32", "strided"),
    ("columns", (1, 3), "float16", "plain"), ("everything", (0, 3), "float32", "plain"),
    ("middle", (2, 3, 4), "float32", "strided"), ("middle", (3, 0, 2), "int32", "plain"),
    ("everything", (3, 41), "float32", "plain"), ("everything", (2, 2, 5), "int32", "reversed"),
    ("everything", (4, 5), "float16", "strided"),
    ("bias_tanh", (3, 9), "float32", "reversed"), ("bias_tanh", (2, 1), "float64", "plain"),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize(("name", "shape", "dtype", "layout"), CASES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_kernels_match_the_interpreter(name, shape, dtype, layout, dynamic) -> None:
    args = _arrays(name, shape, dtype, layout, seed=len(shape) + shape[-1])
    module = H.kernel(args, KERNELS[name], dynamic=dynamic)
    f, lowered = check(module, args, rtol_of(args))
    n_groups = len([op for op in f.walk() if isinstance(op, FusionGroupOp)])
    # Dynamic layernorm: gamma's size is not provably the row's (numpy would broadcast
    # a row of size 1 to it), so the scale-and-shift tail is a second group.
    assert n_groups == (2 if dynamic and name == "layernorm" else 1)
    lanes = lane_buffers(lowered)  # the small-window rule's buffers
    assert H.count_ops(lowered, "mem.alloc") - len(lanes) == group_outputs(f)


def test_empty_max_raises_like_numpy() -> None:
    args = [np.zeros((3, 0), np.float32)]
    f = fused(H.kernel(args, softmax))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        H.run_both(f, args)


def test_rowwise_without_a_matching_output_uses_one_row_buffer() -> None:
    """exp(x - max) is f32 but the output f16: it cannot live in the output row, so ONE
    row buffer holds it, allocated before the row loop, which is then not parallel."""
    def body(b, x):
        y = softmax(b, x)[0]
        return [b.insert(arith.CastOp.new(y, f16)).result]
    args = [np.random.default_rng(0).standard_normal((3, 21)).astype(np.float32)]
    f, lowered = check(H.kernel(args, body, dynamic=True), args, 1e-3)
    fn = next(iter(lowered.functions))
    allocs = [op for op in fn.entry.ops if op.name == "mem.alloc"]
    lanes = lane_buffers(lowered)
    assert len(allocs) == 2 == H.count_ops(lowered, "mem.alloc") - len(lanes)
    rows = [op for op in fn.entry.ops if op.name == "loop.for"]
    assert len(rows) == 1 and not rows[0].attributes.get("parallel")


def test_softmax_keeps_exp_in_its_output_row() -> None:
    args = [np.zeros((4, 40), np.float32)]
    _, lowered = check(H.kernel(args, softmax), args, 1e-5)
    fn = next(iter(lowered.functions))
    rows = [op for op in fn.entry.ops if op.name == "loop.for"]
    assert len(rows) == 1 and rows[0].attributes.get("parallel") is True
    assert H.count_ops(lowered, "math.exp") == 1 + 1  # the lane loop + the tail, one pass


def test_generic_groups_are_inlined() -> None:
    args = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    f = fused(H.kernel(args, softmax))
    for op in f.walk():
        if isinstance(op, FusionGroupOp):
            op.attributes["kind"] = "generic"
    lowered = H.check(f, args, 1e-6)  # the harness names the function "f" too
    assert H.count_ops(lowered, "mem.alloc") > 1  # op by op


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag=dags(max_ops=6))
def test_random_dags_lower_correctly(dag) -> None:
    f, lowered = check(dag.module, dag.args, rtol_of(dag.args) * 10)
    results = len(next(iter(f.functions)).function_type.results)
    lanes = len(lane_buffers(lowered))
    assert H.count_ops(lowered, "mem.alloc") - lanes <= group_outputs(f) + results
