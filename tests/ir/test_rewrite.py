"""The pattern matcher, the greedy rewrite driver and the side-effect queries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyasc.ir import Builder, DenseArray, parse_module
from pyasc.ir.ops import arith, func, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.effects import is_dead, is_effect_free
from pyasc.ir.passes.identities import holds_exactly
from pyasc.ir.rewrite import Pat, RuleSet, match, rewrite_greedily, same_number
from pyasc.ir.types import SCALAR_TYPES, MemRefType, TensorType, f32, i32, index


def _function(params):
    mod = ModuleOp.empty()
    fn = FuncOp.empty("f", params, [])
    mod.append(fn)
    return mod, fn, Builder.at_end(fn.entry)


def _const(b, value, t):
    if isinstance(t, TensorType):
        arr = np.full(t.shape, value, dtype=t.element.to_numpy())
        return b.insert(arith.ConstantOp([], [t], {"value": DenseArray(arr, t)})).result
    return b.insert(arith.ConstantOp.new(value, t)).result


@pytest.mark.parametrize("a,b,equal", [
    (0.0, -0.0, False), (0.0, 0.0, True), (math.nan, math.nan, True), (1, 1.0, False),
    (True, 1, False), (np.float32(-0.0), -0.0, True), (np.int8(3), 3, True),
    (math.inf, math.inf, True), (math.nan, 0.0, False),
])
def test_same_number_is_exact(a, b, equal) -> None:
    assert same_number(a, b) is equal


def test_const_pattern_kinds_and_splats() -> None:
    _, _, b = _function([])
    zero_f, neg_zero = _const(b, 0.0, f32), _const(b, -0.0, f32)
    zero_i, one_b = _const(b, 0, i32), _const(b, True, SCALAR_TYPES["i1"])
    splat = _const(b, 0, TensorType((3,), i32))
    mixed = b.insert(arith.ConstantOp([], [TensorType((2,), i32)], {"value": DenseArray(
        np.array([0, 1], dtype=np.int32), TensorType((2,), i32))})).result
    assert match(Pat.const(0.0), zero_f, {}) and not match(Pat.const(0.0), neg_zero, {})
    assert match(Pat.const(-0.0), neg_zero, {}) and not match(Pat.const(0), zero_f, {})
    assert match(Pat.const(0), zero_i, {}) and match(Pat.const(0), splat, {})
    assert not match(Pat.const(0), mixed, {})
    assert match(Pat.const(True), one_b, {}) and not match(Pat.const(1), one_b, {})


def test_op_pattern_binds_commutes_and_checks_repeats() -> None:
    _, fn, b = _function([i32, i32])
    x, y = fn.entry.args
    one = _const(b, 1, i32)
    mul = b.insert(arith.MulOp.new(one, x)).result
    sub = b.insert(arith.SubOp.new(one, x)).result
    same = b.insert(arith.SubOp.new(y, y)).result
    env: dict = {}
    assert match(Pat("arith.mul", Pat.var("v"), Pat.const(1), bind="op"), mul, env)
    assert env["v"] is x and env["op"] is mul.op
    assert not match(Pat("arith.sub", Pat.var("v"), Pat.const(1)), sub, {})
    xx = Pat("arith.sub", Pat.var("v"), Pat.var("v"))
    assert match(xx, same, {}) and not match(xx, sub, {})
    # a failed match leaves the bindings alone
    env = {"v": y}
    assert not match(Pat("arith.mul", Pat.var("v"), Pat.const(1)), mul, env)
    assert env == {"v": y}


def test_rest_and_where() -> None:
    _, fn, b = _function([i32])
    x = fn.entry.args[0]
    neg = b.insert(arith.NegOp.new(x)).result
    assert match(Pat("arith.neg", ...), neg, {})
    assert not match(Pat("arith.neg"), neg, {})
    assert not match(Pat("arith.neg", Pat.var("v"), where=lambda op: False), neg, {})
    assert match(Pat("arith.neg", Pat.var("v", where=lambda v: v.type == i32)), neg, {})


def test_rule_root_must_be_an_op() -> None:
    with pytest.raises(ValueError, match="op pattern"):
        RuleSet([(Pat.var("x"), lambda x: x)])


def test_driver_rejects_type_changes_and_cleans_up() -> None:
    """A rule proposing a value of another type is ignored, its new ops removed."""
    mod, fn, b = _function([f32])
    x = fn.entry.args[0]
    y = b.insert(arith.NegOp.new(x)).result
    b.insert(func.ReturnOp([y]))
    fn.set_result_types([f32])
    before = str(mod)
    bad = RuleSet([(Pat("arith.neg", Pat.var("x")),
                    lambda rw, x: rw.constant(0, i32))])
    assert rewrite_greedily(mod, [bad]) is False
    assert str(mod) == before


def test_driver_reaches_fixpoint_and_keeps_names() -> None:
    mod = parse_module("""
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: f32):
    %a = "arith.neg"(%x) : (f32) -> f32
    %b = "arith.neg"(%a) : (f32) -> f32
    %c = "arith.neg"(%b) : (f32) -> f32
    %d = "arith.neg"(%c) : (f32) -> f32
    "func.return"(%d) : (f32) -> ()
  }) {function_type = (f32) -> f32, sym_name = "f"} : () -> ()
}) : () -> ()""")
    rules = RuleSet([(Pat("arith.neg", Pat("arith.neg", Pat.var("x"))), lambda x: x)])
    assert rewrite_greedily(mod, [rules], is_dead=is_dead)
    assert '"func.return"(%x)' in str(mod) and "arith.neg" not in str(mod)


@pytest.mark.parametrize("wide,narrow,exact", [
    ("i32", "i16", True), ("i16", "i32", False), ("i32", "ui16", True),
    ("ui32", "i16", False), ("ui16", "ui8", True), ("i8", "ui8", False),
    ("f32", "i16", True), ("f32", "i32", False), ("f64", "ui32", True),
    ("f16", "ui8", True), ("bf16", "i8", False), ("f64", "f32", True),
    ("f32", "f64", False), ("bf16", "f16", False), ("f32", "bf16", True),
    ("i8", "i1", True), ("i1", "i8", False), ("i64", "f16", False), ("index", "i64", True),
])
def test_exact_casts(wide, narrow, exact) -> None:
    assert holds_exactly(SCALAR_TYPES[wide], SCALAR_TYPES[narrow]) is exact


def test_exact_cast_table_against_numpy() -> None:
    """Every pair the table calls exact round-trips all (sampled) values in numpy."""
    rng = np.random.default_rng(1)
    names = [n for n in SCALAR_TYPES if n not in ("bf16", "index")]
    for narrow in names:
        dt = SCALAR_TYPES[narrow].to_numpy()
        if dt.kind == "f":
            vals = np.concatenate([rng.standard_normal(200) * 1e4, [np.inf, -np.inf, -0.0]])
            vals = vals.astype(dt)
        elif dt.kind == "b":
            vals = np.array([True, False])
        else:
            info = np.iinfo(dt)
            vals = np.concatenate([rng.integers(info.min, info.max, 200, dtype=dt,
                                                endpoint=True), np.array([info.min, info.max], dt)])
        for wide in names:
            if holds_exactly(SCALAR_TYPES[wide], SCALAR_TYPES[narrow]):
                wdt = SCALAR_TYPES[wide].to_numpy()
                with np.errstate(all="ignore"):
                    back = vals.astype(wdt).astype(dt)
                assert np.array_equal(back, vals), (narrow, wide)


def test_effects() -> None:
    mod, fn, b = _function([MemRefType((4,), f32), f32, index])
    m, v, i = fn.entry.args
    load = b.insert(mem.LoadOp([m, i], [f32]))
    store = b.insert(mem.StoreOp([v, m, i]))
    alloc = b.insert(mem.AllocOp([], [MemRefType((4,), f32)]))
    check = b.insert(func.AssertOp([_const(b, True, SCALAR_TYPES["i1"])],
                                   attributes={"message": "m", "kind": "assert"}))
    call = b.insert(func.CallOp([v], [f32], {"callee": "f"}))
    ret = b.insert(func.ReturnOp([]))
    assert is_effect_free(load) and is_effect_free(alloc) and is_dead(load)
    assert not any(is_effect_free(op) for op in (store, check, call, ret, fn, mod))
