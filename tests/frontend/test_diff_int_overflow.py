"""A Python int that does not fit the integer dtype it is converted to raises numpy 2's
``OverflowError`` (NEP 50) also when the int is only known at run time: arithmetic with
an array, in-place operators, ufunc calls, scalar-type calls, element/slice/fancy/mask
stores, ``np.full`` and ``ndarray.fill``.  Before, compiled code wrapped such an int
(``int8_array + 300`` gave ``+ 44``) where numpy raises: a silent wrong result.
Comparisons stay exact and ``np.where`` wraps, as numpy does."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, compare

from pyasc import hybrid
from pyasc.ir.parser import parse_module
from pyasc.ir.passes.hoist_checks import hot_checks

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def _programs():
    def add(x, n):
        return x + n

    def inplace(x, n):
        x -= n
        return x

    def ufunc_call(x, n):
        return np.maximum(x, n) * 2

    def scalar_type(x, n):
        return x + np.uint8(n)

    def store_element(x, n):
        x[1] = n
        return x

    def store_slice(x, n):
        x[1:3] = n
        return x

    def store_fancy(x, n):
        x[np.array([0, 2])] = n
        return x

    def store_masked(x, n):
        x[x > 1] = n
        return x

    def full(x, n):
        return np.full(x.shape, n, x.dtype) + x

    def fill(x, n):
        x.fill(n)
        return x

    def loop_counter(x, n):
        for i in range(n):
            x[i % x.shape[0]] = i
        return x

    return [add, inplace, ufunc_call, scalar_type, store_element, store_slice,
            store_fancy, store_masked, full, fill, loop_counter]


PROGRAMS = {f.__name__: f for f in _programs()}
CASES = [  # (dtype, n): the first two do not fit, the others do
    ("int8", 300), ("uint8", -1), ("int16", -40000), ("uint64", -5), ("int32", 2**31),
    ("int8", -128), ("uint8", 255), ("uint16", 7)]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dtype, n", CASES)
def test_a_runtime_python_int_out_of_range_raises_like_numpy(name, dtype, n, dynamic):
    if name == "scalar_type" and dtype != "uint8":
        pytest.skip("np.uint8(n) meets uint8 whatever x's dtype is")
    if name == "loop_counter" and (n < 0 or n > 300):
        pytest.skip("a counter counts up from 0 to a small n")
    fn = hybrid(dynamic_shape=dynamic)(PROGRAMS[name])
    x = np.arange(4).astype(dtype)
    runners = [r for r in RUNNERS if not (dynamic and r == "ascend-sim"
                                          and name == "loop_counter")]
    expected, skipped = compare(fn, x, n, runners=runners)
    assert not skipped, skipped
    if isinstance(expected, OverflowError):  # numpy's own message, at the user's line
        with pytest.raises(OverflowError, match=str(expected)):
            fn(x.copy(), n)


@hybrid
def compare_and_select(x, n):
    return x < n, x == n, np.where(x > 1, x, n)


@pytest.mark.parametrize("dtype, n", [("int8", 300), ("uint8", -1), ("int16", 5)])
def test_comparisons_stay_exact_and_where_wraps(dtype, n):
    expected, skipped = compare(compare_and_select, np.arange(4).astype(dtype), n,
                                runners=RUNNERS)
    assert not isinstance(expected, Exception) and not skipped


@hybrid
def add_in_a_loop(x, k):
    for i in range(x.shape[0]):
        x[i] = x[i] + k
    return x


def test_the_check_leaves_the_hot_loop():
    # k is loop-invariant: hoist-checks versions the loop on its range check (checked
    # once before the loop), so the fast-path loop has no check and still vectorizes
    x = np.arange(64).astype(np.int8)
    module = parse_module(add_in_a_loop.ir(x, 3))
    assert "out of bounds for int8" in str(module)
    assert hot_checks(module) == []
    with pytest.raises(OverflowError, match="Python integer 200 out of bounds for int8"):
        add_in_a_loop(x, 200)


@hybrid
def masked_stores_of_0d_arrays(x):
    # a 0-d array stored through a boolean mask is converted like a scalar; the range
    # check's first version took only numbers and Scalars (E50001 "expected a number,
    # got Tensor", found by test_random_programs' seed 101)
    out = np.zeros_like(x)
    out[x > 0] = np.asarray(x[0] * 2)
    out[x < 0] += np.ones((), x.dtype)
    return out


def test_a_0d_array_stored_through_a_mask():
    compare(masked_stores_of_0d_arrays, np.array([1, -2, 3, 0], np.float32), runners=RUNNERS)


@hybrid
def pick(x, k, flag):
    # both sides run (one select, one kernel); a side's range check only fails when
    # that side is taken, as in Python
    return x * k if flag else x + 1


@pytest.mark.parametrize("k, flag", [(300, False), (300, True), (3, True), (-1, False)])
def test_a_check_in_a_conditional_expression_is_predicated(k, flag):
    expected, skipped = compare(pick, np.arange(5).astype(np.uint8), k, flag, runners=RUNNERS)
    assert not skipped
    assert isinstance(expected, OverflowError) == (flag and k == 300)
    assert '"loop.if"' not in pick.ir(np.arange(5).astype(np.uint8), k, flag)
