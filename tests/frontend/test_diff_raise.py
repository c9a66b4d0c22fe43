"""``raise`` of built-in exceptions in compiled code (``frontend/raising.py``): the same
exception as Python's, with Python's message text, at the user's line, on the IR
interpreter, the CPU and the AscendC simulator (the status word of the device kernel)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, compare, rand, run

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def raises_like_python(fn, *args, at: str, runners=RUNNERS, where=None):
    """Every runner raises the exception the Python function raises, with its text
    after ``file:line:col: ``, the line being the ``raise`` of ``where`` (default
    ``fn``) that contains ``at``."""
    try:
        fn.__wrapped__(*args)
    except Exception as exc:
        expected = exc
    else:
        raise AssertionError("the reference did not raise")
    source = getattr(where or fn, "__wrapped__", where or fn)
    lines, first = inspect.getsourcelines(source)
    (line,) = [first + k for k, text in enumerate(lines) if "raise" in text and at in text]
    for runner in runners:
        with pytest.raises(type(expected)) as info:
            run(fn, runner, args, {})
        assert type(info.value) is type(expected), runner
        place, _, text = str(info.value).partition(": ")
        assert text.splitlines()[0] == str(expected), runner
        assert place.split(":")[-2] == str(line), (runner, place)


def check(fn, *args, runners=RUNNERS):
    expected, skipped = compare(fn, *args, runners=runners)
    assert not skipped, skipped
    return expected


@hybrid
def positive_rows(x):
    if x.shape[0] > 100:
        raise ValueError("too many rows")  # decided when compiling: never compiled
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError(f"row {i} is negative: {x[i]!r} ({x[i]:.3f}, {x[i] < -1})")
        total += x[i]
    return total * 2


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fstring_of_runtime_scalars(dtype):
    good = np.array([1, 0.5, 2], dtype)
    check(positive_rows, good)
    raises_like_python(positive_rows, np.array([1, -0.25, 2], dtype), at="is negative")
    raises_like_python(positive_rows, np.array([1, 3, -2.5], dtype)[::-1], at="is negative")


@hybrid
def classes(x, k):
    if k == 0:
        raise IndexError("index zero")
    if k == 1:
        raise RuntimeError
    if k == 2:
        raise ZeroDivisionError(k)
    if k == 3:
        raise NotImplementedError(f"{k:+d} {'const'!r} {x.shape}")
    return x + k


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_builtin_exception_classes(k):
    at = ["IndexError", "RuntimeError", "ZeroDivision", "NotImplemented"][k]
    raises_like_python(classes, rand((3,), "float32"), k, at=at)
    check(classes, rand((3,), "float32"), 7)


def validate(v, limit):
    if v > limit:
        raise OverflowError(f"{v} exceeds {limit}")
    return v


@hybrid
def through_a_helper(x, limit):
    out = np.zeros(x.shape[0], np.int64)
    i = 0
    while i < x.shape[0]:
        out[i] = validate(x[i], limit) * 2
        i += 1
    return out


def test_raise_in_a_helper_inside_a_while_loop():
    x = np.array([3, 1, 9, 2], np.int32)
    check(through_a_helper, x, 10)
    raises_like_python(through_a_helper, x, 5, at="exceeds", where=validate)


@hybrid
def scalars_of_every_kind(x, n, f):
    u = x.astype(np.uint64)[0]
    b = bool(x[1] > 0)
    if n > 2:
        raise ValueError(f"{n} {u} {b} {f} {x[0] * 2:g} {np.int8(n)!r}")
    return x


def test_formats_of_python_and_numpy_scalars():
    x = np.array([2**63 + 5, 1], np.uint64).astype(np.float64)
    # a weak Python float (f) is a float64: the device has none, so the CPU runners
    raises_like_python(scalars_of_every_kind, x, 3, 0.1, at="ValueError",
                       runners=DEFAULT_RUNNERS)


@hybrid
def bare(x):
    raise


@hybrid
def with_cause(x):
    raise ValueError("a") from None


class MyError(ValueError):
    pass


@hybrid
def user_class(x):
    raise MyError("mine")


@hybrid
def array_message(x):
    raise ValueError(f"bad {x}")


@pytest.mark.parametrize("fn,match", [
    (bare, "bare 'raise'"), (with_cause, "'raise ... from ...'"),
    (user_class, "built-in exceptions"), (array_message, "run-time scalars"),
])
def test_unsupported_raises_are_coded_errors(fn, match):
    with pytest.raises(errors.UnsupportedSyntaxError, match=match):
        fn.ir(np.ones(3, np.float32))
