"""Aliasing through joins: views chosen by ``if`` statements and conditional
expressions, carried through loops, kept in tuples, returned twice or passed to inlined
callees, then written through (or their base written) and read again.

Each program runs compiled and interpreted against numpy (``check``: results and the
arguments afterwards); on ascend-sim each either matches numpy or is refused with a
documented device error (E50010), never a silent copy.  Then the identity contract of
results on the CPU (``np.shares_memory``, one object returned twice) and the coded
errors where a view cannot stay one (docs/numpy-support.md, "Views")."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check

from pyasc import hybrid
from pyasc.errors import TypeMismatchError


@hybrid
def chosen_view_written(t, c):
    r = t[1:] if c else np.zeros(7, dtype=t.dtype)
    r[0] = 5.0
    return t.sum() + r.sum()


@hybrid
def chosen_view_updated(t, c):
    r = t[1:] if c else np.ones(7, dtype=t.dtype)
    r += 1.0
    return r * 2.0


@hybrid
def chosen_by_statement(t, c):
    if c:
        r = t[::2]
    else:
        r = t[:4]
    r[1] = 9.0
    return t * 1.0


@hybrid
def base_written_after_choice(t, c):
    r = t[1:] if c else np.zeros(7, dtype=t.dtype)
    t[1] = 42.0
    return r * 1.0


@hybrid
def two_bases(t, u, c):
    r = t[1:] if c else u[:7]
    r[0] = 5.0
    return r + 0.0


@hybrid
def local_bases(t, c):
    a = t * 2.0
    b = t + 1.0
    r = a if c else b[::-1]
    r[0] = 7.0
    return a, b


@hybrid
def view_of_choice(t, c):
    r = (t if c else t[::-1])[1:]
    r[0] = 3.0
    return t * 1.0


@hybrid
def shrinking_view(t):
    v = t
    for _ in range(3):
        v = v[1:]
        v[0] = 9.0
    return t * 1.0


@hybrid
def view_chosen_in_loop(t, c):
    r = t[:4]
    for i in range(3):
        if c:
            r = t[i:i + 4]
        r[0] += 1.0
    return t * 1.0


@hybrid
def tuple_of_views(t, c):
    a, b = (t[1:], t[:2]) if c else (t[:7], t[2:4])
    a[0] = 7.0
    b[1] += 3.0
    return t * 1.0


@hybrid
def stored_tuple(t):
    p = (t[1:], t[2:])
    a, b = p
    a[0] = 7.0
    b[0] += 1.0
    return t * 1.0


def bump(v):
    v[0] += 11.0


hybrid_bump = hybrid(bump)


@hybrid
def callee_writes_choice(t, c):
    r = t[1:] if c else np.zeros(7, dtype=t.dtype)
    hybrid_bump(r)
    return t * 1.0


@hybrid
def callee_writes_statement_choice(t, c):
    if c:
        r = t[2:]
    else:
        r = np.zeros(6, dtype=t.dtype)
    hybrid_bump(r)
    return t * 1.0


@hybrid
def tail(x):
    return x[1:]


@hybrid
def choose(x, y, c):
    return x if c else y


@hybrid
def callee_returns_view_of_local(t, c):
    a = t * 2.0
    b = t + 1.0
    v = tail(a)
    v[0] = 5.0
    w = choose(a, b, c)
    w[1] += 3.0
    return a, b


@hybrid
def rows_enumerated(m):
    for i, row in enumerate(m):
        row[i % 2] = 7.0
    return m * 1.0


@hybrid
def numpy_views_written(m):
    r = m.reshape(-1)
    r[1] = 3.0
    s = m.T
    s[0, 1] = 4.0
    q = np.asarray(m).ravel()
    q[5] += 1.0
    return m * 1.0


PROGRAMS = [
    (chosen_view_written, lambda a: (a, True)),
    (chosen_view_written, lambda a: (a, False)),
    (chosen_view_updated, lambda a: (a, True)),
    (chosen_view_updated, lambda a: (a, False)),
    (chosen_by_statement, lambda a: (a, True)),
    (chosen_by_statement, lambda a: (a, False)),
    (base_written_after_choice, lambda a: (a, True)),
    (two_bases, lambda a: (a, a[::-1] + 1, True)),
    (two_bases, lambda a: (a, a[::-1] + 1, False)),
    (local_bases, lambda a: (a, True)),
    (local_bases, lambda a: (a, False)),
    (view_of_choice, lambda a: (a, True)),
    (view_of_choice, lambda a: (a, False)),
    (shrinking_view, lambda a: (a,)),
    (view_chosen_in_loop, lambda a: (a, True)),
    (tuple_of_views, lambda a: (a, True)),
    (tuple_of_views, lambda a: (a, False)),
    (stored_tuple, lambda a: (a,)),
    (callee_writes_choice, lambda a: (a, True)),
    (callee_writes_statement_choice, lambda a: (a, True)),
    (numpy_views_written, lambda a: (a.reshape(2, 4),)),
    (callee_returns_view_of_local, lambda a: (a, True)),
    (callee_returns_view_of_local, lambda a: (a, False)),
    (rows_enumerated, lambda a: (a.reshape(4, 2),)),
]
IDS = [f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(PROGRAMS)]


@pytest.mark.parametrize(("fn", "make"), PROGRAMS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_writes_through_chosen_views_match_numpy(fn, make, dtype):
    check(fn, *make(np.arange(8, dtype=dtype)))


@pytest.mark.parametrize(("fn", "make"), PROGRAMS, ids=IDS)
def test_chosen_views_on_the_simulator(fn, make):
    """Matches numpy, or is refused with a documented device error (check skips it)."""
    check(fn, *make(np.arange(8, dtype=np.float32)), runners=("ascend-sim",))


# ---------------------------------------------------------------- results' identity

@hybrid(target="cpu")
def returned_choice(t, c):
    return t[1:] if c else np.zeros(7, dtype=t.dtype)


@hybrid(target="cpu")
def returned_twice(t, c):
    r = t[1:] if c else np.zeros(7, dtype=t.dtype)
    return r, r


@hybrid(target="cpu")
def fresh_returned_twice(t):
    r = t * 2.0
    return r, r, r.copy(), r.flatten(), r.astype(t.dtype)


@hybrid(target="cpu")
def returned_after_branch(t, c):
    if c:
        r = t[::2]
    else:
        r = t[:4] * 2.0
    return r


def test_returned_views_share_the_arguments_memory():
    t = np.arange(8.0)
    assert np.shares_memory(returned_choice(t, True), t)
    assert not np.shares_memory(returned_choice(t, False), t)
    a, b = returned_twice(t, True)
    assert a is b and np.shares_memory(a, t)
    a, b = returned_twice(t, False)
    assert a is b and not np.shares_memory(a, t)
    assert np.shares_memory(returned_after_branch(t, True), t)
    assert not np.shares_memory(returned_after_branch(t, False), t)


def test_one_array_returned_twice_is_one_object():
    r, same, copied, flat, cast = fresh_returned_twice(np.arange(8.0))
    assert same is r
    for other in (copied, flat, cast):  # numpy's copy, flatten, astype: new arrays
        assert not np.shares_memory(other, r)
    r[0] = 100.0
    assert copied[0] == 0.0 and flat[0] == 0.0 and cast[0] == 0.0


# ---------------------------------------------------------------- coded errors

@hybrid(target="cpu")
def written_choice_of_dtypes(t, c):
    r = t[1:] if c else np.zeros(7)
    r[0] = 5.0
    return t


@hybrid(target="cpu")
def base_written_choice_of_dtypes(t, c):
    if c:
        r = t[1:]
    else:
        r = np.zeros(7)
    t[1] = 4.0
    return r * 1.0


@hybrid(target="cpu")
def unwritten_choice_of_dtypes(t, c):
    r = t[1:] if c else np.zeros(7)
    return r * 1.0


@pytest.mark.parametrize(("fn", "line"), [
    (written_choice_of_dtypes, "r = t[1:] if c else np.zeros(7)"),
    (base_written_choice_of_dtypes, "if c:"),
])
def test_a_view_that_cannot_stay_one_is_refused(fn, line):
    """A float32 view or a float64 array: no one type can be both; written, it is
    E50001 at the user's line instead of a silent copy."""
    with pytest.raises(TypeMismatchError, match="cannot stay a view") as info:
        fn(np.arange(8, dtype=np.float32), True)
    assert line in str(info.value)


def test_an_unwritten_choice_of_dtypes_is_a_value():
    t = np.arange(8, dtype=np.float32)
    for c in (True, False):
        np.testing.assert_array_equal(unwritten_choice_of_dtypes(t, c),
                                      unwritten_choice_of_dtypes.__wrapped__(t, c))
