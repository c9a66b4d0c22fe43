"""``layout``: loop interchange towards unit strides and the copy rule for re-read
strided inputs.  Every case is interpreted before and after the pass with allocation
tracking and must agree bit for bit (float sums included: no reassociation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from irgen import modules
from loopopt_harness import (
    assert_runs_agree,
    check_passes,
    check_text_case,
    optimize,
    run_counting,
)
from loops_harness import count_ops, kernel, lower, op1

from pyasc.ir.core import Operation
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.passes.loopgen import static_strides
from pyasc.ir.types import TensorType

RNG = np.random.default_rng(5)
TEXT = sorted((Path(__file__).parent / "text").glob("layout_*.ir"))


@pytest.mark.parametrize("path", TEXT, ids=lambda p: p.stem)
def test_text_cases_compute_the_same(path: Path) -> None:
    check_text_case(path, RNG)


def transpose(b, x, perm):
    t = x.type
    out = TensorType(tuple(t.shape[p] for p in perm), t.element)
    return op1(b, tensor.TransposeOp, [x], out, perm=tuple(perm))


def reduce(b, cls, x, axes, keepdims=False):
    out = cls.result_type(x.type, axes, keepdims)
    return op1(b, cls, [x], out, axes=tuple(axes), keepdims=keepdims)


def _innermost_loops(module) -> list[loop.ForOp]:
    return [op for op in module.walk() if isinstance(op, loop.ForOp)
            and not any(isinstance(o, loop.ForOp) for o in op.walk() if o is not op)]


def unit_stride_misses(module) -> int:
    """Loads/stores directly in an innermost loop that step a known non-unit stride
    while some axis of the same access with stride 1 is not indexed by the loop."""
    misses = 0
    for lp in _innermost_loops(module):
        iv = lp.induction_var
        for op in lp.body.blocks[0].ops:
            misses += _misses(op, iv)
    return misses


def _misses(op: Operation, iv) -> int:
    if not isinstance(op, mem.LoadOp | mem.StoreOp):
        return 0
    buf = op.source if isinstance(op, mem.LoadOp) else op.dest
    strides = static_strides(buf.type)
    at = [k for k, v in enumerate(op.indices) if v is iv]
    return int(bool(at) and all(strides[k] != 1 for k in at) and 1 in strides)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("cls", [tensor.SumOp, tensor.ReduceMaxOp, tensor.ProdOp])
def test_column_reduction_of_a_transpose_is_tiled_in_order(cls, dynamic) -> None:
    # out[j] op= xt[i, j]: the inner loop keeps indexing out (no chain through memory),
    # and the strided reads of xt get tiles; each out[j] still combines rows in order
    x = RNG.standard_normal((33, 129)).astype(np.float32)
    mod = kernel([x], lambda b, t: [reduce(b, cls, transpose(b, t, (1, 0)), [0])], dynamic)
    opt = check_passes(mod, [x], ["layout"])
    assert count_ops(opt, "arith.min") == 2
    assert _innermost_loops(opt)[-1].induction_var.name_hint == "i1"


def _add_transposed(b, s, t):
    return [b.insert(arith.AddOp.new(transpose(b, s, (1, 0)), t)).result]


def test_small_elementwise_with_conflicting_strides_is_left_alone() -> None:
    x, y = RNG.standard_normal((2, 7, 9)).astype(np.float32)
    mod = kernel([x, y.T.copy()], _add_transposed)
    opt = check_passes(mod, [x, y.T.copy()], ["layout"])
    assert str(opt) == str(lower(mod))  # one unit-stride access per order, too short to tile


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("shape", [(129, 33), (33, 129)])
def test_conflicting_strides_are_tiled(shape, dynamic) -> None:
    x = RNG.standard_normal(shape[::-1]).astype(np.float32)
    y = RNG.standard_normal(shape).astype(np.float32)
    mod = kernel([x, y], _add_transposed, dynamic)
    opt = check_passes(mod, [x, y], ["layout"])
    tiled = dynamic or shape[0] >= 128
    assert count_ops(opt, "loop.for") == count_ops(lower(mod), "loop.for") + 2 * tiled


def test_f_ordered_parameter_is_tiled() -> None:
    base = RNG.standard_normal((34, 40))
    mod = kernel([base.T], lambda b, t: [b.insert(arith.MulOp.new(t, t)).result], True)
    opt = check_passes(mod, [base.T], ["layout"])
    assert count_ops(opt, "arith.min") == 2


PERMS = [(1, 0, 2), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 2, 0)]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(perm=st.sampled_from(PERMS), axes=st.sets(st.integers(0, 2), max_size=3),
       keep=st.booleans(), dynamic=st.booleans(),
       cls=st.sampled_from([tensor.SumOp, tensor.ReduceMinOp, tensor.AnyOp]))
def test_reductions_of_permuted_inputs(perm, axes, keep, dynamic, cls) -> None:
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    if cls is tensor.AnyOp:
        x = x > 0.5

    def body(b, t):
        p = transpose(b, t, perm)
        out = reduce(b, cls, p, sorted(axes), keep) if axes else p
        return [out] if axes else [b.insert(arith.SelectOp.new(
            b.insert(arith.CmpOp.new("ne", out, out)).result, out, out)).result]

    check_passes(kernel([x], body, dynamic), [x], ["layout", "memplan"])


@pytest.mark.parametrize("view", ["reversed", "transposed", "sliced"])
def test_strided_parameters(view) -> None:
    base = RNG.standard_normal((10, 12))
    x = {"reversed": base[::-1, ::-1], "transposed": base.T,
         "sliced": base[1::2, ::3]}[view]

    def body(b, t):
        s = reduce(b, tensor.SumOp, t, [0], keepdims=True)
        return [b.insert(arith.SubOp.new(t, s)).result,
                reduce(b, tensor.ReduceMaxOp, transpose(b, t, (1, 0)), [1])]

    for dynamic in (False, True):
        check_passes(kernel([x], body, dynamic), [x], ["layout", "memplan"])


def _centered_rows(n: int, dynamic: bool, write_param: bool = False):
    """``x.T - max(x.T, axis=1, keepdims=True)``: two passes over the rows of a
    transposed input (and optionally a write into the input afterwards)."""
    x = RNG.standard_normal((n, n)).astype(np.float32)

    def body(b, t):
        xt = transpose(b, t, (1, 0))
        m = reduce(b, tensor.ReduceMaxOp, xt, [1], keepdims=True)
        out = b.insert(arith.SubOp.new(xt, m)).result
        if write_param:
            param = b.block.args[0]
            zero = b.insert(arith.ConstantOp.new(0.0, out.type.element))
            b.insert(mem.FillOp([zero.result, param]))
        return [out]

    return kernel([x], body, dynamic), x


@pytest.mark.parametrize(("n", "dynamic", "copies"), [(64, False, 1), (16, False, 0),
                                                      (16, True, 1)])
def test_copy_rule(n, dynamic, copies) -> None:
    mod, x = _centered_rows(n, dynamic)
    low = lower(mod)
    opt = check_passes(mod, [x], ["layout", "memplan"])
    assert count_ops(opt, "mem.alloc") == count_ops(low, "mem.alloc") + copies
    assert (unit_stride_misses(opt) < unit_stride_misses(low)) == bool(copies)


def test_no_copy_when_the_function_writes_its_inputs() -> None:
    mod, x = _centered_rows(64, False, write_param=True)
    opt = check_passes(mod, [x], ["layout"])
    assert count_ops(opt, "mem.alloc") == count_ops(lower(mod), "mem.alloc")


def test_matmul_of_transposed_operands() -> None:
    a, b = RNG.standard_normal((2, 6, 6)).astype(np.float32)
    mod = kernel([a, b], lambda bld, x, y: [bld.insert(tensor.MatmulOp.new(
        transpose(bld, x, (1, 0)), transpose(bld, y, (1, 0)))).result])
    check_passes(mod, [a, b], ["layout", "memplan"])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(gen=modules(executable=True))
def test_random_programs(gen) -> None:
    low = lower(gen.module)
    opt = optimize(low, ["layout"])
    before, leaks_before = run_counting(low, gen.args, "main")
    after, leaks_after = run_counting(opt, gen.args, "main")
    assert leaks_after == leaks_before
    assert_runs_agree(before, after)
