"""``arith.cast`` between every pair of dtypes and every ``math`` op, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from llvmkit import both, compile_ir, elementwise, outer_pairs

from pyasc.ir.ops import arith
from pyasc.ir.ops import math as m
from pyasc.ir.types import SCALAR_TYPES

TYPES = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "f32", "f64",
         "index"]


def _np(name: str) -> np.dtype:
    return np.dtype(np.int64) if name == "index" else SCALAR_TYPES[name].to_numpy()


def _source_values(name: str) -> np.ndarray:
    """Values of type ``name`` whose conversion numpy defines on every platform."""
    t = SCALAR_TYPES[name]
    if t.is_bool:
        return np.array([False, True])
    if t.is_float:
        vals = [0.0, -0.0, 0.5, 1.9, 2.5, 100.7, 127.0, -1.0, -3.7, -128.0, 65504.0,
                1e-5, np.inf, -np.inf, np.nan]
        return np.array(vals, dtype=_np(name))
    info = np.iinfo(_np(name))
    vals = [0, 1, 7, 127, 200, 255, 256, 65535, 70000, int(info.max)]
    if info.min < 0:
        vals += [-1, -128, -129, -40000, int(info.min)]
    return np.array([v for v in vals if info.min <= v <= info.max], dtype=_np(name))


def _defined(src: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Where numpy's float -> int conversion is defined (finite, in range)."""
    if src.dtype.kind != "f" or dst.kind not in "iu":
        return np.ones(src.shape, bool)
    info = np.iinfo(dst)
    with np.errstate(invalid="ignore"):
        return np.isfinite(src) & (np.trunc(src.astype(np.float64)) >= info.min) \
            & (np.trunc(src.astype(np.float64)) <= info.max)


@pytest.mark.parametrize("src", TYPES)
def test_cast_to_every_type(src):
    targets = [SCALAR_TYPES[d] for d in TYPES if d != src]
    module = elementwise([SCALAR_TYPES[src]],
                         lambda b, xs: [b.insert(arith.CastOp.new(xs[0], t)).result
                                        for t in targets])
    x = _source_values(src)
    outs = both(compile_ir(module), [x])
    for t, out in zip(targets, outs, strict=True):
        with np.errstate(all="ignore"):
            want = x.astype(_np(t.name))
        ok = _defined(x, _np(t.name))
        np.testing.assert_array_equal(out[ok], want[ok], err_msg=f"{src} -> {t}")


def test_float_to_int_out_of_range_is_x86_indefinite():
    module = elementwise([SCALAR_TYPES["f64"]],
                         lambda b, xs: [b.insert(arith.CastOp.new(xs[0], SCALAR_TYPES[n])).result
                                        for n in ("i32", "i64", "ui8")])
    x = np.array([np.nan, 1e20, -1e20, 3e9])
    i32, i64, u8 = compile_ir(module)([x])
    assert (i32 == np.iinfo(np.int32).min).all()
    np.testing.assert_array_equal(i64[:3], np.iinfo(np.int64).min)
    assert i64[3] == 3_000_000_000
    np.testing.assert_array_equal(u8, 0)


UNARY = {
    m.ExpOp: np.exp, m.Exp2Op: np.exp2, m.Expm1Op: np.expm1, m.LogOp: np.log,
    m.Log2Op: np.log2, m.Log10Op: np.log10, m.Log1pOp: np.log1p, m.SqrtOp: np.sqrt,
    m.RsqrtOp: lambda x: 1 / np.sqrt(x), m.TanhOp: np.tanh, m.SinOp: np.sin, m.CosOp: np.cos,
    m.TanOp: np.tan, m.FloorOp: np.floor, m.CeilOp: np.ceil, m.RoundOp: np.round,
    m.TruncOp: np.trunc, m.SigmoidOp: lambda x: 1 / (1 + np.exp(-x)), m.AbsOp: np.abs,
    m.SignOp: np.sign, m.IsNanOp: np.isnan, m.IsInfOp: np.isinf, m.IsFiniteOp: np.isfinite,
}
_ERF = np.vectorize(__import__("math").erf, otypes=[np.float64])
TOLERANCE = {"f16": 1e-3, "f32": 2e-6, "f64": 1e-14}


@pytest.mark.parametrize("name", ["f16", "f32", "f64"])
def test_unary_math(name):
    t = SCALAR_TYPES[name]
    ops = [*UNARY, m.ErfOp]
    module = elementwise([t], lambda b, xs: [b.insert(cls.new(xs[0])).result for cls in ops])
    x = np.concatenate([np.linspace(-6, 6, 61), [0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0, 1e-4,
                                                 100.0, np.inf, -np.inf, np.nan]]).astype(_np(name))
    outs = both(compile_ir(module), [x])
    with np.errstate(all="ignore"):
        for cls, out in zip(ops, outs, strict=True):
            fn = UNARY.get(cls)
            want = fn(x) if fn else _ERF(x.astype(np.float64)).astype(x.dtype)
            np.testing.assert_allclose(out, want, rtol=TOLERANCE[name], atol=0,
                                       err_msg=f"{cls.name} on {name}")


def test_rounding_is_half_to_even_and_f16_is_rounded_after_each_op():
    t = SCALAR_TYPES["f16"]
    module = elementwise([t, t], lambda b, xs: [
        b.insert(m.RoundOp.new(xs[0])).result,
        b.insert(arith.AddOp.new(b.insert(arith.MulOp.new(xs[0], xs[1])).result, xs[1])).result])
    x = np.array([0.5, 1.5, 2.5, -0.5, 3.3, 1000.0], np.float16)
    y = np.array([0.1, 0.3, 0.7, 1e-3, 5.5, 60.0], np.float16)
    rounded, fma = compile_ir(module)([x, y])
    np.testing.assert_array_equal(rounded, np.round(x))
    np.testing.assert_array_equal(fma, x * y + y)  # numpy rounds the product first


@pytest.mark.parametrize("name", ["i8", "i32", "ui16", "i64", "f32", "f64"])
def test_pow(name):
    t = SCALAR_TYPES[name]
    module = elementwise([t, t], lambda b, xs: [b.insert(m.PowOp.new(*xs)).result])
    kernel = compile_ir(module)
    if t.is_float:
        a, e = outer_pairs([0.0, 0.5, 1.0, -1.0, 2.0, -3.0, 10.0, np.inf, np.nan], _np(name))
        (got,) = kernel([a, e])
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got, np.power(a, e), rtol=1e-6)
        return
    info = np.iinfo(_np(name))
    vals = [v for v in (0, 1, 2, 3, -1, -2, 7, 100) if info.min <= v <= info.max]
    a, e = outer_pairs(vals, _np(name))
    (got,) = kernel([a, e])
    for x, y, g in zip(a.tolist(), e.tolist(), got.tolist(), strict=True):
        want = _int_pow(x, y, _np(name))
        assert g == want, (x, y, g, want)


def _int_pow(x: int, y: int, dtype: np.dtype) -> int:
    if y < 0:  # numpy raises; the IR defines 0 except for bases 1 and -1
        return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
    bits = 8 * dtype.itemsize
    r = pow(x, y, 2 ** bits)  # numpy wraps around
    return r - 2 ** bits if dtype.kind == "i" and r >= 2 ** (bits - 1) else r


def test_integer_abs_and_sign():
    t = SCALAR_TYPES["i8"]
    module = elementwise([t], lambda b, xs: [b.insert(m.AbsOp.new(xs[0])).result,
                                             b.insert(m.SignOp.new(xs[0])).result])
    x = np.array([-128, -5, 0, 5, 127], np.int8)
    got_abs, got_sign = compile_ir(module)([x])
    np.testing.assert_array_equal(got_abs, np.abs(x))
    np.testing.assert_array_equal(got_sign, np.sign(x))
