"""``fn.vjp`` (automatic), ``pyasc.grad`` and ``pyasc.value_and_grad``: the result
conventions, the targets, caching, and ``def_grad`` taking precedence."""

from __future__ import annotations

import numpy as np
import pytest
from ad_fdcheck import numeric_vjp

import pyasc
from pyasc import hybrid
from pyasc.ops import stop_gradient
from pyasc.testing import parametrize_targets

RNG = np.random.default_rng(3)
X = RNG.standard_normal((5, 4))
W = RNG.standard_normal((4, 3))


@hybrid
def loss(x, w, scale=2.0):
    h = np.tanh(x @ w)
    return (h * h).mean() * scale


def test_grad_int_and_tuple_argnums():
    gw = pyasc.grad(loss, argnums=1)(X, W)
    expected = numeric_vjp(loss.__wrapped__, [X, W], np.float64(1.0), 1)
    np.testing.assert_allclose(gw, expected, rtol=1e-6)
    gx, gw2 = pyasc.grad(loss, argnums=(0, 1))(X, W)
    assert gx.shape == X.shape
    np.testing.assert_allclose(gw2, gw, rtol=1e-12)
    np.testing.assert_allclose(pyasc.grad(loss)(X, W), gx, rtol=1e-12)


def test_value_and_grad_returns_the_forward_value():
    value, (gx, gw) = pyasc.value_and_grad(loss, argnums=(0, 1))(X, W, scale=3.0)
    assert value == pytest.approx(loss.__wrapped__(X, W, 3.0), rel=1e-12)
    assert isinstance(value, float | np.floating)
    np.testing.assert_allclose(gw, pyasc.grad(loss, 1)(X, W) * 1.5, rtol=1e-10)
    v2, g2 = pyasc.value_and_grad(loss)(X, W)
    np.testing.assert_allclose(g2, gx / 1.5, rtol=1e-10)


def test_vjp_convention_one_entry_per_input():
    @hybrid
    def mixed(x, idx, k, pair=(1, 2)):
        return x[idx] * k

    x, idx = X.astype(np.float32), np.array([4, 0])
    gx, gidx, gk, gpair = mixed.vjp(x, idx, 2.0, np.ones((2, 4), np.float32))
    assert gx.dtype == np.float32 and gx.shape == x.shape
    np.testing.assert_array_equal(gx[[0, 4]], 2.0)
    assert gx[1:4].sum() == 0.0
    assert gidx.dtype == idx.dtype and not gidx.any()  # an integer input: zeros
    assert gk is None and gpair is None


def test_vjp_of_varargs_counts_each_item():
    @hybrid
    def total(*xs):
        return xs[0] * xs[1] + xs[2]

    a, b, c = X, X + 1.0, X * 2.0
    ga, gb, gc = total.vjp(a, b, c, np.ones_like(X))
    np.testing.assert_allclose(ga, b)
    np.testing.assert_allclose(gb, a)
    np.testing.assert_allclose(gc, 1.0)


def test_dout_parameter_name_does_not_clash():
    @hybrid
    def f(x, dout):
        return x * dout

    gx, gd = f.vjp(X, X * 2.0, np.ones_like(X))
    np.testing.assert_allclose(gx, X * 2.0)
    np.testing.assert_allclose(gd, X)


def test_registered_gradient_wins():
    @hybrid
    def f(x):
        return x * 2.0

    assert np.allclose(f.vjp(X, np.ones_like(X))[0], 2.0)  # automatic

    @f.def_grad
    def f_grad(x, dout):
        return dout * 0.0 + 7.0

    np.testing.assert_allclose(f.vjp(X, np.ones_like(X))[0], 7.0)


def test_compiled_once_per_specialization():
    @hybrid
    def f(x):
        return np.exp(x)

    f.vjp(X, X)
    auto = f._automatic_vjp()
    f.vjp(X * 2.0, X)
    assert f._automatic_vjp() is auto and len(auto.specializations) == 1
    f.vjp(X.astype(np.float32), X.astype(np.float32))
    assert len(auto.specializations) == 2


def test_interpret_target_runs_the_backward_ir(monkeypatch):
    want = pyasc.value_and_grad(loss, argnums=(0, 1))(X, W)
    monkeypatch.setenv("PYASC_TARGET", "interpret")
    value, (gx, gw) = pyasc.value_and_grad(loss, argnums=(0, 1))(X, W)
    assert value == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(gx, want[1][0], rtol=1e-10)
    np.testing.assert_allclose(loss.vjp(X, W, 2.0, 1.5)[1], want[1][1] * 1.5, rtol=1e-10)


@parametrize_targets(("cpu", "ascend-sim"))
def test_layernorm_backward_on_each_target(monkeypatch, target):
    @hybrid
    def layernorm(x, g, b):
        m = x.mean(axis=-1, keepdims=True)
        v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5) * g + b

    x = RNG.standard_normal((8, 16)).astype(np.float32)
    g, b = RNG.standard_normal(16).astype(np.float32), np.zeros(16, np.float32)
    dout = RNG.standard_normal((8, 16)).astype(np.float32)
    x64, g64, b64, d64 = (a.astype(np.float64) for a in (x, g, b, dout))
    want = [numeric_vjp(layernorm.__wrapped__, [x64, g64, b64], d64, i) for i in range(3)]
    monkeypatch.setenv("PYASC_TARGET", target)
    got = layernorm.vjp(x, g, b, dout)
    for gi, wi in zip(got, want, strict=True):
        assert gi.dtype == np.float32
        np.testing.assert_allclose(gi, wi, rtol=2e-3, atol=2e-3)


@hybrid
def _clipped(a, b):
    return np.tanh(a) * b


@_clipped.def_grad
def _clipped_grad(a, b, dout):
    # deliberately not tanh's derivative: the test sees which gradient ran
    return dout * 100.0, dout * 0.0 + 7.0


@hybrid
def _caller(x, y):
    return (_clipped(x * 2.0, y) + _clipped(y, x)).sum()


def test_registered_gradient_of_a_callee_is_used_inside_the_caller():
    gx, gy = pyasc.grad(_caller, argnums=(0, 1))(X, X + 1.0)
    np.testing.assert_allclose(gx, 207.0)  # 2 * 100 + 7
    np.testing.assert_allclose(gy, 107.0)
    dx, dy = _caller.vjp(X, X + 1.0, 0.5)
    np.testing.assert_allclose(dx, 107.0)  # 0.5 * 100 * 2 + 7 (this gradient ignores dout)
    # the forward itself is the callee's body, inlined as before
    assert "custom_vjp" not in _caller.ir(X, X, optimized=False)
    assert _caller(X, X) == pytest.approx(_caller.__wrapped__(X, X))


SIM_PROGRAMS = ["take", "cross_entropy", "slices_of_inputs", "matmul_batched", "concat",
                "reductions", "cumulative"]


@parametrize_targets(("ascend-sim",))
@pytest.mark.parametrize("name", SIM_PROGRAMS)
def test_backward_on_the_device_matches_the_cpu(monkeypatch, target, name):
    import ad_programs

    fn = getattr(ad_programs, name)
    x, y = (RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    d = np.ones(np.shape(fn.__wrapped__(x, y)), np.float32)
    want = fn.vjp(x, y, d)
    monkeypatch.setenv("PYASC_TARGET", target)
    for got, w in zip(fn.vjp(x, y, d), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)


def test_a_callee_gradient_is_part_of_the_cache_key():
    from pyasc.jit.fingerprint import function_digest

    @hybrid
    def callee(a):
        return a * 2.0

    @hybrid
    def caller(x):
        return callee(x).sum()

    plain = function_digest(caller)

    @callee.def_grad
    def callee_grad(a, dout):
        return dout * 2.0

    registered = function_digest(caller)
    assert registered != plain

    @callee.def_grad
    def callee_grad_2(a, dout):
        return dout * 3.0

    assert function_digest(caller) not in (plain, registered)
    np.testing.assert_allclose(pyasc.grad(caller)(X), 3.0)


@hybrid
def _half_stopped(x, y):
    s = stop_gradient(x * y)  # a value, not a path for the gradient
    return (x * s + stop_gradient(y)).sum()


@parametrize_targets(("interpret", "cpu", "ascend-sim"))
def test_stop_gradient_passes_no_gradient(monkeypatch, target):
    monkeypatch.setenv("PYASC_TARGET", target)
    x, y = X[:2].astype(np.float32), X[2:4].astype(np.float32)
    gx, gy = pyasc.grad(_half_stopped, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, x * y, rtol=1e-6)  # d/dx of x * s with s fixed
    np.testing.assert_allclose(gy, np.zeros_like(y))
    assert _half_stopped(x, y) == pytest.approx(_half_stopped.__wrapped__(x, y), rel=1e-5)


def test_stop_gradient_leaves_no_op_in_compiled_code():
    x, y = X[:2], X[2:4]
    assert '"autodiff.' not in _half_stopped.ir(x, y, optimized=False)
    grad = pyasc.grad(_half_stopped, argnums=(0, 1))
    assert '"autodiff.' not in grad.ir(x, y, optimized=False)


def test_softmax_does_not_differentiate_its_shift():
    # softmax's row maximum is a shift with an exact gradient of 0 (torch and JAX do
    # not differentiate it): its backward has no tie count of the maximum
    import pyasc.ops as O

    auto = O.softmax._automatic_vjp()
    text = auto.ir(X, -1, **{auto.dout_name: X}, optimized=False)
    assert '"tensor.max"' in text and 'predicate = "eq"' not in text


@hybrid
def _write_through_stopped(x):
    y = stop_gradient(x)  # x itself, as in Python: a write through y lands in x
    y[0] = 5.0
    return x.sum()


def test_stop_gradient_of_an_array_is_the_array():
    assert _write_through_stopped(np.ones(3)) == _write_through_stopped.__wrapped__(
        np.ones(3)) == 7.0
