"""Differential tests of the passes: the interpreter gives bit-identical results (NaN
equal to NaN, same dtype, same sign of zero, same final contents of written buffers)
before and after each pass, on random modules and random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from irgen import BINARY, modules

from pyasc.ir import Builder, Value, parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith, func
from pyasc.ir.ops.arith import _kind_ok
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import DEFAULT_PIPELINE, run_pipeline
from pyasc.ir.types import SCALAR_TYPES, ScalarType, TensorType, i1

PIPELINES = [["canonicalize"], ["cse"], ["dce"], DEFAULT_PIPELINE]


def _fresh(arg: object) -> object:
    """A copy of an argument with the same memory layout (views stay strided)."""
    if not isinstance(arg, np.ndarray):
        return arg
    if arg.flags.c_contiguous:
        return arg.copy()
    base = np.empty(tuple(2 * d for d in arg.shape), arg.dtype)
    view = base[tuple(slice(None, None, 2) for _ in arg.shape)]
    view[...] = arg
    return view


def _run(module, args: list) -> tuple[list, list]:
    inputs = [_fresh(a) for a in args]
    return Interpreter(module).call("main", *inputs), inputs


def assert_identical(a: object, b: object) -> None:
    """Same Python type, dtype, shape and bits (any NaN equals any NaN)."""
    assert type(a) is type(b), (type(a), type(b))
    x, y = np.asarray(a), np.asarray(b)
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        assert np.array_equal(nan, np.isnan(y)), (x, y)
        assert np.array_equal(x[~nan], y[~nan]), (x, y)
        assert np.array_equal(np.signbit(x[~nan]), np.signbit(y[~nan])), (x, y)
    else:
        assert np.array_equal(x, y), (x, y)


@pytest.mark.parametrize("pipeline", PIPELINES, ids=",".join)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=modules(executable=True))
def test_passes_preserve_results(pipeline: list[str], gen) -> None:
    before_text = str(gen.module)
    expected, expected_args = _run(gen.module, gen.args)
    run_pipeline(gen.module, pipeline)
    after_text = str(gen.module)
    event("changed" if after_text != before_text else "unchanged")
    got, got_args = _run(gen.module, gen.args)
    assert len(got) == len(expected)
    for a, b in zip(expected + expected_args, got + got_args, strict=True):
        assert_identical(a, b)
    assert str(parse_module(after_text)) == after_text


def test_assert_identical_sees_signed_zero_and_dtype() -> None:
    with pytest.raises(AssertionError):
        assert_identical(np.float32(0.0), np.float32(-0.0))
    with pytest.raises(AssertionError):
        assert_identical(np.float32(1.0), np.float64(1.0))
    with pytest.raises(AssertionError):
        assert_identical(np.array([1, 2]), np.array([1, 3]))
    assert_identical(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))


# ---------------------------------------------------------------------------- edge values
# Random modules rarely combine "x + 0.0" with an x that holds -0.0, so every binary op
# is also run exhaustively against the constants identities look for, on inputs holding
# every edge value of the type.

EDGE_ELEMS = ["i1", "i8", "ui8", "i32", "index", "ui64", "f16", "f32", "f64"]
EDGE_CONSTANTS = {"bool": [True, False], "int": [0, 1, -1, 2],
                  "float": [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, 2.0]}


def _edge_input(elem: ScalarType) -> np.ndarray:
    dt = elem.to_numpy()
    if dt.kind == "b":
        return np.array([True, False])
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.5, np.nan, np.inf, -np.inf,
                         np.finfo(dt).max, np.finfo(dt).tiny], dt)
    info = np.iinfo(dt)
    return np.array(sorted({0, 1, 2, 7, info.max, info.min, info.max - 1,
                            max(info.min, -1), max(info.min, -8)}), dt)


def _edge_module(elem: ScalarType, build) -> tuple[ModuleOp, np.ndarray]:
    x = _edge_input(elem)
    t = TensorType(x.shape, elem)
    mod, fn = ModuleOp.empty(), FuncOp.empty("main", [t], [])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    results = build(b, fn.entry.args[0])
    b.insert(func.ReturnOp(results))
    fn.set_result_types([v.type for v in results])
    return mod, x


def _binary_edges(b: Builder, x: Value) -> list[Value]:
    elem = x.type.element
    kind = "bool" if elem.is_bool else ("float" if elem.is_float else "int")
    consts = [c for c in EDGE_CONSTANTS[kind] if c >= 0 or not elem.is_unsigned]
    out = []
    for cls in BINARY:
        if not _kind_ok(elem, cls.allowed):
            continue
        out.append(b.insert(cls.new(x, x)).result)
        for c in consts:
            k = b.insert(arith.ConstantOp.new(c, elem)).result
            out += [b.insert(cls.new(x, k)).result, b.insert(cls.new(k, x)).result]
    return out


def _unary_edges(b: Builder, x: Value) -> list[Value]:
    """Involutions, selects with constant/equal operands, and every cast pair."""
    elem = x.type.element
    out = [b.insert(cls.new(b.insert(cls.new(x)).result)).result
           for cls in (arith.NegOp, arith.NotOp) if _kind_ok(elem, cls.allowed)]
    cond = b.insert(arith.CmpOp.new("lt", x, x)).result
    for c in (True, False):
        k = b.insert(arith.ConstantOp.new(c, i1)).result
        out.append(b.insert(arith.SelectOp.new(k, x, cond if elem.is_bool else x)).result)
    for mid in EDGE_ELEMS:
        first = b.insert(arith.CastOp.new(x, SCALAR_TYPES[mid])).result
        out += [b.insert(arith.CastOp.new(first, SCALAR_TYPES[dst])).result
                for dst in EDGE_ELEMS]
    return out


@pytest.mark.parametrize("build", [_binary_edges, _unary_edges], ids=["binary", "unary"])
@pytest.mark.parametrize("elem", EDGE_ELEMS)
def test_canonicalize_on_edge_values(elem: str, build) -> None:
    mod, x = _edge_module(SCALAR_TYPES[elem], build)
    expected = Interpreter(mod).call("main", x)
    run_pipeline(mod, DEFAULT_PIPELINE)
    got = Interpreter(mod).call("main", x)
    for a, b in zip(expected, got, strict=True):
        assert_identical(a, b)
