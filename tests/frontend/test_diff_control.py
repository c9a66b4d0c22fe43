"""Differential tests: if/elif/else, for, while, break/continue/return, loop-carried
values and their promotion."""

from __future__ import annotations

import numpy as np
import pytest
from diff import ON_DEVICE, SUM, check, rand

from pyasc import hybrid


@hybrid
def branches(x, n):
    if n > 5:
        y = x * 2
        k = 1
    elif n > 2:
        y = x + 1
        k = 2
    else:
        y = x
        k = n
    return y, k


@pytest.mark.parametrize("n", [0, 3, 9])
def test_if_elif_else(n):
    check(branches, rand((4,)), n)


@hybrid
def mixed_kinds(n):
    k = 1 if n > 0 else 2.5
    return k


def test_paths_with_different_python_kinds_join_to_the_wider_kind():
    # Documented: a value joined at an if takes the promoted type (here float).
    assert mixed_kinds.run_with(_interpret, 3) == 1.0
    assert type(mixed_kinds.run_with(_interpret, 3)) is float


def _interpret(program):
    from pyasc.ir.interpreter import Interpreter

    return lambda flat: Interpreter(program.module).call(program.entry, *flat)


@hybrid
def static_branches(x):
    if x.ndim == 2:
        out = x.sum(axis=1)
    else:
        out = x * "not compiled" if False else x
    if x.dtype == np.float32:
        out = out * 2
    return out


def test_compile_time_conditions_prune_dead_code():
    check(static_branches, rand((3, 4)), rtol=ON_DEVICE(SUM(4)))
    check(static_branches, rand((5,), "float64"), rtol=ON_DEVICE(SUM(5)))


@hybrid
def ranges(n, start, step):
    a = 0
    for i in range(n):
        a += i
    b = 0
    for i in range(start, n):
        b = b * 2 + i
    c = 0
    for i in range(n, start, step):
        c += i * i
    d = 0
    for i in range(10, -3, -3):
        d = d * 10 + i
    return a, b, c, d


@pytest.mark.parametrize("n,start,step", [(7, 2, -2), (0, 0, -1), (5, 9, -3), (1, -4, -1)])
def test_range_forms(n, start, step):
    check(ranges, n, start, step)


@hybrid
def row_loop(x):
    total = np.zeros(x.shape[1], x.dtype)
    for row in x:
        total = total + row
    acc = 0
    for v in x[0]:
        acc = acc + v
    return total, acc


@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (5, 1)])
def test_loop_over_array_rows(shape):
    check(row_loop, rand(shape))


@hybrid
def carried_promotion(x):
    acc = 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
    m = 0
    for i in range(x.shape[0]):
        m = max(m, i)
    row = 0
    for _ in range(3):
        row = row + x
    return acc, m, row


@pytest.mark.parametrize("dtype", ["float32", "int8", "float64"])
def test_loop_carried_types_are_promoted(dtype):
    check(carried_promotion, rand((5,), dtype))


@hybrid
def while_loops(n):
    i, s = 0, 0
    while i < n:
        s += i
        i += 1
    k = n
    steps = 0
    while k != 1 and steps < 100:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps += 1
    return s, steps


@pytest.mark.parametrize("n", [1, 6, 27])
def test_while(n):
    check(while_loops, n)


@hybrid
def jumps(x, limit):
    first = -1
    for i in range(x.shape[0]):
        if x[i] > limit:
            first = i
            break
    positive = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        positive += x[i]
    count = 0
    while True:
        count += 1
        if count * count > x.shape[0]:
            break
    return first, positive, count


@pytest.mark.parametrize("limit", [-10.0, 0.5, 10.0])
def test_break_and_continue(limit):
    check(jumps, rand((11,)), limit)


@hybrid
def early_return(x, target):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] == target:
                return i, j
    return -1, -1


def test_early_return_from_nested_loops():
    x = np.arange(12).reshape(3, 4)
    for target in (0, 6, 11, 99):
        check(early_return, x, target)


@hybrid
def return_in_branches(x, n):
    if n < 0:
        return x * 0
    if n == 0:
        return x
    y = x + n
    return y * 2


@pytest.mark.parametrize("n", [-3, 0, 4])
def test_return_in_branches(n):
    check(return_in_branches, rand((3,)), n)


@hybrid
def loop_else(x, limit):
    for i in range(x.shape[0]):
        if x[i] > limit:
            break
    else:
        i = -100
    k = 0
    while k < 3:
        k += 1
    else:
        k = k * 10
    return i, k


@pytest.mark.parametrize("limit", [0.0, 100.0])
def test_for_else_and_while_else(limit):
    check(loop_else, rand((6,)), limit)


@hybrid
def unrolled(x):
    out = x * 0
    for scale in (1, 2, 3):
        out = out + x * scale
    return out


def test_loop_over_a_tuple_is_unrolled():
    check(unrolled, rand((4,)))


@hybrid
def defined_in_static_loop(x):
    for i in range(3):
        y = x * i
    return y, i


def test_names_from_a_loop_with_static_trip_count():
    check(defined_in_static_loop, rand((2,)))


@hybrid
def buffer_in_loop(x, n):
    out = np.zeros_like(x)
    for i in range(n):
        out[i % x.shape[0]] += x[i % x.shape[0]] * i
    return out


def test_writes_to_a_buffer_inside_a_loop():
    check(buffer_in_loop, rand((4,)), 9)


@hybrid
def asserting(x, n):
    assert n > 0, "n must be positive"
    assert x.shape[0] == 3
    return x * n


def test_assert_becomes_a_runtime_check():
    check(asserting, rand((3,)), 2)
    check(asserting, rand((3,)), -1)


@hybrid
def max_of_scalars(a, b, c):
    return max(a, b), min(a, b, c), max((a, c)), min(3, 7)


@pytest.mark.parametrize("args", [(1, 2, 3), (5.5, -1.0, 2.0), (2.0, 2.0, -7.5), (4, -4, 4)])
def test_builtin_min_max(args):
    check(max_of_scalars, *args)


@hybrid
def enumerate_zip(x, y):
    s = 0.0
    for i, row in enumerate(x):
        s += i * row.sum()
    t = 0.0
    for a, b in zip(x[0], y, strict=False):
        t += a * b
    u = 0
    for k, (p, q) in enumerate(zip(range(3, 9, 2), range(10, 0, -3), strict=False), 1):
        u += k * p - q
    for k, v in enumerate((5, 6)):
        u += k * v
    return s, t, u


@pytest.mark.parametrize("n", [1, 4])
def test_enumerate_and_zip(n):
    check(enumerate_zip, rand((3, n)), rand((n + 2,), seed=3))


@hybrid
def ping_pong(x, steps):
    a = x.copy()
    b = np.zeros_like(x)
    for _ in range(steps):
        b[1:] = a[:-1] * 0.5
        b[0] = a[-1]
        a, b = b, a
    return a


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_buffers_swapped_in_a_loop(steps):
    check(ping_pong, rand((5,)), steps)
