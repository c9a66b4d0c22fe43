"""Differential tests: Python operators, scalars and assignments vs plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DTYPES, FLOATS, INTS, MATH, check, rand
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc import hybrid

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy overflow notes


@hybrid
def arith(x, y):
    return x + y, x - y, x * y, x / y, -x, +y


@hybrid
def int_division(x, y):
    return x // y, x % y, divmod_free(x, y)


@hybrid
def divmod_free(x, y):
    return x - (x // y) * y


@hybrid
def power(x):
    return x ** 2, x ** 3, 2 ** x


@hybrid
def bitwise(x, y):
    return x & y, x | y, x ^ y, ~x, x << 1, x >> 1


@hybrid
def comparisons(x, y):
    return x < y, x <= y, x > y, x >= y, x == y, x != y


@hybrid
def with_python_scalars(x, n, f, b):
    return x + n, x * f, x - b, n * f, n // 2, f / 2, b + b, n / 3


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_arithmetic(dtype):
    x = rand((3, 5), dtype)
    y = np.abs(rand((5,), dtype, seed=1)) + 0.5
    check(arith, x, y.astype(dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic(dtype):
    x = rand((7,), dtype, low=1, high=50)
    y = rand((7,), dtype, seed=3, low=1, high=9)
    check(arith, x, y)
    check(int_division, x, y)


def test_integer_division_signs():
    x = np.array([-7, -3, 0, 3, 7], np.int32)
    check(int_division, x, np.int32(3))
    check(int_division, x, np.int32(-2))
    check(int_division, rand((5,), "float64"), 0.75)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_power(dtype):
    check(power, rand((6,), dtype, low=0, high=4), rtol=MATH)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64"])
def test_bitwise(dtype):
    x, y = rand((9,), dtype, low=0, high=60), rand((9,), dtype, seed=5, low=0, high=60)
    if dtype == "bool":
        check(comparisons, x, y)
        return
    check(bitwise, x, y)


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "float64"])
def test_comparisons(dtype):
    x = rand((4, 3), dtype, low=0)
    check(comparisons, x, rand((3,), dtype, seed=9, low=0))
    check(comparisons, x, x)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "float32"])
def test_python_scalars_are_weak(dtype):
    check(with_python_scalars, rand((5,), dtype, low=0, high=5), 3, 0.5, True)


@hybrid
def scalar_only(n, f):
    a = n * 2 + 1
    b = a / 4
    c = -n // 3
    d = f ** 2 - n
    e = n % 5
    return a, b, c, d, e, n > f, not n, abs(-n), int(f), float(n), bool(n)


def test_python_scalar_semantics():
    check(scalar_only, 7, 2.5)
    check(scalar_only, -4, -1.25)
    check(scalar_only, 0, 0.0)


@hybrid
def numpy_scalars(a, b):
    return a + b, a * 2, a / b, b + 1.5, a > b


@pytest.mark.parametrize("a,b", [(np.float32(1.5), np.float32(2)), (np.int8(3), np.int16(4)),
                                 (np.uint8(200), np.int64(7)), (np.float16(2), np.int32(3))])
def test_numpy_scalars_are_strong(a, b):
    check(numpy_scalars, a, b)


@hybrid
def logic(x, y, n):
    a = n > 1 and n < 5
    b = n < 0 or n > 10
    c = 0 < n < 8
    d = x if n > 2 else y
    e = n > 3 and 7 or -1
    return a, b, c, d, e, not a


@pytest.mark.parametrize("n", [-1, 0, 2, 3, 6, 12])
def test_boolean_logic_and_ternary(n):
    check(logic, rand((3,)), rand((3,), seed=1), n)


@hybrid
def assignments(x):
    a, b = x.shape
    c, (d, e) = a, (b, a)
    f = g = a + b
    first, *rest = (1, 2, 3)
    s = x[0]
    s += 1
    t = 2
    t *= a
    t -= 1
    u = x * 1
    u /= 2
    v = x[0, 0]
    v **= 2
    return c, d, e, f, g, first, rest, s, t, u, v


def test_assignments_and_unpacking():
    check(assignments, rand((3, 4)))


@hybrid
def in_place(x, y):
    x += y
    x *= 2
    x[0] -= 1
    return x


@pytest.mark.parametrize("dtype", FLOATS + ("int32",))
def test_in_place_on_a_parameter(dtype):
    check(in_place, rand((3, 4), dtype), rand((4,), dtype, seed=2))


@hybrid
def unpack_array(x):
    a, b, c = x
    return a + b * c


def test_unpack_an_array_by_rows():
    check(unpack_array, rand((3, 2)))


@hybrid
def expression(x, y, s):
    return (x * y + s) - abs(x - y) * 2, np.maximum(x, y) >= s


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
       drop=st.integers(0, 3), dtype=st.sampled_from([d for d in DTYPES if d != "bool"]),
       s=st.one_of(st.integers(0, 3), st.floats(-2, 2)), seed=st.integers(0, 99))
def test_random_broadcast_expressions(shape, drop, dtype, s, seed):
    x = rand(tuple(shape), dtype, seed, low=0, high=9)
    y = rand(tuple(shape[min(drop, len(shape)):]), dtype, seed + 1, low=0, high=9)
    check(expression, x, y, s)


@hybrid
def tuple_equality(t, u):
    return t == u, t != u, t == (1.0, 2.0), (1, 2) != t, t[0] in u, 2.0 in t, (t, 1) == (u, 1)


@hybrid
def tuple_ordering(t, u):
    return t < u, t <= u, t > u, t >= u, (t, 1) < (u, 2)


@hybrid
def tuple_branch(x, t):
    if t == (1.0, 2.0):
        return x + 1
    if t < (1.0, 3.0):
        return x - 1
    return x


PY_TUPLES = [((1.0, 2.0), (1.0, 2.0)), ((1.0, 2.0), (1.0, 3.0)), ((2.0, 0.0), (1.0, 5.0)),
             ((1.0, 2.0), (1.0, 2.0, 0.0)), ((-0.0, 1), (0.0, 1)),
             ((float("nan"), 2.0), (float("nan"), 2.0))]
NUMPY_TUPLES = [((np.float32(1.0), 2), (1.0, np.int64(2))),
                ((np.float32(1.5), 2), (1.0, np.int64(2)))]


@pytest.mark.parametrize("t, u, numpy_items", [(*c, False) for c in PY_TUPLES]
                         + [(*c, True) for c in NUMPY_TUPLES])
def test_tuples_of_runtime_scalars_compare_as_in_python(t, u, numpy_items):
    """Python compares tuples item by item; comparing the compiler's value objects
    instead gave False for equal tuples (a silent wrong result)."""
    check(tuple_equality, t, u)
    check(tuple_branch, rand((3,)), t)
    if not numpy_items:  # numpy items: the result's kind depends on the values
        check(tuple_ordering, t, u)


@hybrid
def compare_with_runtime_ints(x, s, n):
    # n - k: a Python int known at run time; numpy 2 compares it with the typed x and s
    # exactly (campaign seed 7, case 1357: -1 < np.uint8(8) was False, -1 wrapped to 255)
    hits = 0
    for k in range(n):
        if (n - 2 - k) < s:
            hits += 1
        if (k - 1) >= s:
            hits += 10
    d = n - 4
    return (x < d, x <= d, x > d, x >= d, x == d, x != d, d < x, d == x, hits,
            s > (d - 1000), x < (d + 300))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "uint32", "int32",
                                   "uint64", "int64"])
def test_typed_integers_compare_exactly_with_runtime_python_ints(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 1, 3, info.max], dtype)
    runners = ("ir", "ir-opt", "cpu", "cpu-nopasses") + \
        (("ascend-sim",) if dtype in ("uint8", "int16") else ())
    for s, n in [(8, 3), (0, 6), (info.max, 0), (info.min, 9)]:
        check(compare_with_runtime_ints, x, np.dtype(dtype).type(s), n, runners=runners)
