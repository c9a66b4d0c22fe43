"""Differential tests: a result that is (a view of) one of several arrays, the one
control flow chose: a local array written in place or a new one, an argument, one made
in each iteration of a loop; through reshapes, slices and transposes; in tuples of
results that may share one array."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check

from pyasc import hybrid


@hybrid
def reshape_or_zeros(x, a, b):
    t = np.empty(24, np.float32)
    t[:] = x[:24] * 2.0
    if a * b == 12:
        r = t.reshape(2, a, b)
    else:
        r = np.zeros((2, a, b), np.float32)
    return r


@pytest.mark.parametrize("a,b", [(3, 4), (2, 3), (4, 3)])
def test_a_reshape_of_a_local_array_or_a_new_one(a, b):
    check(reshape_or_zeros, np.arange(30, dtype=np.float32), a, b)


@hybrid
def reshape_or_zeros_expr(x, a, b):
    t = np.empty(24, np.float32)
    t[:] = x[:24] * 2.0
    r = t.reshape(2, a, b) if a * b == 12 else np.zeros((2, a, b), np.float32)
    return r


@pytest.mark.parametrize("a,b", [(3, 4), (2, 3)])
def test_the_same_as_an_if_expression(a, b):
    check(reshape_or_zeros_expr, np.arange(30, dtype=np.float32), a, b)


@hybrid
def transpose_or_slice(x, n):
    t = np.empty((4, 6), np.float32)
    t[:] = x.reshape(4, 6) + 1.0
    u = np.ones((6, 6), np.float32)
    if n > 0:
        r = t.T
    else:
        r = u[1:, 2:]
    return r


@pytest.mark.parametrize("n", [1, 0])
def test_a_transpose_of_one_array_or_a_slice_of_another(n):
    check(transpose_or_slice, np.arange(24, dtype=np.float32), n)


@hybrid
def argument_local_or_new(x, a, b):
    t = np.empty(x.shape[0], np.float32)
    t[:] = x * 2.0
    if a == 0:
        r = x[b:]
    elif a == 1:
        r = t[b:]
    else:
        r = np.zeros(x.shape[0] - b, np.float32)
    return r


@pytest.mark.parametrize("a", [0, 1, 2])
def test_a_view_of_an_argument_of_a_local_array_or_a_new_one(a):
    check(argument_local_or_new, np.arange(10, dtype=np.float32), a, 3)


@hybrid
def pair_in_one_array(x, a):
    t = np.empty(x.shape[0], np.float32)
    t[:] = x + 1.0
    u = np.zeros(x.shape[0], np.float32)
    h = x.shape[0] // 2
    if a == 1:
        p = t[:h]
        q = t[h:]
    else:
        p = u[h:]
        q = t[::2]
    return p, q


@pytest.mark.parametrize("a", [1, 0])
def test_a_tuple_of_views_of_one_array_or_of_two(a):
    check(pair_in_one_array, np.arange(8, dtype=np.float32), a)


@hybrid
def last_of_loop(x, k):
    r = np.zeros(10, np.float32)
    for i in range(k):
        t = np.empty(20, np.float32)
        t[:] = x[:20] + i
        r = t[5:15]
    return r


@hybrid
def first_of_loop(x, k):
    r = np.zeros(10, np.float32)
    for i in range(k):
        t = np.empty(20, np.float32)
        t[:] = x[:20] + i
        if i == 0:
            r = t[5:15][::-1]
    return r


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("fn", [last_of_loop, first_of_loop])
def test_a_view_of_an_array_made_in_a_loop(fn, k):
    check(fn, np.arange(20, dtype=np.float32), k)
