"""``pyasc.torch.autograd_op`` / ``fn.as_torch_op()``: a ``torch.autograd.Function``
whose backward is ``fn.vjp``; checked against torch's own gradients and with
``torch.autograd.gradcheck``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc.errors import ArgumentError, PyascError
from pyasc.testing import parametrize_targets

torch = pytest.importorskip("torch")
from pyasc.torch import autograd_op  # noqa: E402


@pyasc.hybrid
def mul(x, y, scale=1.0):
    return x * y * scale


@mul.def_grad
def mul_grad(x, y, scale, dout):
    return dout * y * scale, dout * x * scale


@pyasc.hybrid
def tanh(x):
    return np.tanh(x)


@tanh.def_grad
def tanh_grad(x, dout):
    t = np.tanh(x)
    return dout * (1 - t * t)


@pyasc.hybrid
def rowsum(x, *, keep=False):
    return x.sum(axis=1, keepdims=keep)


@rowsum.def_grad
def rowsum_grad(x, dout, *, keep=False):
    return np.broadcast_to(dout.reshape(dout.shape[0], 1), x.shape).copy()


@pyasc.hybrid
def tanh_layer(x, w):  # no registered gradient: the backward is derived (autodiff)
    return np.tanh(x @ w) * 2.0


@pyasc.hybrid
def sorted_fn(x):  # not differentiable: sort
    return np.sort(x) * 3


def _options(target):
    """gradcheck's float64 on ascend-sim: the AI Core has no float64; the function
    computes it in float32 (``device_float64="demote"``), so the tolerances are
    float32's."""
    if target == "cpu":
        return {}, {}
    return {"device_float64": "demote"}, {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-3}


def _on(fn, target, **options):
    return pyasc.hybrid(fn.__wrapped__, target=target, **options)


@parametrize_targets(("cpu", "ascend-sim"))
def test_gradcheck_float64_through_two_chained_ops(target):
    options, tol = _options(target)
    m, t = _on(mul, target, **options), _on(tanh, target, **options)
    m.def_grad(mul_grad.__wrapped__)
    t.def_grad(tanh_grad.__wrapped__)
    op_mul, op_tanh = autograd_op(m), t.as_torch_op()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W50070: float64 demoted on the device
        assert torch.autograd.gradcheck(lambda a, b: op_tanh(op_mul(a, b, 0.5)), (x, y),
                                        **tol)


def test_loss_backward_through_pyasc_and_torch_ops_matches_torch(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    op_mul, op_tanh = autograd_op(mul), autograd_op(tanh)
    loss = (op_tanh(op_mul(x, y, scale=2.0)) @ w).pow(2).mean()
    loss.backward()
    ref = [t.detach().clone().requires_grad_() for t in (x, y, w)]
    (torch.tanh(ref[0] * ref[1] * 2.0) @ ref[2]).pow(2).mean().backward()
    for got, want in zip((x, y, w), ref, strict=True):
        torch.testing.assert_close(got.grad, want.grad)


def test_inputs_not_requiring_grad_scalars_and_numpy_constants(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64)  # no grad wanted
    out = autograd_op(mul)(x, y, 3.0)
    assert out.requires_grad
    out.sum().backward()
    torch.testing.assert_close(x.grad, y * 3.0)
    assert y.grad is None
    x.grad = None
    autograd_op(mul)(x, np.full(3, 2.0), scale=1.0).sum().backward()  # numpy: a constant
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0, dtype=torch.float64))


def test_keyword_only_inputs_reach_forward_and_vjp(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    op = autograd_op(rowsum)
    assert op(x, keep=True).shape == (2, 1)
    assert torch.autograd.gradcheck(lambda a: op(a, keep=True), (x,))
    assert torch.autograd.gradcheck(lambda a: op(a), (x,))


def test_forward_does_not_copy_the_inputs(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    seen = []

    @pyasc.hybrid
    def probe(x):
        return x + 0

    @probe.def_grad
    def probe_grad(x, dout):
        return dout

    real = probe._dispatch

    def spy(args, kwargs):  # the arrays the kernel gets
        seen.extend(a.__array_interface__["data"][0] for a in args
                    if isinstance(a, np.ndarray))
        return real(args, kwargs)
    monkeypatch.setattr(probe, "_dispatch", spy)
    x = torch.randn(4, requires_grad=True)
    autograd_op(probe)(x).sum().backward()
    assert x.data_ptr() in seen


def test_the_automatic_gradient_backs_an_op_without_def_grad(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(autograd_op(tanh_layer), (x, w))
    autograd_op(tanh_layer)(x, w).sum().backward()
    x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
    (torch.tanh(x2 @ w2) * 2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)


def test_backward_of_a_function_that_cannot_be_differentiated_is_a_coded_error(
        monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    out = autograd_op(sorted_fn)(x)  # the forward runs
    torch.testing.assert_close(out, torch.tensor([3.0, 6.0, 9.0]))
    with pytest.raises(PyascError) as info:
        out.sum().backward()
    assert info.value.code == "E50013" and "def_grad" in (info.value.hint or "")


def test_integer_outputs_are_not_differentiable(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    @pyasc.hybrid
    def floor_int(x):
        return np.floor(x).astype(np.int64)

    out = autograd_op(floor_int)(torch.ones(3, requires_grad=True))
    assert out.dtype == torch.int64 and not out.requires_grad


def test_autograd_op_refuses_plain_functions():
    with pytest.raises(ArgumentError, match="takes a @hybrid function"):
        autograd_op(lambda x: x)


@pyasc.hybrid
def add_both(x, y):
    return x + y


@add_both.def_grad
def add_both_grad(x, y, dout):
    return dout, dout  # one array for both inputs, and it is dout itself


def test_gradients_sharing_memory_are_separated(monkeypatch):
    """x.grad and y.grad must not be one buffer: zeroing or accumulating one would
    silently change the other."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x, y = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0])
    op = autograd_op(add_both)
    (op(x, y) * w).sum().backward()
    x.grad.zero_()
    (op(x, y) * w).sum().backward()
    torch.testing.assert_close(x.grad, w)
    torch.testing.assert_close(y.grad, 2 * w)


@pyasc.hybrid
def tail(x):
    return x[1:]  # a view of the argument (pyasc returns views as numpy does)


@tail.def_grad
def tail_grad(x, dout):
    g = np.zeros_like(x)
    g[1:] = dout
    return g


def test_an_output_viewing_an_input_is_copied(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.arange(4.0, requires_grad=True)
    out = autograd_op(tail)(x)
    with torch.no_grad():
        out.mul_(10)  # must not reach x behind autograd's back
    torch.testing.assert_close(x.detach(), torch.arange(4.0))
    assert torch.autograd.gradcheck(autograd_op(tail), (torch.randn(4, dtype=torch.float64,
                                                                    requires_grad=True),))


@pyasc.hybrid
def double(x):
    return x * 2


@double.def_grad
def double_grad(x, dout):
    dout[...] = dout * 2  # writes into autograd's buffer: refused
    return dout


def test_a_gradient_writing_into_dout_is_refused(monkeypatch):
    """dout may be shared with other branches of the graph (here the sum's gradient
    feeds both uses of y): writing it in place would corrupt their gradients."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.ones(3, requires_grad=True)
    y = autograd_op(double)(x)
    with pytest.raises(ArgumentError, match="read-only but the operator writes"):
        (y + y).sum().backward()
