"""Differential tests: inlined @hybrid callees, closures, module globals and builtins."""

from __future__ import annotations

import math
from math import sqrt as math_sqrt

import numpy as np
import pytest
from diff import MATH, ON_DEVICE, SUM, check, rand
from numpy import exp as np_exp

from pyasc import fusion_scope, hybrid

SCALE = 3
OFFSETS = (1, 2.5)
DTYPE = np.float32
KERNEL = np.array([0.25, 0.5, 0.25])


@hybrid
def scaled(x, factor=2):
    return x * factor + OFFSETS[0]


@hybrid
def two_results(x):
    return x.min(), x.max()


@hybrid
def write_first(buf, value):
    buf[0] = value


@hybrid
def caller(x):
    y = scaled(x)
    z = scaled(x, factor=SCALE)
    lo, hi = two_results(x)
    out = np.zeros_like(x)
    write_first(out, hi)
    return y, z, lo, hi, out, x.astype(DTYPE), math.pi * SCALE


def test_inlined_callees_and_globals():
    check(caller, rand((5,), "float64"))


@hybrid
def uses_global_array(x):
    return np.convolve_free(x) if False else x[:3] * KERNEL


def test_small_global_arrays_are_constants():
    check(uses_global_array, rand((4,), "float64"))


def make_closure(power):
    @hybrid
    def closure(x):
        return x ** power + SCALE
    return closure


@pytest.mark.parametrize("power", [1, 2, 3])
def test_closures_over_local_values(power):
    check(make_closure(power), rand((3,), "float64"), rtol=MATH)


@hybrid
def compile_time_args(x, axis, keep):
    return np.sum(x, axis=axis, keepdims=keep)


@hybrid
def passes_constants(x):
    return compile_time_args(x, 1, True), compile_time_args(x, -2, False)


def test_compile_time_arguments_propagate_into_callees():
    check(passes_constants, rand((3, 4)), rtol=ON_DEVICE(SUM(4)))


@hybrid
def early_exit_callee(x, n):
    for i in range(n):
        if x[i] > 0:
            return i
    return -1


@hybrid
def calls_early_exit(x):
    return early_exit_callee(x, x.shape[0]) + 1


def test_callee_with_early_return_inside_a_loop():
    check(calls_early_exit, np.array([-1.0, -2.0, 3.0]))
    check(calls_early_exit, np.array([-1.0]))


@hybrid
def fused(x, y):
    with fusion_scope():
        a = x * 2
        b = a + y
        _scratch = a * 3
    return b + 1


def test_fusion_scope_block():
    check(fused, rand((4,)), rand((4,), seed=1))
    assert '"fusion.scope"' in fused.ir(rand((4,)), rand((4,)), optimized=False)


@hybrid
def varargs(*xs):
    total = xs[0] * 0
    for x in xs:
        total = total + x
    return total, len(xs)


def test_star_args_are_tuples():
    check(varargs, rand((2,)), rand((2,), seed=1), rand((2,), seed=2))


@hybrid
def tuple_param(x, size):
    h, w = size
    return x[:h, :w], h * w


def test_tuple_parameters_are_flattened():
    check(tuple_param, rand((5, 5)), (2, 3))
    assert "%size_0: index, %size_1: index" in tuple_param.ir(rand((5, 5)), (2, 3))


@hybrid
def imported_functions(x, f):
    return np_exp(x), math_sqrt(f)


def test_functions_imported_from_numpy_and_math():
    check(imported_functions, rand((3,)), 2.0, rtol=MATH)
