"""``reduce-to-memory``: a scalar accumulator stored once per iteration becomes an
accumulation in the stored element (initial values stored first, in a loop of their
own), so that ``layout`` interchanges the loops; results bit-identical (exact
comparisons, the pass on and off).  Shapes it must leave alone keep their carried
accumulator."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand
from loop_kernels import conv_direct

from pyasc import hybrid
from pyasc.ir import parse_module


@hybrid
def column_sums_with_bias(x, bias):
    out = np.zeros(x.shape[1], x.dtype)
    for j in range(x.shape[1]):
        acc = bias[j]
        for i in range(x.shape[0]):
            acc = x[i, j] + acc
        out[j] = acc
    return out


@hybrid
def triangular(x):
    n = x.shape[0]
    out = np.empty(n, np.float32)
    for i in range(n):
        acc = np.float32(0.0)
        for j in range(i + 1):
            acc += x[j, i]
        out[i] = acc
    return out


@hybrid
def into_a_parameter(x, out):
    for i in range(x.shape[0]):
        acc = np.float32(0.0)
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc
    return out


@hybrid
def same_element_every_time(x):
    out = np.zeros(2, np.float32)
    for i in range(x.shape[0]):
        acc = np.float32(0.0)
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[0] = acc
    return out


@hybrid
def reads_the_output(x):
    out = np.zeros(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        acc = np.float32(0.0)
        for j in range(x.shape[1]):
            acc += x[i, j] * out[i - 1]
        out[i] = acc + 1
    return out


@hybrid
def accumulator_used_twice(x):
    out = np.zeros(x.shape[0], np.float32)
    twice = np.zeros(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        acc = np.float32(0.0)
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc
        twice[i] = acc * 2
    return out, twice


@hybrid
def wider_accumulator(x):
    out = np.zeros(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        acc = np.float64(0.0)  # a float64 sum, rounded when stored: not rewritten
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc
    return out


@hybrid
def product(x):
    out = np.zeros(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        acc = np.float32(1.0)
        for j in range(x.shape[1]):
            acc *= x[i, j]
        out[i] = acc
    return out


@hybrid
def fir(x, w):
    n, k = x.shape[0], w.shape[0]
    y = np.empty(n - k + 1, np.float32)
    for i in range(n - k + 1):
        acc = np.float32(0.0)
        for t in range(k):
            acc += x[i + t] * w[t]
        y[i] = acc
    return y


def _carried(fn, *args) -> int:
    """Loops carrying a float value in the compiled kernel's loop IR."""
    module = parse_module(fn.kernel(*args).loop_ir)
    return sum(1 for op in module.walk() if op.name == "loop.for"
               and any(r.type.is_float for r in op.result_values))


def test_direct_convolution_accumulates_in_memory_and_interchanges() -> None:
    # 16 channels x 3 x 3: a window too large for LLVM to unroll whole
    x, w = rand((1, 16, 7, 9), "float32"), rand((3, 16, 3, 3), "float32", 1)
    assert _carried(conv_direct, x, w) == 0
    text = conv_direct.kernel(x, w).loop_ir
    # the output's last axis is now innermost: its store indexes the innermost loop
    body = [line.strip() for line in text.splitlines()]
    store = next(k for k, line in enumerate(body) if line.startswith('"mem.store"(%') and
                 "arith" not in line and body[k - 1].startswith("%") and
                 '"arith.add"' in body[k - 1])
    innermost_iv = next(line for line in reversed(body[:store]) if line.startswith("^bb0("))
    iv = innermost_iv[len("^bb0("):].split(":")[0]
    assert body[store].split(")")[0].endswith(iv), (body[store], iv)
    check(conv_direct, x, w)


def test_initial_value_from_an_input_and_sum_operands_swapped() -> None:
    x, bias = rand((300, 9), "float32"), rand((9,), "float32", 1)
    assert _carried(column_sums_with_bias, x, bias) == 0
    check(column_sums_with_bias, x, bias)


def test_triangular_reduction_is_rewritten_and_exact() -> None:
    x = rand((12, 12), "float32")
    assert _carried(triangular, x) == 0
    check(triangular, x)


@pytest.mark.parametrize("fn", [same_element_every_time, reads_the_output,
                                accumulator_used_twice, wider_accumulator, product],
                         ids=lambda f: f.__name__)
def test_shapes_left_alone(fn) -> None:
    x = rand((5, 6), "float32")
    assert _carried(fn, x) >= 1
    check(fn, x)


def test_a_parameter_may_alias_an_input() -> None:
    x = rand((5, 6), "float32")
    assert _carried(into_a_parameter, x, np.zeros(5, np.float32)) >= 1
    check(into_a_parameter, x, np.zeros(5, np.float32))


def test_a_small_static_window_keeps_its_accumulator_in_a_register() -> None:
    """A 15-tap FIR is unrolled whole by LLVM, which vectorizes the output loop with the
    accumulator in a register: in memory it was 3x slower (the output streamed once per
    tap).  A long filter is rewritten.  (Sizes kept small: the interpreter runners step
    through every tap of every output, 41 s at 1001 x 400.)"""
    x = rand((301,), "float32")
    short, long = rand((15,), "float32", 1), rand((160,), "float32", 2)
    assert _carried(fir, x, short) == 1
    assert _carried(fir, x, long) == 0
    check(fir, x, short)
    check(fir, x, long)
