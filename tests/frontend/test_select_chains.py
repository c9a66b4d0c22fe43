"""``select-chains``: running max/min/argmax loops written by the user (``if x > mx:
mx = x``, ``max(mx, x)``, ``k = j`` beside it) are searched in lanes, with the loop's
exact result: the first (``>``) or last (``>=``) best element, ``-0.0``/``0.0`` ties, NaN
never taken, a NaN start kept.  ``check`` compares with Python itself (every runner,
``cpu-nopasses`` without the pass); the inputs are built so that a lane scheme merging
lanes in lane order, or by value alone, gets them wrong."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand

from pyasc import hybrid
from pyasc.ir import parse_module


@hybrid
def row_max(x):
    n, m = x.shape
    out = np.empty(n, dtype=x.dtype)
    for i in range(n):
        mx = x[i, 0]
        for j in range(1, m):
            if x[i, j] > mx:
                mx = x[i, j]
        out[i] = mx
    return out


@hybrid
def max_ge(x):
    mx = x[0]
    for j in range(x.shape[0]):
        if x[j] >= mx:
            mx = x[j]
    return mx


@hybrid
def min_lt_reversed_compare(x):
    mn = x[0]
    for j in range(1, x.shape[0]):
        if mn > x[j]:
            mn = x[j]
    return mn


@hybrid
def min_le(x):
    mn = x[0]
    for j in range(x.shape[0]):
        if x[j] <= mn:
            mn = x[j]
    return mn


@hybrid
def builtin_max(x):
    mx = x[0]
    for j in range(1, x.shape[0]):
        mx = max(mx, x[j])
    return mx


@hybrid
def builtin_min(x):
    mn = x[0]
    for j in range(1, x.shape[0]):
        mn = min(mn, x[j])
    return mn


@hybrid
def ternary_max(x):
    mx = x[0]
    for j in range(1, x.shape[0]):
        mx = x[j] if x[j] > mx else mx
    return mx


@hybrid
def argmax_gt(x):
    mx = x[0]
    k = 0
    for j in range(x.shape[0]):
        if x[j] > mx:
            mx = x[j]
            k = j
    return mx, k


@hybrid
def argmin_le(x):
    mn = x[0]
    k = -1
    for j in range(x.shape[0]):
        if x[j] <= mn:
            mn = x[j]
            k = j
    return mn, k


@hybrid
def max_and_min_with_payload(x, y):
    mx = x[0]
    mn = x[0]
    at = y[0]
    for j in range(x.shape[0]):
        if x[j] > mx:
            mx = x[j]
            at = y[j]
        if x[j] < mn:
            mn = x[j]
    return mx, mn, at


@hybrid
def abs_max(x):
    mx = abs(x[0])
    for j in range(1, x.shape[0]):
        if abs(x[j]) > mx:
            mx = abs(x[j])
    return mx


@hybrid
def int_min_else_form(x):
    mn = x[0]
    for j in range(1, x.shape[0]):
        mn = min(x[j], mn)  # takes x[j] when not (mn < x[j])
    return mn


@hybrid
def np_maximum(x):
    mx = x[0]
    for j in range(1, x.shape[0]):
        mx = np.maximum(mx, x[j])
    return mx


@hybrid
def np_minimum_swapped(x):
    mn = x[0]
    for j in range(1, x.shape[0]):
        mn = np.minimum(x[j], mn)
    return mn


FORMS = [max_ge, min_lt_reversed_compare, min_le, builtin_max, builtin_min, ternary_max,
         argmax_gt, argmin_le, abs_max, np_maximum, np_minimum_swapped]


def _lane_loops_with_compares(fn, *args) -> int:
    """Loops marked ``lanes`` that compare (a chain run in lanes) in the loop IR."""
    module = parse_module(fn.kernel(*args).loop_ir)
    compares = ("arith.cmp", "arith.max", "arith.min")
    return sum(1 for op in module.walk() if op.name == "loop.for" and
               op.attributes.get("lanes") and any(o.name in compares for o in op.walk()))


def _tricky(n: int, dtype: str, seed: int) -> np.ndarray:
    """Few distinct values (ties in many lanes), zeros of both signs and NaNs."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.random(n) < 0.2] = -0.0
        x[rng.random(n) < 0.1] = np.nan
    return x


@pytest.mark.parametrize("fn", FORMS, ids=lambda f: f.__name__)
def test_each_form_runs_in_lanes(fn) -> None:
    assert _lane_loops_with_compares(fn, rand((70,), "float32")) >= 1


@pytest.mark.parametrize("fn", FORMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_forms_match_python(fn, dtype: str) -> None:
    for n in (1, 17, 63, 69):  # no lanes; 16 lanes + 1; 16 lanes + 15; 64 lanes + 5
        check(fn, rand((n,), dtype, seed=n))
        check(fn, _tricky(n, dtype, seed=n + 1))


def test_row_max_of_a_softmax_is_laned_and_exact() -> None:
    x = rand((5, 1023), "float32")
    assert _lane_loops_with_compares(row_max, x) >= 1
    x[1] = -np.abs(x[1])
    x[1, 700], x[1, 300] = 0.0, -0.0  # the first zero seen (-0.0) is the maximum
    x[2, 0] = np.nan                  # a NaN start is never replaced
    x[3, ::7] = np.nan                # NaN elements are never taken
    x[4] = 2.5                        # all equal
    got = check(row_max, x)
    assert np.signbit(got[1]) and np.isnan(got[2])


@pytest.mark.parametrize("n", [17, 31, 64, 65, 129, 1023])
def test_zero_ties_across_lanes(n: int) -> None:
    """Zeros of both signs in different lanes: which one the loop ends on depends on
    the order (``>``: the first, ``>=``: the last), never on the lanes."""
    for first, later in ((-0.0, 0.0), (0.0, -0.0)):
        x = np.full(n, -1.0, np.float32)
        x[n // 3], x[n - 2] = first, later
        assert np.signbit(check(builtin_max, x)) == np.signbit(first)
        assert np.signbit(check(max_ge, x)) == np.signbit(later)
        mx, k = check(argmax_gt, x)
        assert k == n // 3 and np.signbit(mx) == np.signbit(first)


@pytest.mark.parametrize("n", [18, 40, 70, 200])
def test_argmax_ties_pick_the_first_across_lanes(n: int) -> None:
    """Equal maxima at iterations whose lanes come in the other order (lane 2 before
    lane 7 in lane order, iteration 7 before 18 in the loop)."""
    x = rand((n,), "float32") - 10
    x[7] = x[n - 1] = x[n // 2 + 1] = 5.0
    assert check(argmax_gt, x)[1] == 7
    assert check(argmin_le, -x)[1] == n - 1


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_np_maximum_chains_keep_the_loops_zero_and_nan(dtype: str) -> None:
    """``np.maximum`` propagates the first NaN and keeps a dtype-dependent zero on ties
    (``arith.first_wins_ties``): rows whose result is a zero or NaN run in order."""
    for n in (33, 70, 200):
        x = np.full(n, -2.0, dtype)
        x[n // 4], x[n - 3] = -0.0, 0.0
        for fn in (np_maximum, np_minimum_swapped):
            check(fn, x)
            check(fn, -x)
        x[n // 2] = np.nan
        check(np_maximum, x)
        check(np_minimum_swapped, x)


def test_two_chains_and_a_payload_in_one_loop() -> None:
    for n in (16, 37, 70, 301):
        x, y = _tricky(n, "float32", n), rand((n,), "float32", seed=n)
        assert _lane_loops_with_compares(max_and_min_with_payload, x, y) >= 1
        check(max_and_min_with_payload, x, y)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_else_form(dtype: str) -> None:
    x = rand((67,), dtype, seed=3)
    assert _lane_loops_with_compares(int_min_else_form, x) >= 1
    check(int_min_else_form, x)
    check(int_min_else_form, _tricky(45, dtype, 4) if dtype != "uint8" else x[:45])


def test_float_else_form_stays_in_order() -> None:
    """``min(x, mn)`` takes a NaN ``x`` (``not (mn < nan)``): not a lane rule."""
    x = _tricky(67, "float32", 5)
    assert _lane_loops_with_compares(int_min_else_form, x) == 0
    check(int_min_else_form, x)


def test_views_and_nan_starts() -> None:
    base = _tricky(141, "float32", 6)
    for x in (base[::2], base[::-1], base[1::3]):
        for fn in (builtin_max, argmax_gt, min_le):
            check(fn, x)
    base[0] = np.nan
    for fn in FORMS:
        check(fn, base)
    m = rand((9, 70), "float32", 7)
    check(row_max, m.T)          # rows strided in memory
    check(row_max, m[:, ::-2])
