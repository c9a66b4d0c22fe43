"""Every gradient rule against central finite differences in float64 (``fn.vjp`` with
no registered gradient, compiled for the CPU)."""

from __future__ import annotations

import ad_control as programs_control
import ad_programs as programs
import numpy as np
import pytest
from ad_fdcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc import hybrid

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((4, 3))


@pytest.mark.parametrize("fn", programs.PROGRAMS, ids=lambda f: f.__name__)
def test_rule_matches_finite_differences(fn):
    check_vjp(fn, X, Y)


def test_cast_gradient_is_cast_back():
    # through float32 the forward rounds: a coarser step and tolerance
    check_vjp(programs.cast, X, Y, eps=1e-3, rtol=1e-2, atol=1e-3)


CONTROL = [programs_control.loop_carried, programs_control.nested_loops,
           programs_control.loop_index_arith, programs_control.local_writes,
           programs_control.augmented, programs_control.padded,
           programs_control.scalar_branch, programs_control.scoped]


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("fn", CONTROL, ids=lambda f: f.__name__)
def test_control_flow_matches_finite_differences(fn, sign):
    check_vjp(fn, sign * X, Y)


@pytest.mark.parametrize("k", [0, 2])
def test_branch_on_a_scalar_argument_takes_one_path(k):
    # the else branch alone is safe for any x; the then branch reads exp(x)
    check_vjp(programs_control.branch, X, Y, k)


def test_max_ties_split_the_gradient_evenly():
    @hybrid
    def top(x):
        return x.max(axis=1)

    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    (g,) = top.vjp(x, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [2.0, 0.0, 0.0]])


def test_maximum_ties_split_the_gradient_evenly():
    @hybrid
    def pair(x, y):
        return np.maximum(x, y)

    gx, gy = pair.vjp(np.array([1.0, 2.0]), np.array([1.0, 0.0]), np.ones(2))
    np.testing.assert_array_equal(gx, [0.5, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 0.0])


def test_repeated_gather_indices_accumulate():
    @hybrid
    def pick(x, i):
        return np.take(x, i, axis=0)

    (g, gi) = pick.vjp(np.arange(3.0), np.array([2, 2, 0, 2]), np.ones(4))
    np.testing.assert_array_equal(g, [1.0, 0.0, 3.0])
    assert gi.dtype == np.int64 and not gi.any()


@hybrid
def _binary(a, b, op):
    if op == 0:
        return a * b + a
    if op == 1:
        return a / (b * b + 1.0) - b
    if op == 2:
        return np.maximum(a, b) * np.tanh(a - b)
    return np.where(a > b, a * a, b)


def _shape_pair():
    """Two shapes that broadcast together (numpy's rule), ranks 0 to 3."""
    base = st.lists(st.integers(1, 3), min_size=1, max_size=3)

    def derive(shape):
        drop = st.integers(0, len(shape))
        ones = st.lists(st.booleans(), min_size=len(shape), max_size=len(shape))
        return st.tuples(st.just(tuple(shape)), drop, ones).map(
            lambda t: (t[0], tuple(1 if one else d for d, one in
                                   zip(t[0][t[1]:], t[2][t[1]:], strict=True))))
    return base.flatmap(derive)


@settings(max_examples=12, deadline=None)
@given(shapes=_shape_pair(), op=st.integers(0, 3), swap=st.booleans(),
       seed=st.integers(0, 2**16))
def test_broadcasting_gradients_are_summed_back(shapes, op, swap, seed):
    sa, sb = shapes[::-1] if swap else shapes
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    check_vjp(_binary, a, b, op, seed=seed)


@pytest.mark.parametrize("i", [1, 2, -1])
def test_run_time_index(i):
    check_vjp(programs.runtime_index, X, Y, i)


def test_repeated_index_tuples_accumulate():
    @hybrid
    def pick(x, rows, cols):
        return x[rows, cols]

    rows, cols = np.array([0, 0, 1, -1]), np.array([1, 1, 2, 0])
    g, _, _ = pick.vjp(np.zeros((2, 3)), rows, cols, np.array([1.0, 2.0, 4.0, 8.0]))
    np.testing.assert_array_equal(g, [[0.0, 3.0, 0.0], [8.0, 0.0, 4.0]])


def test_dynamic_shapes_sum_run_time_broadcasts():
    # with dynamic_shape=True a size-1 axis is known only at run time: x[:, :1]
    # broadcast against (5, 4) must still be summed back
    w = RNG.standard_normal((3, 4))
    check_vjp(programs_control.dynamic_broadcasts, RNG.standard_normal((5, 3)), w)
    check_vjp(programs_control.dynamic_broadcasts, RNG.standard_normal((2, 3)), w)
    check_vjp(programs_control.dynamic_views, X, Y)


def _divided_by_broadcasts(x, v, s):
    rows = np.sum(x * x, axis=-1, keepdims=True) + 1.0
    return (x / rows + (x - 1.0) / (v * v + 2.0) + x / s
            + 3.0 / (np.abs(x[:1]) + 1.0) + (x[:, :1] - x) / (v[:2, None] + 4.0))


divided_by_broadcasts = hybrid(_divided_by_broadcasts)
divided_by_broadcasts_dyn = hybrid(dynamic_shape=True)(_divided_by_broadcasts)


@pytest.mark.parametrize("fn", [divided_by_broadcasts, divided_by_broadcasts_dyn],
                         ids=["static", "dynamic"])
@pytest.mark.parametrize("shape", [(2, 3), (2, 7), (2, 1)])
def test_division_by_a_broadcast_divisor(fn, shape):
    # a / b with b broadcast (a row statistic, a vector, a scalar): the rule divides at
    # b's own shape (r = 1 / b) and sums dout * a over the broadcast axes before scaling
    x = RNG.standard_normal(shape)
    v = RNG.standard_normal(shape[1:])
    check_vjp(fn, x, v, 1.5, rtol=1e-6)
