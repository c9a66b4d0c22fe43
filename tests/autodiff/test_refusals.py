"""What automatic differentiation refuses: E50013 at the user's line, never a zero."""

from __future__ import annotations

import ad_errors as P
import numpy as np
import pytest

import pyasc
from pyasc.errors import ArgumentError, NotDifferentiableError, UnsupportedSyntaxError

X = np.linspace(0.1, 1.2, 12).reshape(4, 3)

CASES = [(P.while_loop, (X,)), (P.runtime_trip_count, (X, 3)), (P.sorted_values, (X,)),
         (P.argmax_as_number, (X,)), (P.writes_input, (X.copy(),)), (P.product, (X,)),
         (P.scattered, (X,)), (P.runtime_loop_writes, (X, 2))]


@pytest.mark.parametrize("fn,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_refused_at_the_line(fn, args):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    dout = np.ones(np.shape(fn.__wrapped__(*copies)))
    with pytest.raises(NotDifferentiableError) as info:
        fn.vjp(*args, dout)
    err = info.value
    assert err.code == "E50013"
    assert err.filename == P.__file__
    assert err.lineno == P.error_line(fn)
    assert isinstance(err, UnsupportedSyntaxError)  # E50010's family: old handlers hold


def test_grad_needs_a_scalar_result():
    with pytest.raises(NotDifferentiableError, match="scalar result") as info:
        pyasc.grad(P.vector_result)(X)
    assert info.value.lineno == P.error_line(P.vector_result)


def test_input_writes_leave_the_input_alone():
    x = X.copy()
    with pytest.raises(NotDifferentiableError):
        P.writes_input.vjp(x, np.ones((4, 3)))
    np.testing.assert_array_equal(x, X)  # refused before anything ran


def test_dout_of_another_shape_is_refused():
    with pytest.raises(ArgumentError, match="dout has shape"):
        P.product.vjp(X, np.ones(5))


@pytest.mark.parametrize("argnums", [3, -1, (), (0, "a")])
def test_bad_argnums(argnums):
    with pytest.raises(ArgumentError, match="argnums"):
        pyasc.grad(P.runtime_trip_count, argnums=argnums)


def test_argnums_of_a_non_array():
    @pyasc.hybrid
    def scaled(x, k):
        return (x * k).sum()

    with pytest.raises(ArgumentError, match="'k'.*not a float array"):
        pyasc.grad(scaled, argnums=1)(X, 2.0)


def test_grad_of_a_plain_function_is_refused():
    with pytest.raises(ArgumentError, match="@hybrid"):
        pyasc.grad(lambda x: x)
