"""The ``fusion`` pass: interpreter results are bit-identical before and after it (the
pass only moves and clones ops), the groups it forms are the intended ones, and it
is deterministic, idempotent and switchable with ``PYASC_DISABLE_PASSES``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fusion_dags import dags
from hypothesis import HealthCheck, given, settings

from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops.func import FusionGroupOp, ModuleOp
from pyasc.ir.passes import DEFAULT_PIPELINE, fusion_clusters, run_pipeline
from pyasc.ir.passes.fusion import RECOMPUTE_FLOPS
from pyasc.ir.passes.fusion_rules import MAX_GROUP_OPS, op_cost, role_of
from pyasc.ir.passes.fusion_schedule import REMAPS
from pyasc.ir.types import DYN, MemRefType, ScalarType

TEXT = Path(__file__).parent / "text"
SAMPLES = sorted(p for p in TEXT.glob("fusion_*.ir") if "lower" not in p.stem)


def random_inputs(module: ModuleOp, seed: int = 0, size: int = 5) -> list:
    """Arguments for every parameter of the module's first function (``?`` -> ``size``)."""
    rng = np.random.default_rng(seed)
    fn = next(iter(module.functions))
    args: list = []
    for a in fn.entry.args:
        t = a.type
        if isinstance(t, MemRefType):
            shape = tuple(size if d == DYN else d for d in t.shape)
            dtype = t.element.to_numpy()
            if t.element.is_float:
                args.append(rng.standard_normal(shape).astype(dtype))
            else:
                args.append(rng.integers(0, 3, shape).astype(dtype))
        else:
            assert isinstance(t, ScalarType)
            args.append(t.to_numpy().type(rng.uniform(0.5, 2.0)))
    return args


def _copy(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_identical(a: object, b: object) -> None:
    """Same dtype, shape and bits (NaN equals NaN, the sign of zero counts)."""
    x, y = np.asarray(a), np.asarray(b)
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        assert np.array_equal(nan, np.isnan(y)), (x, y)
        x, y = np.where(nan, 0, x), np.where(nan, 0, y)
    assert x.tobytes() == y.tobytes(), (x, y)


def run(module: ModuleOp, args: list, name: str | None = None) -> tuple[list, list]:
    name = name or next(iter(module.functions)).sym_name
    inputs = _copy(args)
    return Interpreter(module).call(name, *inputs), inputs


def check_unchanged_results(module: ModuleOp, args: list) -> ModuleOp:
    """Run fusion on a copy; results and written arguments must be bit-identical."""
    before, before_args = run(module, args)
    fused = parse_module(str(module))
    run_pipeline(fused, ["fusion"])
    after, after_args = run(fused, args)
    for x, y in zip(before + before_args, after + after_args, strict=True):
        assert_identical(x, y)
    assert str(parse_module(str(fused))) == str(fused)
    return fused


def groups(module: ModuleOp) -> list[FusionGroupOp]:
    return [op for op in module.walk() if isinstance(op, FusionGroupOp)]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("seed", [0, 1])
def test_samples_keep_their_results(path: Path, seed: int) -> None:
    module = parse_module(path.read_text())
    fused = check_unchanged_results(module, random_inputs(module, seed))
    assert groups(fused)


def test_every_sample_is_covered_by_a_text_test() -> None:
    names = {p.stem for p in SAMPLES}
    assert {"fusion_softmax", "fusion_layernorm", "fusion_loop_body", "fusion_scope",
            "fusion_multi_consumer_recompute", "fusion_multi_consumer_materialize",
            "fusion_reductions", "fusion_access", "fusion_broadcast",
            "fusion_horizontal", "fusion_elementwise_chain"} <= names


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag=dags())
def test_random_dags_keep_their_results(dag) -> None:
    fused = check_unchanged_results(dag.module, dag.args)
    for g in groups(fused):
        assert g.attributes["kind"] in ("elementwise", "reduction", "rowwise")


@settings(max_examples=25, deadline=None)
@given(dag=dags())
def test_fusion_is_deterministic_and_idempotent(dag) -> None:
    a, b = parse_module(str(dag.module)), parse_module(str(dag.module))
    run_pipeline(a, ["fusion"])
    run_pipeline(b, ["fusion"])
    assert str(a) == str(b)
    once = str(a)
    run_pipeline(a, ["fusion"])
    assert str(a) == once


@settings(max_examples=25, deadline=None)
@given(dag=dags(dynamic=False))
def test_every_fusible_tensor_op_lands_in_a_group(dag) -> None:
    fused = parse_module(str(dag.module))
    run_pipeline(fused, ["dce", "fusion"])
    fn = next(iter(fused.functions))
    for op in fn.entry.ops:  # left outside: views (zero-copy) and scalars only
        assert role_of(op) in (None, "scalar", "access"), op.name


def test_recompute_rule_uses_the_stated_threshold() -> None:
    module = parse_module((TEXT / "fusion_multi_consumer_recompute.ir").read_text())
    fn = next(iter(module.functions))
    chain = [op for op in fn.entry.ops if op.name in ("arith.mul", "arith.add")]
    assert sum(op_cost(op) for op in chain) <= RECOMPUTE_FLOPS
    run_pipeline(module, ["fusion"])
    bodies = [g.body.blocks[0].ops for g in groups(module)]
    assert len(bodies) == 2 and all(any(o.name == "arith.add" for o in b) for b in bodies)
    dear = parse_module((TEXT / "fusion_multi_consumer_materialize.ir").read_text())
    run_pipeline(dear, ["fusion"])
    exps = [o for o in dear.walk() if o.name == "math.exp"]
    assert len(exps) == 1 and op_cost(exps[0]) > RECOMPUTE_FLOPS


def test_scope_contents_never_share_a_group_with_outside_ops() -> None:
    module = parse_module((TEXT / "fusion_scope.ir").read_text())
    run_pipeline(module, ["fusion"])
    names = [sorted(o.result.name_hint for o in g.body.blocks[0].ops[:-1]
                    if o.name != "arith.constant") for g in groups(module)]
    assert names == [["y"], ["z", "zz"], ["r"]]
    assert not any(o.name == "fusion.scope" for o in module.walk())


def test_disable_passes_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (TEXT / "fusion_softmax.ir").read_text()
    on = parse_module(text)
    run_pipeline(on)
    assert groups(on)
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fusion, cse")
    off = parse_module(text)
    run_pipeline(off)
    assert not groups(off)
    assert "fusion" in DEFAULT_PIPELINE


def test_frontend_ir_shows_groups() -> None:
    from pyasc import hybrid

    @hybrid
    def softmax(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    text = softmax.ir(np.zeros((4, 8), np.float32))
    assert text.count('"fusion.group"') == 1 and 'kind = "rowwise"' in text
    assert '"fusion.group"' not in softmax.ir(np.zeros((4, 8), np.float32), optimized=False)


def test_fusion_group_fuses_across_hybrid_callees() -> None:
    from pyasc import fusion_group, hybrid

    @hybrid
    def scale(x):
        return x * 2.0 + 1.0

    @hybrid
    def normalize(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    @fusion_group
    def composed(x):
        return normalize(scale(x))

    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    text = composed.ir(x)
    assert text.count('"fusion.group"') == 1 and '"func.call"' not in text
    program = composed.specialize(x)
    got = Interpreter(program.module).call(program.entry, x)[0]
    y = x * 2.0 + 1.0
    e = np.exp(y - np.max(y, axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / np.sum(e, axis=-1, keepdims=True), rtol=1e-6)


def test_a_value_of_row_statistics_is_recomputed_per_row_not_materialized() -> None:
    # xh reads the row statistics m, s (64x1: computed once per row), so recomputing
    # it costs a subtract and a divide per element: it is cloned into the column sum's
    # group and the row group instead of being stored by one and read by the other
    # (which also forced the statistics into a third group: a path would leave the row
    # group through the column group and come back)
    from pyasc import hybrid

    @hybrid
    def norm_grad(x, g, w):
        m = x.sum(axis=-1, keepdims=True) / 8.0
        s = np.sqrt(((x - m) * (x - m)).sum(axis=-1, keepdims=True) / 8.0 + 1e-5)
        xh = (x - m) / s
        gw = (g * xh).sum(axis=0)  # used first: xh's first consumer is the column sum
        gx = g * w
        return gw, gx - xh * (gx * xh).sum(axis=-1, keepdims=True) / 8.0

    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 4, 8)).astype(np.float32)
    w = rng.standard_normal(8).astype(np.float32)
    text = norm_grad.ir(x, g, w)
    assert text.count('"fusion.group"') == 2
    program = norm_grad.specialize(x, g, w)
    got = Interpreter(program.module).call(program.entry, x, g, w)
    m = x.mean(axis=-1, keepdims=True)
    xh = (x - m) / np.sqrt(((x - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    gx = g * w
    want = ((g * xh).sum(axis=0), gx - xh * (gx * xh).mean(axis=-1, keepdims=True))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(dag=dags(max_ops=25))
def test_incremental_cluster_facts_agree_with_the_full_analysis(dag, monkeypatch) -> None:
    # every merge's schedule, cycle check and use counts recomputed from scratch
    monkeypatch.setattr(fusion_clusters, "CHECK_FULL", True)
    check_unchanged_results(dag.module, dag.args)


def _chain_ir(n: int) -> str:
    """``x = x * y`` n times on one vector (n fusible tensor ops in one chain)."""
    body = "".join(f'    %{i + 1} = "arith.mul"(%{i}, %y) : (tensor<8xf32>, tensor<8xf32>)'
                   f" -> tensor<8xf32>\n" for i in range(1, n + 1))
    return f'''"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%a: memref<8xf32>, %b: memref<8xf32>):
    %1 = "mem.to_tensor"(%a) : (memref<8xf32>) -> tensor<8xf32>
    %y = "mem.to_tensor"(%b) : (memref<8xf32>) -> tensor<8xf32>
{body}    "func.return"(%{n + 1}) : (tensor<8xf32>) -> ()
  }}) {{function_type = (memref<8xf32>, memref<8xf32>) -> tensor<8xf32>, sym_name = "f"}} : () -> ()
}}) : () -> ()
'''


def test_a_group_holds_at_most_max_group_ops_tensor_ops() -> None:
    n = 2 * MAX_GROUP_OPS + 7
    module = parse_module(_chain_ir(n))
    fused = check_unchanged_results(module, random_inputs(module))
    sizes = [sum(role_of(op) not in (None, "scalar") for op in g.body.blocks[0].ops)
             for g in groups(fused)]
    assert sizes == [7, MAX_GROUP_OPS, MAX_GROUP_OPS]


def test_remaps_are_not_nested_through_arithmetic_in_one_group() -> None:
    from pyasc import hybrid

    @hybrid
    def f(x):
        for _ in range(12):  # unrolled by nothing: a user loop; the chain below is not
            x = x * 0.5
        a = x + x[::-1]
        b = a + a[::-1]
        c = b * 2.0 + b[1:-1].sum()
        return c + c.T

    ir = f.ir(np.ones(9, np.float32))
    module = parse_module(ir)
    for g in groups(module):
        body = g.body.blocks[0]
        remapped: set = set()
        for op in body.ops:
            src = op.operand_values[0] if op.operand_values else None
            if isinstance(op, REMAPS) and src in remapped:
                assert isinstance(src.op, REMAPS), "a remap of a remapped computed member"
            if isinstance(op, REMAPS) or any(v in remapped for v in op.operand_values):
                remapped.update(op.result_values)


def test_evaluation_does_not_double_per_nested_slice() -> None:
    import linecache

    from pyasc import hybrid

    def loop_ops(k: int) -> int:
        src = "def f(x):\n" + "    x = x + x[::-1] * 0.5\n" * k + "    return x\n"
        name = f"<slices{k}>"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        scope: dict = {}
        exec(compile(src, name, "exec"), scope)  # noqa: S102
        program = hybrid(scope["f"], cache=False).specialize(np.ones(9, np.float32))
        lowered = program.module.clone()
        run_pipeline(lowered, ["lower-to-loops"])
        return sum(1 for _ in lowered.walk())

    small, large = loop_ops(4), loop_ops(12)
    assert large < 4 * small, (small, large)  # linear: 3x the statements
