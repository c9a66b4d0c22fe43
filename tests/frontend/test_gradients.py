"""``fn.vjp(*inputs, dout)`` with ``@fn.def_grad``: the registered gradients agree with
central finite differences on every target, defaults reach the gradient function,
non-array inputs get ``None``, and wrong gradients are coded errors at their line."""

from __future__ import annotations

import numpy as np
import pytest
from test_errors import load

from pyasc import errors, hybrid

TARGETS = ("interpret", "cpu", "ascend-sim")


@hybrid
def squared_error(pred, target):
    diff = pred - target
    return np.sum(diff ** 2)


@squared_error.def_grad
def squared_error_grad(pred, target, dout):
    return 2 * (pred - target) * dout, -2 * (pred - target) * dout


@hybrid
def focal(z, y, gamma=2.0):
    """Binary focal loss on logits ``z`` with (soft) labels ``y``."""
    p = 1.0 / (1.0 + np.exp(-z))
    pos = y * (1 - p) ** gamma * np.log(p)
    neg = (1 - y) * p ** gamma * np.log(1 - p)
    return -np.sum(pos + neg)


@focal.def_grad
def focal_grad(z, y, gamma, dout):
    p = 1.0 / (1.0 + np.exp(-z))
    dpos = gamma * p * (1 - p) ** gamma * np.log(p) - (1 - p) ** (gamma + 1)
    dneg = p ** (gamma + 1) - gamma * p ** gamma * (1 - p) * np.log(1 - p)
    dz = (y * dpos + (1 - y) * dneg) * dout
    dy = (p ** gamma * np.log(1 - p) - (1 - p) ** gamma * np.log(p)) * dout
    return dz, dy


def finite_differences(fn, args: list, dout: float, h: float = 1e-6) -> list:
    """Central differences of ``dout * fn(*args)`` for every element of every array."""
    out = []
    for k, a in enumerate(args):
        if not isinstance(a, np.ndarray):
            out.append(None)
            continue
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi, lo = [x.copy() if isinstance(x, np.ndarray) else x for x in args], \
                [x.copy() if isinstance(x, np.ndarray) else x for x in args]
            hi[k][idx] += h
            lo[k][idx] -= h
            g[idx] = (fn.__wrapped__(*hi) - fn.__wrapped__(*lo)) / (2 * h) * dout
        out.append(g)
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_squared_error_gradient_matches_finite_differences(target, monkeypatch, request):
    monkeypatch.setenv("PYASC_TARGET", target)
    if target == "ascend-sim":  # float64 finite differences: float64 device code
        request.getfixturevalue("float64_soc")
    rng = np.random.default_rng(1)
    pred, tgt = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    got = squared_error.vjp(pred, tgt, 0.5)
    want = finite_differences(squared_error, [pred, tgt], 0.5)
    for g, w, x in zip(got, want, (pred, tgt), strict=True):
        assert g.shape == x.shape and g.dtype == x.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("target", TARGETS)
def test_focal_loss_gradient_matches_finite_differences(target, monkeypatch, request):
    monkeypatch.setenv("PYASC_TARGET", target)
    if target == "ascend-sim":  # float64 finite differences: float64 device code
        request.getfixturevalue("float64_soc")
    rng = np.random.default_rng(2)
    z, y = rng.standard_normal(7) * 2, rng.random(7)
    for args in ([z, y], [z, y, 3.0]):  # gamma: the default 2.0, then given
        got = focal.vjp(*args, 1.5)
        want = finite_differences(focal, args, 1.5)
        assert len(got) == 3 and got[2] is None  # one per parameter, defaults too
        for g, w in zip(got[:2], want[:2], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)


def test_float32_gradients_keep_the_input_dtype(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    p, t = np.ones(4, np.float32), np.zeros(4, np.float32)
    gp, gt = squared_error.vjp(p, t, 1.0)
    assert gp.dtype == gt.dtype == np.float32 and gp.tolist() == [2.0] * 4


def test_vjp_needs_dout():
    with pytest.raises(errors.ArgumentError, match="missing dout"):
        squared_error.vjp()


GRAD_CASES = [
    ("    return 2 * (p - t) * dout\n", "E50001", "returned 1 value(s) for 2 array"),
    ("    return 1.0, t\n", "E50001", "'p' is a float"),
    ("    return np.sum(p) * dout, t\n", "E50002", "has shape (), the input (3,)"),
    ("    return (p - t)[:2] * dout, t\n", "E50002", "has shape (2,), the input (3,)"),
    ("    return (p - t).astype(np.float64), t\n", "E50001", "is float64, the input float32"),
    ("    return p, t, dout\n", "E50001", "returned 3 value(s)"),
]


@pytest.mark.parametrize("ret,code,message", GRAD_CASES)
def test_wrong_gradients_are_coded_errors_at_the_return(tmp_path, ret, code, message):
    body = ("@hybrid\ndef f(p, t):\n    return np.sum((p - t) ** 2)\n\n"
            "@f.def_grad\ndef g(p, t, dout):\n" + ret)
    f, path = load(tmp_path, body)
    p, t = np.ones(3, np.float32), np.zeros(3, np.float32)
    with pytest.raises(errors.PyascError) as info:
        f.vjp(p, t, 1.0)
    err = info.value
    assert err.code == code and message in err.message, str(err)
    assert (err.filename, err.lineno, err.col_offset) == (str(path), 10, 4)


def test_a_value_for_a_non_array_input_is_an_error(tmp_path):
    body = ("@hybrid\ndef f(p, k):\n    return np.sum(p * k)\n\n"
            "@f.def_grad\ndef g(p, k, dout):\n    return p * dout, 1.0\n")
    f, _ = load(tmp_path, body)
    with pytest.raises(errors.TypeMismatchError, match="'k', which is not an array"):
        f.vjp(np.ones(2), 2.0, 1.0)
