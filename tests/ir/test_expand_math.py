"""``expand-math``: what the expansions contain, where they apply, ``pow`` rules, f16,
fastmath, and the ``arith.bitcast`` op they use.  Accuracy sweeps are in
``test_expand_math_accuracy.py``."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc.ir import Builder, parse_module
from pyasc.ir.core import Block
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import DEFAULT_PIPELINE, PASS_REGISTRY, run_pipeline
from pyasc.ir.passes.expand_math import UNARY
from pyasc.ir.passes.mathlib.accuracy import OPS, SPECS, expanded, power, ulp_error, unary
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import (
    DYN,
    MemRefType,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i16,
    i32,
    i64,
    index,
    u32,
)
from pyasc.ir.verifier import verify_module

# ops an expansion may contain: elementwise arithmetic and single-instruction math
ALLOWED = {f"arith.{n}" for n in ("constant add sub mul div max min and or xor shl shr "
                                  "neg cmp select cast bitcast").split()}
ALLOWED |= {"math.round", "math.floor", "math.abs", "math.sqrt"}
STRUCTURE = {"builtin.module", "func.func", "func.return"}


def _module(op_cls, t, fastmath: bool = False) -> ModuleOp:
    fn = FuncOp.empty("f", [t], [t], ["x"])
    b = Builder.at_end(fn.entry)
    b.insert(func.ReturnOp([b.insert(op_cls.new(fn.entry.args[0])).result]))
    module = ModuleOp.empty()
    module.append(fn)
    return run_pipeline(module, ["expand-math"], {"fastmath": fastmath})


def _names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk()]


def test_registered_and_left_to_the_backends():
    assert "expand-math" in PASS_REGISTRY
    assert "expand-math" not in DEFAULT_PIPELINE


@pytest.mark.parametrize("op_cls", list(UNARY), ids=lambda c: c.name)
@pytest.mark.parametrize("t", [f32, TensorType((DYN, 3), f32)], ids=["scalar", "tensor"])
def test_expansion_is_branch_free_arithmetic(op_cls, t):
    module = _module(op_cls, t)
    verify_module(module)
    names = _names(module)
    assert set(names) - STRUCTURE <= ALLOWED, sorted(set(names) - ALLOWED - STRUCTURE)
    assert op_cls.name not in names
    assert all(not op.region_list for op in module.walk() if op.name not in STRUCTURE)


@pytest.mark.parametrize("name", list(OPS))
def test_scalar_and_tensor_expansions_agree_bitwise(name):
    x = np.array([-3.7, -0.0, 1e-40, 0.3, 2.5, 88.0, np.inf, np.nan], np.float32)
    on_tensor = expanded(unary(OPS[name]))(x)
    interp = Interpreter(_module(OPS[name], f32))
    on_scalars = np.array([interp.call("f", v)[0] for v in x], np.float32)
    np.testing.assert_array_equal(on_scalars.view(np.int32), on_tensor.view(np.int32))


def _exp_loop() -> ModuleOp:
    """``for i: out[i] = exp(x[i])`` (loop-level IR, as ``lower-to-loops`` makes it)."""
    buf = MemRefType((DYN,), f32)
    fn = FuncOp.empty("main", [buf, buf], [], ["x", "out"])
    b = Builder.at_end(fn.entry)
    x, out = fn.entry.args
    c0, c1 = (b.insert(arith.ConstantOp.new(v, index)).result for v in (0, 1))
    n = b.insert(mem.DimOp([x], [index], {"axis": 0})).result
    for_op = b.insert(loop.ForOp.empty(c0, n, c1, iv_name="i"))
    with b.at(for_op.body.blocks[0]):
        v = b.insert(mem.LoadOp([x, for_op.induction_var], [f32])).result
        y = b.insert(m.ExpOp.new(v)).result
        b.insert(mem.StoreOp([y, out, for_op.induction_var]))
        b.insert(loop.YieldOp([]))
    b.insert(func.ReturnOp([]))
    module = ModuleOp.empty()
    module.append(fn)
    return parse_module(str(module))


def test_loop_level_body_expands_without_branches():
    module = run_pipeline(_exp_loop(), ["expand-math"])
    body = [op.name for op in module.walk()]
    assert "math.exp" not in body and "loop.if" not in body and "func.call" not in body
    assert body.count("loop.for") == 1
    x = np.array([-100.0, -1.5, 0.0, 0.7, 50.0, 89.0], np.float32)
    out = np.empty_like(x)
    Interpreter(module).call("main", x, out)
    np.testing.assert_array_equal(out, expanded(unary(m.ExpOp))(x))
    assert ulp_error(out, np.exp(x.astype(np.float64))).max() <= 1.0


def test_f64_is_left_to_libm():
    assert "math.exp" in _names(_module(m.ExpOp, f64))
    assert "math.sin" in _names(_module(m.SinOp, TensorType((4,), f64)))


def _f16_steps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    i, j = (np.where(v < 0, -(v & 0x7FFF), v) for v in
            (a.view(np.int16).astype(np.int64), b.view(np.int16).astype(np.int64)))
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(i - j))


@pytest.mark.parametrize("name", list(OPS))
def test_f16_is_computed_in_f32_and_rounded_once(name):
    """Exhaustive over float16: the f32 result rounded once, which is at most one step
    (a double rounding) from the correctly rounded float16 result."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    y = expanded(unary(OPS[name]), element=f16)(x)
    assert y.dtype == np.float16
    with np.errstate(all="ignore"):
        via_f32 = expanded(unary(OPS[name]))(x.astype(np.float32)).astype(np.float16)
        exact = SPECS[name].ref(x.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(y.view(np.int16), via_f32.view(np.int16))
    assert _f16_steps(y, exact).max() <= 1


@pytest.mark.parametrize("op_cls", [m.ExpOp, m.ErfOp, m.SinOp])
def test_bf16_round_trips_through_f32(op_cls):
    module = _module(op_cls, TensorType((8,), bf16))
    casts = [op for op in module.walk() if op.name == "arith.cast"]
    assert str(casts[0].result.type) == "tensor<8xf32>"
    assert str(casts[-1].result.type) == "tensor<8xbf16>"


@pytest.mark.parametrize("op_cls", [m.LogOp, m.Log1pOp, m.Expm1Op, m.SinOp])
def test_fastmath_drops_special_case_selects_only(op_cls):
    t = TensorType((DYN,), f32)
    strict, fast = _module(op_cls, t), _module(op_cls, t, fastmath=True)
    assert _names(fast).count("arith.select") < _names(strict).count("arith.select")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(4096) * 8).astype(np.float32)
    if op_cls in (m.LogOp, m.Log1pOp):  # inside the domain
        x = np.abs(x) + np.float32(1e-3)
    with np.errstate(all="ignore"):
        a = Interpreter(strict).call("f", x)[0]
        b = Interpreter(fast).call("f", x)[0]
    np.testing.assert_array_equal(a, b)  # same arithmetic on ordinary inputs


# ---------------------------------------------------------------------------- pow


POW_XS = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -2.5, -1.0, 1e-30, 3e-39, 1.5,
                   7.0, 1e10, 3e38], np.float32)


@pytest.mark.parametrize("n", [0, 1, 2, -1, 0.5])
def test_pow_fast_paths_equal_numpy_bitwise(n):
    y = expanded(power(n))(POW_XS)
    with np.errstate(all="ignore"):
        want = np.power(POW_XS, np.float32(n))
    if n == 0.5:  # math.pow is C99 pow: numpy's sqrt path ((-0)**0.5 = -0) is the
        # frontend's math.sqrt; pow gives +0 and (-inf)**0.5 = inf
        want = np.where(POW_XS == -np.inf, np.float32(np.inf), np.abs(want))
    np.testing.assert_array_equal(y, want)
    assert np.array_equal(np.signbit(y), np.signbit(want))


@pytest.mark.parametrize("n", [3, 4, 7, 16, -2, -3, -16])
def test_pow_small_integers_are_correctly_rounded(n):
    y = expanded(power(n))(POW_XS)
    with np.errstate(all="ignore"):
        want = np.power(POW_XS.astype(np.float64), float(n)).astype(np.float32)
    np.testing.assert_array_equal(y, want)
    assert np.array_equal(np.signbit(y[~np.isnan(y)]), np.signbit(want[~np.isnan(want)]))


def _pow_module(n, t) -> ModuleOp:
    fn = FuncOp.empty("f", [t], [t], ["x"])
    b = Builder.at_end(fn.entry)
    b.insert(func.ReturnOp([power(n)(b, fn.entry.args[0])]))
    module = ModuleOp.empty()
    module.append(fn)
    return module


@pytest.mark.parametrize("n, t", [(3, f64), (2.5, f64)])
def test_pow_left_alone(n, t):
    assert "math.pow" in _names(run_pipeline(_pow_module(n, t), ["expand-math"]))


@pytest.mark.parametrize("n", [2.5, 17, -0.5, -40])
def test_general_pow_is_arithmetic_without_float64_left_alone(n):
    """Any other float32 exponent: ``powf`` (float64 arithmetic, no call); a target
    without float64 (``float64=False``: AscendC) keeps ``math.pow``."""
    names = set(_names(run_pipeline(_pow_module(n, f32), ["expand-math"])))
    assert names <= ALLOWED | STRUCTURE, names - ALLOWED - STRUCTURE
    kept = run_pipeline(_pow_module(n, f32), ["expand-math"], {"float64": False})
    assert "math.pow" in _names(kept)


@pytest.mark.parametrize("n", [2.5, 17, -0.5, -40, 1e-3])
def test_general_pow_constant_exponent_correctly_rounded(n):
    y = expanded(power(n))(POW_XS)
    with np.errstate(all="ignore"):
        want = np.power(POW_XS.astype(np.float64), float(n)).astype(np.float32)
    np.testing.assert_array_equal(y, want)
    assert np.array_equal(np.signbit(y[~np.isnan(y)]), np.signbit(want[~np.isnan(want)]))


def test_pow_with_broadcasting_exponent_is_left_alone():
    text = """"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: f32):
    %c = "arith.constant"() {value = dense<[2.0, 2.0] : tensor<2xf32>>} : () -> tensor<2xf32>
    %y = "math.pow"(%x, %c) : (f32, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%y) : (tensor<2xf32>) -> ()
  }) {function_type = (f32) -> tensor<2xf32>, sym_name = "f"} : () -> ()
}) : () -> ()"""
    assert "math.pow" in _names(run_pipeline(parse_module(text), ["expand-math"]))


def test_pow_dense_uniform_exponent_expands():
    text = """"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: tensor<2xf32>):
    %c = "arith.constant"() {value = dense<[3.0, 3.0] : tensor<2xf32>>} : () -> tensor<2xf32>
    %y = "math.pow"(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%y) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "f"} : () -> ()
}) : () -> ()"""
    module = run_pipeline(parse_module(text), ["expand-math"])
    assert "math.pow" not in _names(module)
    x = np.array([1.1, -3.0], np.float32)
    want = (x.astype(np.float64) ** 3).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(module).call("f", x)[0], want)


# ---------------------------------------------------------------------------- bitcast


def _bitcast(src, dst):
    return arith.BitcastOp.new(Block([src]).args[0], dst)


@pytest.mark.parametrize("src, dst", [(f32, i32), (i32, f32), (f64, i64), (f16, i16),
                                      (f32, u32), (i64, index)])
def test_bitcast_verifies(src, dst):
    _bitcast(src, dst).verify_op()


@pytest.mark.parametrize("src, dst", [(f32, i64), (f64, f32), (i1, i1), (f16, f32)])
def test_bitcast_rejects_other_widths(src, dst):
    with pytest.raises(ValueError):
        _bitcast(src, dst).verify_op()


def test_bitcast_semantics_scalar_and_tensor():
    op = _bitcast(f32, i32)
    (bits,) = eval_op(op, [np.float32(-0.0)])
    assert type(bits) is np.int32 and bits == np.int32(-(2 ** 31))
    t = TensorType((3,), f32)
    op = arith.BitcastOp.new(Block([t]).args[0], u32)
    x = np.array([1.0, np.inf, -2.0], np.float32)
    np.testing.assert_array_equal(eval_op(op, [x])[0], x.view(np.uint32))
    back = arith.BitcastOp.new(Block([TensorType((3,), i16)]).args[0], f16)
    h = np.array([0x3C00, 0x7C00, -0x4000], np.int16)
    np.testing.assert_array_equal(eval_op(back, [h])[0], h.view(np.float16))


# ---------------------------------------------------------------------------- fma


def _fma_op(t=f32):
    fn = FuncOp.empty("f", [t, t, t], [t], ["a", "b", "c"])
    a, b, c = fn.entry.args
    return m.FmaOp.new(a, b, c)


def _exact_fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """``a * b + c`` rounded once to float32 (ties to even), with exact fractions."""
    from fractions import Fraction

    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))
    cands = [near, np.nextafter(near, np.float32(np.inf)),
             np.nextafter(near, np.float32(-np.inf))]
    cands = [v for v in cands if np.isfinite(v)]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.asarray(v).view(np.uint32)) & 1))


def test_fma_rounds_once():
    op = _fma_op()
    op.verify_op()
    # c + 2^-24 - 2^-70 rounds to the float64 midpoint c + 2^-24, which ties to even
    # (up); the exact value is below it: one rounding gives c.
    a, b = np.float32(1 + 2.0 ** -23), np.float32(2.0 ** -24 * (1 - 2.0 ** -23))
    c = np.float32(1 + 2.0 ** -23)
    (y,) = eval_op(op, [a, b, c])
    assert y == c and y == _exact_fma(a, b, c)
    assert np.float32(np.float64(a) * np.float64(b) + np.float64(c)) != c  # double rounding
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(3000).astype(np.float32) *
          np.float32(2.0) ** rng.integers(-30, 30, 3000).astype(np.float32)
          for _ in range(3)]
    (ys,) = eval_op(_fma_op(TensorType((DYN,), f32)), xs)
    want = [_exact_fma(*t) for t in zip(*xs, strict=True)]
    np.testing.assert_array_equal(ys, np.array(want, np.float32))


def test_fma_is_f32_or_f64_and_only_with_the_option():
    _fma_op(f64).verify_op()  # the matmul's steps (lower_matmul.multiply_add)
    with pytest.raises(Exception, match="f32 and f64"):
        _fma_op(f16).verify_op()
    for fma in (False, True):
        module = ModuleOp.empty()
        fn = FuncOp.empty("f", [f32], [f32], ["x"])
        b = Builder.at_end(fn.entry)
        b.insert(func.ReturnOp([b.insert(m.TanhOp.new(fn.entry.args[0])).result]))
        module.append(fn)
        run_pipeline(module, ["expand-math"], {"fma": fma})
        assert ("math.fma" in _names(module)) == fma


def test_f64_fma_reference_semantics_rounds_once():
    """The IR's reference semantics of ``math.fma`` on f64 (exact rationals)."""
    from pyasc.ir.semantics_arith import _fma64

    e = 2.0 ** -30
    assert _fma64(1 + e, 1 - e, -1.0) == -(2.0 ** -60)  # rounded first: 0
    assert _fma64(0.1, 10.0, -1.0) == 2.0 ** -54          # 0.1 * 10 is 1 + 2^-54
    assert str(_fma64(-0.0, 1.0, -0.0)) == "-0.0" and str(_fma64(1.0, -1.0, 1.0)) == "0.0"
    assert _fma64(1e308, 10.0, -1e308) == np.inf and _fma64(-1e308, 10.0, 0.0) == -np.inf
    assert np.isnan(_fma64(np.inf, 0.0, 1.0))


# ------------------------------------------------------------------ one-branch tanh


@pytest.mark.parametrize("fma", [False, True], ids=["mul-add", "fma"])
def test_tanh_is_one_branch(fma):
    """tanh is one formula (one division, no second polynomial joined by a select): no
    compare or select at all, the clamp of |x| is one ``arith.min``; the old form
    computed an odd polynomial and an exp-based formula and selected."""
    module = ModuleOp.empty()
    fn = FuncOp.empty("f", [f32], [f32], ["x"])
    b = Builder.at_end(fn.entry)
    b.insert(func.ReturnOp([b.insert(m.TanhOp.new(fn.entry.args[0])).result]))
    module.append(fn)
    run_pipeline(module, ["expand-math"], {"fma": fma})
    names = [n for n in _names(module) if n not in STRUCTURE and n != "arith.constant"]
    assert names.count("arith.div") == 1 and names.count("arith.min") == 1
    assert "arith.select" not in names and "arith.cmp" not in names
    assert len(names) <= (31 if fma else 43), len(names)  # the old form: 5 selects


@pytest.mark.parametrize("fma", [False, True], ids=["mul-add", "fma"])
def test_erf_is_one_branch(fma):
    """erf is one formula (``1 - e^{-L(|x|)}`` with one polynomial ``L``): no second
    formula joined by a select, the sign copied by bit operations, the clamp of |x| one
    ``arith.min``: no compare or select at all.  The old form computed ``x + x P(x^2)`` and
    ``1 - e^{Q(|x|)}``, selected, and restored the sign with a select (5 of each, 55 ops
    with FMA)."""
    module = ModuleOp.empty()
    fn = FuncOp.empty("f", [f32], [f32], ["x"])
    b = Builder.at_end(fn.entry)
    b.insert(func.ReturnOp([b.insert(m.ErfOp.new(fn.entry.args[0])).result]))
    module.append(fn)
    run_pipeline(module, ["expand-math"], {"fma": fma})
    names = [n for n in _names(module) if n not in STRUCTURE and n != "arith.constant"]
    assert "arith.select" not in names and "arith.cmp" not in names, names
    assert names.count("arith.min") == 1
    assert "math.round" not in names  # one reduction, by the rounding constant
    arithmetic = [n for n in names if n != "arith.bitcast"]  # bitcasts are free
    assert len(arithmetic) <= (39 if fma else 59), len(arithmetic)


@pytest.mark.parametrize("bound", [9.010913, -104.0, 1.0, 3e38, 0.0, -0.0])
def test_min_max_against_a_constant_keep_numpy_semantics(bound):
    """``Val.min``/``max`` against a float constant is ``arith.min``/``max`` (numpy's
    NaN-propagating semantics; the CPU backend drops the NaN test of the constant side,
    so a clamp is one ``minps``/``maxps``): same values as numpy everywhere."""
    from pyasc.ir.passes.mathlib.emit import Emitter
    from pyasc.ir.rewrite import Rewriter

    t = TensorType((DYN,), f32)
    for kind, ref in (("min", np.minimum), ("max", np.maximum)):
        fn = FuncOp.empty("f", [t], [t], ["x"])
        b = Builder.at_end(fn.entry)
        ret = b.insert(func.ReturnOp([fn.entry.args[0]]))
        y = getattr(Emitter(Rewriter(ret)).wrap(fn.entry.args[0]), kind)(bound)
        ret.set_operand(0, y.value)
        module = ModuleOp.empty()
        module.append(fn)
        assert f"arith.{kind}" in _names(module) and "arith.select" not in _names(module)
        x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, bound, -bound, 1e-40, 5.0],
                     np.float32)
        got = Interpreter(module).call("f", x)[0]
        np.testing.assert_array_equal(got, ref(x, np.float32(bound)))
        assert np.array_equal(np.signbit(got), np.signbit(ref(x, np.float32(bound))))

