"""``pyasc.torch.custom_op``: ``torch.library`` custom ops (forward and ``fn.vjp``) that
``torch.compile`` keeps in one graph (``fullgraph=True`` fails on any graph break)."""

from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import ArgumentError

torch = pytest.importorskip("torch")
from pyasc.torch import custom_op  # noqa: E402


@pyasc.hybrid(target="cpu")
def lib_mul(x, y, scale=1.0):
    return x * y * scale


@lib_mul.def_grad
def lib_mul_grad(x, y, scale, dout):
    return dout * y * scale, dout * x * scale


@pyasc.hybrid(target="cpu")
def lib_split(x):
    return x * 2, (x > 0)


@pyasc.hybrid(target="cpu")
def lib_bad(x, mode="a"):
    return x


@pytest.fixture(scope="module")
def op():
    return custom_op(lib_mul)


def _inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),
            torch.randn(3, 4, dtype=torch.float64, requires_grad=True))


def test_opcheck_schema_fake_autograd(op):
    x, y = _inputs()
    result = torch.library.opcheck(torch.ops.pyasc.lib_mul, (x, y, 2.0))
    assert set(result.values()) == {"SUCCESS"}, result


def test_gradcheck_float64(op):
    assert torch.autograd.gradcheck(lambda a, b: op(a, b, 0.5), _inputs())


def test_compile_fullgraph_forward_and_backward(op):
    def model(a, b):
        return torch.sin(op(a, b, 2.0)).sum()

    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    x, y = _inputs()
    compiled(x, y).backward()
    got = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    model(x, y).backward()
    torch.testing.assert_close(got, (x.grad, y.grad))


def test_fake_results_come_from_the_ir_types():
    two = custom_op(lib_split, "lib_split", outputs=2)  # torch.ops.pyasc.lib_split
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b = two(torch.empty(5, 2, dtype=torch.float32))
    assert (a.shape, a.dtype, b.shape, b.dtype) == ((5, 2), torch.float32, (5, 2),
                                                    torch.bool)
    real = two(torch.ones(2))
    assert torch.equal(real[0], torch.full((2,), 2.0)) and real[1].dtype == torch.bool


def test_parameters_a_schema_cannot_hold_are_refused():
    with pytest.raises(ArgumentError, match="parameter 'mode' defaults to a str"):
        custom_op(lib_bad)


def test_a_returned_input_is_copied():
    @pyasc.hybrid(target="cpu")
    def lib_ident(x):
        return x

    ident = custom_op(lib_ident)
    x = torch.ones(3)
    out = ident(x)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


@pytest.mark.slow
def test_compile_with_inductor(op):
    """The default backend (inductor, which generates C++ around the op): ~35 s."""
    compiled = torch.compile(lambda a, b: torch.relu(op(a, b, 3.0)), fullgraph=True)
    x, y = (t.detach() for t in _inputs())
    torch.testing.assert_close(compiled(x, y), torch.relu(x * y * 3.0))


@pyasc.hybrid(target="cpu")
def lib_add2(x, y):
    return x + y


@lib_add2.def_grad
def lib_add2_grad(x, y, dout):
    return dout, dout  # one array for both inputs, and dout itself


@pyasc.hybrid(target="cpu")
def lib_tail(x):
    return x[1:]  # a view of the argument


@lib_tail.def_grad
def lib_tail_grad(x, dout):
    g = np.zeros_like(x)
    g[1:] = dout
    return g


def test_vjp_and_forward_results_never_alias():
    add2, tail = custom_op(lib_add2), custom_op(lib_tail)
    x = torch.arange(4.0, dtype=torch.float64, requires_grad=True)
    y = torch.ones(4, dtype=torch.float64, requires_grad=True)
    for name, args in (("lib_add2", (x, y)), ("lib_tail", (x,))):
        result = torch.library.opcheck(getattr(torch.ops.pyasc, name), args)
        assert set(result.values()) == {"SUCCESS"}, (name, result)
    view = tail(x)
    assert not np.may_share_memory(view.detach().numpy(), x.detach().numpy())
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    (add2(x, y) * w).sum().backward()
    x.grad.zero_()  # y.grad is its own buffer
    torch.testing.assert_close(y.grad, w)


def test_compile_runs_plain_calls_and_autograd_ops_eagerly(op):
    """Without custom_op, torch.compile must not trace pyasc's own frames (it traced
    its numpy bookkeeping as torch code: E50050): the call is a graph break, run as
    Python, and values and gradients are right."""
    from pyasc.torch import autograd_op

    op_mul = autograd_op(lib_mul)

    def model(a, b):
        return torch.sin(op_mul(a, b, 2.0)).sum() + lib_mul(a.detach(), b.detach()).sum()

    x, y = _inputs()
    got = torch.compile(model, backend="aot_eager")(x, y)
    got.backward()
    want_x = x.grad.clone()
    x.grad = y.grad = None
    torch.testing.assert_close(got, model(x, y))
    model(x, y).backward()
    torch.testing.assert_close(want_x, x.grad)
