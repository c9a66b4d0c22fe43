"""Every ``arith`` op on every dtype, compiled, against numpy on edge values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from llvmkit import both, compile_ir, elementwise, outer_pairs

from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith
from pyasc.ir.types import SCALAR_TYPES, ScalarType

INT_TYPES = ["i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "index"]
FLOAT_TYPES = ["f16", "f32", "f64"]

BINARY = {  # op class -> (numpy function, applies to)
    arith.AddOp: (np.add, "numeric"), arith.SubOp: (np.subtract, "numeric"),
    arith.MulOp: (np.multiply, "numeric"), arith.DivOp: (np.true_divide, "float"),
    arith.FloorDivOp: (np.floor_divide, "numeric"), arith.RemOp: (np.remainder, "numeric"),
    arith.MaxOp: (np.maximum, "numeric"), arith.MinOp: (np.minimum, "numeric"),
    arith.AndOp: (np.bitwise_and, "logical"), arith.OrOp: (np.bitwise_or, "logical"),
    arith.XorOp: (np.bitwise_xor, "logical"), arith.ShlOp: (np.left_shift, "integer"),
    arith.ShrOp: (np.right_shift, "integer"),
}
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


def _applies(kind: str, t: ScalarType) -> bool:
    return {"numeric": not t.is_bool, "float": t.is_float, "integer": t.is_int,
            "logical": t.is_int or t.is_bool}[kind]


def edge_values(name: str) -> list:
    t = SCALAR_TYPES[name]
    if t.is_bool:
        return [False, True]
    if t.is_float:
        info = np.finfo(t.to_numpy())
        return [0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 3.0, -7.0, 0.1, float(info.max),
                float(info.tiny), float("inf"), float("-inf"), float("nan")]
    info = np.iinfo(np.int64 if t.is_index else t.to_numpy())
    w = t.bitwidth
    vals = {0, 1, 2, 3, 7, w - 1, w, w + 1, int(info.max), int(info.max) - 1, int(info.min)}
    if info.min < 0:
        vals |= {-1, -3, -7, int(info.min) + 1}
    return sorted(vals)


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(np.int64) if name == "index" else SCALAR_TYPES[name].to_numpy()


def _all_ops_kernel(name: str):
    """One kernel computing every applicable binary op, cmp, select, neg and not."""
    t = SCALAR_TYPES[name]
    expected = []

    def body(b, xs):
        a, c = xs
        outs = []
        for cls, (fn, kind) in BINARY.items():
            if _applies(kind, t):
                outs.append(b.insert(cls.new(a, c)).result)
                expected.append(fn if not t.is_bool else
                                {arith.AndOp: np.logical_and, arith.OrOp: np.logical_or,
                                 arith.XorOp: np.logical_xor}[cls])
        for pred, fn in CMP.items():
            outs.append(b.insert(arith.CmpOp.new(pred, a, c)).result)
            expected.append(fn)
        lt = b.insert(arith.CmpOp.new("lt", a, c)).result
        outs.append(b.insert(arith.SelectOp.new(lt, a, c)).result)
        expected.append(lambda x, y: np.where(x < y, x, y))
        if not t.is_bool:
            outs.append(b.insert(arith.NegOp.new(a)).result)
            expected.append(lambda x, y: np.negative(x))
        if t.is_int or t.is_bool:
            outs.append(b.insert(arith.NotOp.new(a)).result)
            expected.append(lambda x, y: np.invert(x))
        return outs

    module = elementwise([t, t], body)
    return module, expected


@pytest.mark.parametrize("name", ["i1", *INT_TYPES, *FLOAT_TYPES])
def test_every_op_on_edge_values(name):
    module, expected = _all_ops_kernel(name)
    kernel = compile_ir(module)
    a, b = outer_pairs(edge_values(name), _np_dtype(name))
    got = both(kernel, [a, b])
    with np.errstate(all="ignore"):
        for fn, out in zip(expected, got, strict=True):
            want = fn(a, b)
            np.testing.assert_array_equal(out, want, err_msg=f"{name}: {fn}")
            if out.dtype.kind == "f" and fn not in (np.maximum, np.minimum):
                # max/min of +-0: numpy's SIMD and scalar loops differ, so any is fine
                same_sign = np.signbit(out) == np.signbit(want)
                assert (same_sign | np.isnan(want)).all(), f"{name}: {fn} zero signs"


@pytest.mark.parametrize("name", ["i32", "f32"])
def test_matches_the_ir_interpreter(name):
    module, _ = _all_ops_kernel(name)
    kernel = compile_ir(module)
    a, b = outer_pairs(edge_values(name), _np_dtype(name))
    with np.errstate(all="ignore"):
        want = Interpreter(module).call("f", a, b)
    for out, ref in zip(kernel([a, b]), want, strict=True):
        np.testing.assert_array_equal(out, ref)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_int32_and_float64_values(data):
    for name in ("i32", "f64"):
        dt = _np_dtype(name)
        arrays = hnp.arrays(dt, st.integers(1, 40), elements=hnp.from_dtype(dt))
        a = data.draw(arrays)
        b = data.draw(hnp.arrays(dt, a.shape, elements=hnp.from_dtype(dt)))
        module, expected = _KERNELS[name]
        got = _COMPILED[name]([a, b])
        with np.errstate(all="ignore"):
            for fn, out in zip(expected, got, strict=True):
                np.testing.assert_array_equal(out, fn(a, b))


_KERNELS = {name: _all_ops_kernel(name) for name in ("i32", "f64")}
_COMPILED = {name: compile_ir(m) for name, (m, _) in _KERNELS.items()}


def test_constants_of_every_type():
    def body(b, xs):
        return [b.insert(arith.ConstantOp.new(v, SCALAR_TYPES[n])).result
                for n, v in (("i8", -5), ("ui16", 65535), ("i64", -(2 ** 63)), ("f16", 0.1),
                             ("f32", 1e-3), ("f64", -2.5), ("i1", True), ("index", 7))]

    kernel = compile_ir(elementwise([SCALAR_TYPES["f32"]], body))
    outs = kernel([np.zeros(2, np.float32)])
    want = [np.int8(-5), np.uint16(65535), np.int64(-(2 ** 63)), np.float16(0.1),
            np.float32(1e-3), -2.5, True, 7]
    for out, w in zip(outs, want, strict=True):
        np.testing.assert_array_equal(out, np.full(2, w, dtype=out.dtype))
        assert out[0] == w
