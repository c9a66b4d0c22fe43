"""Differential tests: the numpy registry (every function family, with ``axis=``,
``keepdims=``, ``dtype=`` and ``out=`` where numpy has them)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from diff import EXACT, MATH, SUM, check, rand

from pyasc import hybrid

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # var of 1 element...

TRANSCENDENTAL = {"exp", "log", "tanh", "sin", "cos", "log2", "log10", "exp2", "log1p",
                  "expm1", "tan"}
UNARY = ["exp", "log", "sqrt", "tanh", "sin", "cos", "floor", "ceil", "abs", "square",
         "negative", "sign", "log2", "log10", "exp2", "log1p", "expm1", "isnan", "isinf",
         "isfinite", "logical_not", "rint", "trunc", "tan", "absolute", "positive"]


def _unary(name: str):
    src = f"def u(x):\n    return np.{name}(x), np.{name}(x[0])\n"
    namespace = {"np": np}
    from pyasc.frontend.source import register_source

    filename = f"<generated {name}>"
    register_source(filename, src)
    exec(compile(src, filename, "exec"), namespace)
    return hybrid(namespace["u"])


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_unary_functions(name, dtype):
    x = rand((6,), dtype, low=1, high=9)
    if dtype.startswith("float"):
        x = np.abs(x) + 0.25
    with np.errstate(all="ignore"):
        check(_unary(name), x, rtol=MATH if name in TRANSCENDENTAL else EXACT)


@hybrid
def binary_functions(x, y):
    return (np.maximum(x, y), np.minimum(x, 0), np.add(x, y), np.subtract(x, 1),
            np.multiply(x, y), np.divide(x, y), np.power(x, 2), np.mod(x, 3),
            np.floor_divide(x, 2), np.logical_and(x > 0, y > 0), np.logical_or(x, y),
            np.logical_xor(x > 0, y > 0), np.greater(x, y), np.equal(x, x), np.less(x, 1),
            np.not_equal(x, y), np.true_divide(y, 2))


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
def test_binary_functions(dtype):
    check(binary_functions, rand((3, 4), dtype, low=1), rand((4,), dtype, 2, low=1))


@hybrid
def ufunc_dtype_and_out(x, out):
    a = np.add(x, 1, dtype=np.float32)
    np.multiply(x, 2, out=out)
    return a, out


def test_ufunc_dtype_and_out():
    check(ufunc_dtype_and_out, rand((5,), "int32"), np.zeros(5, np.int32))


@hybrid
def reductions(x):
    return (np.sum(x), np.sum(x, axis=0), x.sum(axis=(0, 1)), np.sum(x, axis=-1, keepdims=True),
            np.prod(x, axis=1), np.max(x), x.min(axis=0), np.amax(x, axis=1, keepdims=True),
            np.amin(x), np.mean(x), x.mean(axis=1), np.var(x), np.var(x, axis=0, ddof=1),
            np.std(x), x.std(axis=-1), np.argmax(x), np.argmin(x, axis=0),
            x.argmax(axis=1, keepdims=True), np.any(x > 0), np.all(x > -5, axis=1),
            np.sum(x, dtype=np.float64), x.any())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "uint16", "bool"])
@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (6, 1)])
def test_reductions(dtype, shape):
    with np.errstate(all="ignore"):
        x = rand(shape, dtype, low=-3, high=4)
        check(reductions, x, rtol=SUM(2 * x.size))  # var/std: two passes of sums


@hybrid
def creation(x, n):
    return (np.zeros(3), np.ones((2, n), dtype=np.int32), np.empty(2).shape,
            np.full((2, 2), 7), np.full(3, 2.5, dtype=np.float32), np.zeros_like(x),
            np.ones_like(x, dtype=np.int8), np.full_like(x, 3), np.empty_like(x).shape,
            np.arange(5), np.arange(2, 9, 3), np.arange(n), np.arange(0.5, 3.0, 0.5),
            np.arange(-5, 6) ** 2, np.zeros(n, dtype=bool), np.arange(n, 0, -2))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_creation(n):
    check(creation, rand((2, 3), "float32"), n)


@hybrid
def conversions(x):
    return (x.astype(np.int32), x.astype("float16"), np.float32(x), np.int64(3),
            np.float32(2.5) * x, np.asarray(x), np.array(x, dtype=np.float64), x.copy(),
            np.copy(x), np.ascontiguousarray(x), x[0, 0].item(), np.float64(x[0, 1]))


def test_conversions():
    check(conversions, rand((2, 3), "float64") * 10)


@hybrid
def shape_functions(x):
    return (x.reshape(-1), x.reshape(2, -1), np.reshape(x, (3, 4)), x.T, np.transpose(x),
            np.transpose(x, (1, 0)), x.transpose(), np.expand_dims(x, 0),
            np.expand_dims(x, (0, -1)), np.squeeze(x[None]), x[None].squeeze(0), np.ravel(x),
            x.flatten(), np.concatenate([x, x]), np.concatenate((x, x), axis=1),
            np.concatenate([x, x], axis=None), np.stack([x, x]), np.stack((x, x), axis=-1),
            np.broadcast_to(x[0], (5, 4)), np.swapaxes(x, 0, 1), x.shape, x.ndim, x.size,
            np.shape(x), np.ndim(x), np.size(x))


def test_shape_functions():
    check(shape_functions, rand((3, 4), "int32"))


@hybrid
def selection(x, lo):
    return (np.where(x > 0, x, 0), np.where(x > lo, 1.5, x), np.where(x > 0, 1, 0),
            np.clip(x, -1, 1), np.clip(x, lo, None), x.clip(0.5, 2.0), np.round(x),
            np.round(x, 2), np.around(x, -1), x.round(1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_where_clip_round(dtype):
    check(selection, rand((3, 5), dtype) * 20, 0.25)


@hybrid
def products(a, b, v):
    return a @ b, np.matmul(a, b), np.dot(a, b), np.dot(v, v), np.dot(a, v[:4]), \
        a.dot(b), np.outer(v, v), np.dot(2, 3.5), v @ v


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_products(dtype):
    check(products, rand((3, 4), dtype), rand((4, 2), dtype, 1), rand((5,), dtype, 2),
          rtol=SUM(5))


@hybrid
def batched(a, b):
    return a @ b


def test_batched_matmul():
    check(batched, rand((2, 3, 4)), rand((4, 5), seed=1), rtol=SUM(4))


@hybrid
def math_module(f, n):
    return (math.sqrt(f), math.exp(n), math.floor(f), math.ceil(-f), math.isnan(f),
            math.pi * 2, math.sqrt(2), math.log(n + 1), math.fabs(-f), math.pow(f, 2))


def test_math_module():
    check(math_module, 2.25, 3, rtol=MATH)


@hybrid
def machine_limits(x):
    eps = np.finfo(x.dtype).eps
    return x + eps, np.iinfo(np.int8).max, x / (x.sum() + np.finfo(np.float32).tiny)


def test_finfo_and_iinfo():
    check(machine_limits, rand((3,)))
    check(machine_limits, rand((3,), "float64"))
