"""Lists and tuples of arrays of a length known at compile time: ``parts.append`` in a
loop over a static range then ``np.stack``/``np.concatenate``, list comprehensions, and
a list or tuple of arrays passed as one argument and indexed by a loop variable (the
loop is unrolled); refusals where Python would append a run-time number of times."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def shifted(x, k):  # a plain helper, as users write them
    return x * k + 1


@hybrid
def grow(x):
    parts = []
    for k in range(3):
        parts.append(shifted(x, k))
    more = [x[::-1] * 2 for _ in range(2)]
    parts.extend(more[:1])
    return np.stack(parts[:3]), np.concatenate(parts), [x * k for k in (1, 2) if k > 1][0]


@hybrid
def sum_array(xs):
    acc = np.zeros_like(xs[0])
    for k in range(len(xs)):
        acc += xs[k] * (k + 1)
    return acc


@hybrid
def repeat_n(x, n):
    parts = []
    for _ in range(n):  # n specializes by value: the loop is unrolled
        parts.append(x)
    return np.stack(parts, axis=1)


@hybrid
def zipped(xs, ys):
    out = []
    for k in range(1, len(xs)):
        out.append(np.maximum(xs[k], ys[k - 1]))
    return np.concatenate(out, axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_lists_of_arrays(dtype, layout):
    x = in_layout(rand((3, 4), dtype), layout)
    check(grow, x, runners=RUNNERS)
    check(sum_array, (x, x[::-1], x + 1), runners=RUNNERS)
    check(sum_array, [x, x], runners=RUNNERS)
    check(repeat_n, x, 3, runners=RUNNERS)
    check(zipped, [x, x * 2, x[:, :1]], (x, x[:1], x), runners=RUNNERS)


def test_a_list_grown_under_runtime_control_is_refused():
    @hybrid
    def branch(x, n):
        parts = [x]
        if n > 0:
            parts.append(x)
        return np.stack(parts)

    @hybrid(dynamic_shape=True)
    def runtime_range(x):
        parts = []
        for k in range(x.shape[0]):
            parts.append(x[k])
        return np.stack(parts)

    x = np.ones((2, 2), np.float32)
    with pytest.raises(errors.UnsupportedSyntaxError, match="only grow where it is made"):
        branch(x, 1)
    with pytest.raises(errors.UnsupportedSyntaxError, match="known at compile time"):
        runtime_range(x)


def test_unrolling_is_bounded():
    @hybrid
    def long(x):
        parts = []
        for k in range(1000):
            parts.append(x * k)
        return parts[0]

    with pytest.raises(errors.UnsupportedSyntaxError, match="more than 256"):
        long(np.ones(2))


def bump(a):
    a[0] = 7


@hybrid
def written_while_listed(x):
    y = x + 1
    parts = [y, x]
    np.add.at(y, [0, 0], 5)  # y gets a buffer: the list holds the same array
    z = x * 2
    pair, more = (z, 2), [[z]]
    bump(z)  # a helper writes into z: the tuple and the nested list see it
    return parts[0], pair[0], more[0][0], y


def test_writes_are_seen_through_lists_and_tuples():
    # the list kept the array's value from before the write (a silent wrong result)
    check(written_while_listed, rand((3,), "float32"))


def test_jumps_in_an_unrolled_loop_are_refused():
    @hybrid
    def early(xs):
        acc = xs[0] * 0
        for k in range(len(xs)):
            if k == 1:
                break
            acc += xs[k]
        return acc

    with pytest.raises(errors.UnsupportedSyntaxError, match="loop that is unrolled"):
        early((np.ones(2), np.ones(2)))
