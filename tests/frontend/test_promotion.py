"""Type promotion follows numpy 2 (NEP 50): checked against numpy itself over every pair
of supported dtypes, with arrays, numpy scalars and Python scalars."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from diff import DTYPES, MATH, check, rand

from pyasc import errors, hybrid
from pyasc.frontend.promotion import join_types, resolve_ufunc, result_type
from pyasc.frontend.values import Scalar, Tensor
from pyasc.ir.core import Value
from pyasc.ir.types import TensorType, f64, i1, index, scalar_from_numpy

UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder,
          np.power, np.maximum, np.less, np.equal, np.bitwise_and, np.left_shift,
          np.logical_and]
PY_SAMPLES = {"int": 3, "float": 2.5, "bool": True}


def array_of(dtype: str) -> Tensor:
    return Tensor(Value(TensorType((2,), scalar_from_numpy(np.dtype(dtype)))))


def numpy_result(ufunc, a, b) -> np.dtype | None:
    try:
        with np.errstate(all="ignore"):
            return ufunc(a, b).dtype
    except TypeError:
        return None


def pyasc_result(ufunc, a, b) -> np.dtype | None:
    try:
        return resolve_ufunc(ufunc, [a, b])[1].to_numpy()
    except errors.TypeMismatchError:
        return None


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_array_array_pairs_match_numpy(ufunc):
    for da, db in itertools.product(DTYPES, DTYPES):
        expected = numpy_result(ufunc, np.ones(2, da), np.ones(2, db))
        assert pyasc_result(ufunc, array_of(da), array_of(db)) == expected, (da, db)


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_array_python_scalar_pairs_match_numpy(ufunc):
    for da, (kind, sample) in itertools.product(DTYPES, PY_SAMPLES.items()):
        expected = numpy_result(ufunc, np.ones(2, da), sample)
        weak = Scalar(Value({"int": index, "float": f64, "bool": i1}[kind]), weak=True)
        for operand in (sample, weak):  # compile-time and run-time Python scalars
            assert pyasc_result(ufunc, array_of(da), operand) == expected, (da, kind)


@pytest.mark.parametrize("ufunc", [np.add, np.true_divide, np.less], ids=lambda u: u.__name__)
def test_numpy_scalar_pairs_match_numpy(ufunc):
    for da, db in itertools.product(DTYPES, DTYPES):
        a = Scalar(Value(scalar_from_numpy(np.dtype(da))))
        b = Scalar(Value(scalar_from_numpy(np.dtype(db))))
        expected = numpy_result(ufunc, np.ones((), da)[()], np.ones((), db)[()])
        assert pyasc_result(ufunc, a, b) == expected, (da, db)


def test_result_type_and_joins():
    f32 = scalar_from_numpy(np.dtype("float32"))
    assert result_type([array_of("float32"), 1.5]) == (f32, False)
    assert result_type([3, 2.5]) == (f64, True)
    assert join_types((index, True), (f32, False)) == (f32, False)
    assert join_types((index, True), (f64, True)) == (f64, True)
    assert join_types((i1, True), (index, True)) == (index, True)


def test_out_of_range_python_int_is_an_error_like_numpy():
    with pytest.raises(errors.TypeMismatchError, match="out of bounds for uint8"):
        resolve_ufunc(np.add, [array_of("uint8"), -1])
    with pytest.raises(OverflowError):
        np.add(np.ones(2, np.uint8), -1)


@hybrid
def add_scalar(x, s):
    return x + s, s + x, x / s, x > s, x * 2, x - 1.5


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
@pytest.mark.parametrize("scalar", [3, 0.5, True], ids=["int", "float", "bool"])
def test_compiled_array_scalar_ops(dtype, scalar):
    with np.errstate(all="ignore"):
        check(add_scalar, rand((5,), dtype, low=1, high=9), scalar)


@hybrid
def add_arrays(x, y):
    return x + y, x * y, x < y, np.maximum(x, y)


@pytest.mark.parametrize("da,db", [("int8", "uint8"), ("int32", "float32"), ("uint64", "int64"),
                                   ("float16", "int16"), ("bool", "int8"),
                                   ("uint32", "float16"), ("int64", "float64")])
def test_compiled_mixed_array_ops(da, db):
    check(add_arrays, rand((4,), da, low=0, high=9), rand((4,), db, 3, low=0, high=9))


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.lt, operator.eq, operator.and_, operator.pow]


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (2.5, 2), (True, 3), (True, False),
                                 (1.5, -0.5)])
def test_python_scalar_operators_follow_python(a, b):
    for op in OPERATORS:
        if op is operator.and_ and (isinstance(a, float) or isinstance(b, float)):
            continue
        if op in (operator.truediv, operator.floordiv, operator.mod) and b == 0:
            continue  # documented: run-time division by zero follows numpy, no exception
        fn = hybrid(lambda_apply(op))
        check(fn, a, b, rtol=MATH)


def lambda_apply(op):
    table = {operator.add: add_, operator.sub: sub_, operator.mul: mul_,
             operator.truediv: div_, operator.floordiv: fdiv_, operator.mod: mod_,
             operator.lt: lt_, operator.eq: eq_, operator.and_: and_, operator.pow: pow_}
    return table[op]


def add_(a, b):
    return a + b


def sub_(a, b):
    return a - b


def mul_(a, b):
    return a * b


def div_(a, b):
    return a / b


def fdiv_(a, b):
    return a // b


def mod_(a, b):
    return a % b


def lt_(a, b):
    return a < b


def eq_(a, b):
    return a == b


def and_(a, b):
    return a & b


def pow_(a, b):
    return a ** b
