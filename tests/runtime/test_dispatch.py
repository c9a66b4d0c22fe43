"""Calling compiled specializations: every change of signature selects the right kernel,
whichever dispatch level (native entry, signature table, full path) handles the call."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc import errors, hybrid
from pyasc.runtime import MISS


def make_affine():
    @hybrid(target="cpu")
    def affine(x, k=1, flag=False):
        return x * k if flag else x + k
    return affine


def reference(x, k=1, flag=False):
    return x * k if flag else x + k


BASE = np.arange(12, dtype=np.float32).reshape(3, 4)
VARIANTS = {
    "f32": (BASE,), "f64": (BASE.astype(np.float64),), "i32": (BASE.astype(np.int32),),
    "shape": (np.ones((2, 4), np.float32),), "rank": (np.ones(5, np.float32),),
    "transposed": (BASE.T,), "inner": (BASE[:, 1:],), "strided": (BASE[:, ::2],),
    "reversed": (BASE[::-1],), "0-d": (np.array(2.5, np.float32),),
    "k int": (BASE, 3), "k float": (BASE, 2.5), "k bool": (BASE, True),
    "k np.float32": (BASE, np.float32(2)), "k np.int16": (BASE, np.int16(-4)),
    "flag": (BASE, 2, True), "k big int": (BASE, 2 ** 40),
}
"""Calls of ``affine``; all but the last three select a specialization of their own
(``k`` defaults to an int and ``flag`` to a bool: only their kinds are in the key)."""
DISTINCT = len(VARIANTS) - 3


class Subclass(np.ndarray):
    """An ndarray subclass: the full path handles it, never the native entry."""


def check(f, args, kwargs=None):
    kwargs = kwargs or {}
    got, want = f(*args, **kwargs), reference(*args, **kwargs)
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_each_signature_change_selects_its_own_kernel():
    f = make_affine()
    for args in VARIANTS.values():
        check(f, args)
    n = len(f._calls.by_key)
    for args in reversed(list(VARIANTS.values())):  # again, in another order: all cached
        check(f, args)
        check(f, args)  # the native entry of the last call first
    assert len(f._calls.by_key) == n == DISTINCT


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(sorted(VARIANTS)), min_size=1, max_size=12))
def test_any_sequence_of_calls_gets_the_right_results(names):
    f = make_affine()
    for name in names:
        check(f, VARIANTS[name])


def test_keywords_and_defaults():
    f = make_affine()
    for kwargs in ({}, {"k": 2}, {"flag": True}, {"k": 0.5, "flag": True}, {"flag": False}):
        check(f, (BASE,), kwargs)
    check(f, (BASE, 2))
    check(f, (BASE, 2, True))
    with pytest.raises(errors.ArgumentError):
        f(BASE, 1, False, 4)
    with pytest.raises(errors.ArgumentError):
        f(BASE, kk=1)
    with pytest.raises(errors.ArgumentError):
        f(BASE, 2, k=3)
    with pytest.raises(errors.ArgumentError):
        f(k=3)
    g = make_affine()
    check(g, (BASE,), {"flag": True, "k": 0.5})
    assert g._fast is not None  # keywords put in their places for the native entry


def test_the_native_entry_serves_repeated_calls_and_rejects_others():
    f = make_affine()
    check(f, (BASE, 2))
    native = f._fast
    assert native is not None and type(native).__name__ == "builtin_function_or_method"
    np.testing.assert_array_equal(native(BASE, 2), BASE + 2)
    np.testing.assert_array_equal(native(BASE), BASE + 1)  # default from the context
    for bad in [(BASE, 2.0), (BASE.astype(np.float64), 2), (BASE.T, 2), (BASE, True),
                (BASE[:2], 2), (BASE, 2 ** 70), (BASE.tolist(), 2), (), (BASE, 2, False, 1),
                (BASE.view(Subclass), 2)]:
        assert native(*bad) is MISS, bad


def test_recent_native_entries_serve_alternating_calls():
    f = make_affine()
    variants = [VARIANTS[name] for name in ("f32", "f64", "i32", "transposed", "k float")]
    for _ in range(3):
        for args in variants:
            check(f, args)
    assert len(f._recent) == 4 and f._fast is f._recent[0]
    f._calls.by_sig.clear()  # the recent entries alone must route these correctly
    for args in variants[1:]:
        check(f, args)
    assert not f._calls.by_sig


def test_layout_classes_are_exact():
    @hybrid(target="cpu")
    def double(x):
        return x * 2

    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    views = [a, a[:, 1:], a[:, ::2], a.T, a[::-1], a[1:3], a[:, 2:3]]
    for _ in range(2):
        for v in views:
            np.testing.assert_array_equal(double(v), v * 2)
    layouts = {key[0][1][3] for _, key in double._calls.by_key}
    assert layouts == {"C", "inner", "strided"}


def test_dynamic_shape_shares_a_native_entry():
    @hybrid(target="cpu", dynamic_shape=True)
    def neg(x):
        return -x

    for n in (1, 7, 100, 0):
        x = np.arange(n, dtype=np.float64)
        np.testing.assert_array_equal(neg(x), -x)
    assert len(neg._calls.by_key) == 1 and neg._fast is not None


def test_results_scalars_tuples_and_the_callers_own_array():
    @hybrid(target="cpu")
    def stats(x, n):
        x += 1
        return x, (x.sum(), n * 2, n > 1, None), [1.5, True]

    a = np.zeros(3, np.float32)
    for _ in range(3):
        out = stats(a, 2)
    assert out[0] is a and a.tolist() == [3.0, 3.0, 3.0]
    total, doubled, big, none = out[1]
    assert type(total) is np.float32 and total == 9 and type(doubled) is int and \
        doubled == 4 and big is True and none is None and out[2] == [1.5, True]
    assert stats._fast is not None


def test_bad_arguments_still_raise_argument_errors():
    @hybrid(target="cpu")
    def fill(x, v):
        x[0] = v
        return x

    a = np.zeros(4)
    fill(a, 1.0)
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    unaligned = np.frombuffer(bytes(40), np.float64, 4, offset=1)
    for bad in [(frozen, 1.0), (unaligned, 1.0), (a.astype(np.float32), 1.0)]:
        assert fill._fast(*bad) is MISS
    with pytest.raises(errors.ArgumentError, match="read-only"):
        fill(frozen, 1.0)
    with pytest.raises(errors.ArgumentError):
        fill(unaligned, 1.0)


def test_kernel_errors_propagate_through_the_native_entry():
    @hybrid(target="cpu")
    def checked(x, i):
        assert i < 3
        return x + i

    x = np.zeros(2)
    checked(x, 1)
    assert checked._fast is not None
    for _ in range(2):
        with pytest.raises(AssertionError, match="i < 3"):
            checked(x, 5)
    np.testing.assert_array_equal(checked(x, 2), x + 2)


def test_arguments_specialized_by_value():
    @hybrid(target="cpu")
    def total(x, axis, keep=False):
        return x.sum(axis=axis, keepdims=keep)

    for _ in range(2):
        for axis, keep in [(0, False), (1, False), (1, True), (-1, False), (0, True)]:
            np.testing.assert_allclose(total(BASE, axis, keep), BASE.sum(axis, keepdims=keep))
            np.testing.assert_allclose(total(BASE, axis=axis, keep=keep),
                                       BASE.sum(axis, keepdims=keep))
    assert total._by_value == {("axis",), ("keep",)}


def test_tuples_and_var_positional_go_through_python():
    @hybrid(target="cpu")
    def pair(xy, s):
        return xy[0] * s + xy[1]

    x, y = np.ones(3), np.arange(3.0)
    for s in (2.0, 3.0):
        np.testing.assert_array_equal(pair((x, y), s), x * s + y)
    assert pair._fast is None  # no native entry: the generated Python caller


def test_references_are_not_leaked():
    f = make_affine()
    x = np.ones(8, np.float32)
    f(x, 2)
    before = sys.getrefcount(x), sys.getrefcount(2.5)
    for _ in range(2000):
        f(x, 2)
    assert (sys.getrefcount(x), sys.getrefcount(2.5)) == before
    out = f(x, 2)
    assert sys.getrefcount(out) == 2  # only ``out`` (and the call's argument)


def test_environment_switch_to_interpret_is_seen(monkeypatch):
    @hybrid
    def inc(x):
        return x + 1

    x = np.zeros(2)
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    inc(x)
    inc(x)
    assert inc._fast is not None
    calls = []
    original = inc.__wrapped__
    monkeypatch.setattr(inc, "__wrapped__", lambda *a: calls.append(a) or original(*a))
    monkeypatch.setenv("PYASC_TARGET", "interpret")
    np.testing.assert_array_equal(inc(x), x + 1)
    assert len(calls) == 1


def test_threads_calling_several_specializations():
    f = make_affine()
    names = sorted(VARIANTS)
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(60):
                check(f, VARIANTS[names[(i + offset) % len(names)]])
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
