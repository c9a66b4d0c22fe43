"""torch CPU tensors as ``@hybrid`` arguments and results, without copies
(``pyasc.jit.tensors`` + ``pyasc.torch.tensors``): checked by data pointers and by
writes of the kernel landing in the caller's tensors."""

from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import ArgumentError
from pyasc.testing import parametrize_targets

torch = pytest.importorskip("torch")


@pyasc.hybrid
def scale_into(x, s):
    x[...] = x * s
    return x + 1


@pyasc.hybrid
def add(x, y):
    return x + y


@pyasc.hybrid
def ident(x):
    return x


@pyasc.hybrid
def total(x):
    return x.sum()


@pyasc.hybrid
def pair(x):
    return x * 2, x.shape[0]


@parametrize_targets(("cpu", "ascend-sim"))
def test_kernel_writes_land_in_the_tensor(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    before = x.data_ptr()
    r = scale_into(x, 2.0)
    assert x.data_ptr() == before
    assert torch.equal(x, torch.arange(6, dtype=torch.float32).reshape(2, 3) * 2)
    assert isinstance(r, torch.Tensor) and torch.equal(r, x + 1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64",
                                   "float16", "float32", "float64"])
def test_dtypes_round_trip_without_copies(dtype, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = (torch.arange(12) % 3).to(getattr(torch, dtype)).reshape(3, 4)
    r = ident(x)
    assert r is x  # a returned argument is the caller's own tensor
    y = add(x, x)
    assert isinstance(y, torch.Tensor) and y.dtype == (x + x).dtype
    np.testing.assert_array_equal(y.numpy(), x.numpy() + x.numpy())


def test_results_share_memory_with_the_kernels_arrays(monkeypatch):
    """The result tensor is the result buffer: ``torch.from_numpy``, not a copy."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    seen = []
    real = torch.from_numpy

    def spy(a):
        t = real(a)
        seen.append((a.__array_interface__["data"][0], t.data_ptr()))
        return t
    monkeypatch.setattr(torch, "from_numpy", spy)
    add(torch.ones(4), torch.ones(4))
    assert seen and all(p == q for p, q in seen)


def test_non_contiguous_views_are_read_and_written_in_place(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    view = base[1:, ::2].t()  # strided, transposed, offset
    assert not view.is_contiguous()
    expect = base.clone()
    expect[1:, ::2] *= 3
    r = scale_into(view, 3.0)
    assert torch.equal(base, expect)
    assert torch.equal(r, view + 1)


def test_zero_d_tensors_and_scalar_results(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.tensor(2.5, dtype=torch.float32)
    r = scale_into(x, 2.0)
    assert float(x) == 5.0 and r.shape == () and float(r) == 6.0
    s = total(torch.ones(3, 4))
    assert isinstance(s, torch.Tensor) and s.shape == () and float(s) == 12.0
    doubled, n = pair(torch.ones(2))
    assert isinstance(doubled, torch.Tensor) and n == 2 and type(n) is int


def test_mixed_numpy_and_torch_inputs_give_tensors(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    r = add(np.ones(3, np.float32), torch.ones(3))
    assert isinstance(r, torch.Tensor)
    assert isinstance(add(np.ones(3), np.ones(3)), np.ndarray)
    r = add(x=torch.ones(2), y=np.ones(2, np.float32))  # by keyword too
    assert isinstance(r, torch.Tensor) and torch.equal(r, torch.full((2,), 2.0))


def test_tensors_inside_tuples(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    @pyasc.hybrid
    def first_plus(xs):
        xs[0][...] = xs[0] + xs[1]
        return xs[0] * 1

    a, b = torch.ones(3), torch.full((3,), 2.0)
    r = first_plus((a, b))
    assert torch.equal(a, torch.full((3,), 3.0)) and isinstance(r, torch.Tensor)


def test_interpret_target_runs_the_python_on_arrays_and_returns_tensors(monkeypatch):
    """The reference target sees what the kernels see (ndarrays over the tensors'
    memory) and returns tensors as they do."""
    monkeypatch.setenv("PYASC_TARGET", "interpret")

    @pyasc.hybrid
    def twice_into(x):
        x[...] = x * 2
        return np.concatenate((x, x))

    x = torch.ones(3)
    r = twice_into(x)
    assert torch.equal(x, torch.full((3,), 2.0))
    assert isinstance(r, torch.Tensor) and torch.equal(r, torch.full((6,), 2.0))


def test_operator_state_tensor_is_updated_in_place(monkeypatch):
    class RunningMean(pyasc.AscendOperator):
        hybrid_options = dict(target="cpu")

        def __init__(self, n):
            self.mean = torch.zeros(n)
            self.momentum = 0.5

        def compute(self, x):
            self.mean[:] = self.momentum * self.mean + (1 - self.momentum) * x.mean(axis=0)
            return x - self.mean

    op = RunningMean(3)
    ptr = op.mean.data_ptr()
    r = op(torch.ones(2, 3))
    assert op.mean.data_ptr() == ptr and torch.allclose(op.mean, torch.full((3,), 0.5))
    assert isinstance(r, torch.Tensor) and torch.allclose(r, torch.full((2, 3), 0.5))
    op(np.ones((2, 3), np.float32))  # numpy input, torch state: still the same tensor
    assert torch.allclose(op.mean, torch.full((3,), 0.75))


def test_kernel_writes_bump_the_autograd_version(monkeypatch):
    """A tensor saved for backward and then overwritten by a kernel: torch reports it
    (as for its own in-place ops) instead of computing a stale gradient."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    w = torch.ones(3, requires_grad=True)
    x = torch.full((3,), 2.0)
    y = (w * x).sum()  # saves x for w's gradient
    v = x._version
    scale_into(x, 5.0)
    assert x._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    untouched = torch.ones(3)
    v = untouched._version
    add(untouched, untouched)  # read only: no bump
    assert untouched._version == v


def test_requires_grad_is_refused_with_grad_on_and_detached_under_no_grad(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(ArgumentError, match="'x' is a torch tensor that requires grad") \
            as info:
        add(x, torch.ones(3))
    assert info.value.code == "E50040" and "autograd_op" in info.value.hint
    with torch.no_grad():
        r = add(x, torch.ones(3))
    assert not r.requires_grad and torch.equal(r, torch.full((3,), 2.0))


@pytest.mark.parametrize("make, what", [
    (lambda: torch.ones(3, dtype=torch.complex64), "dtype torch.complex64"),
    (lambda: torch.ones(3).to_sparse(), "layout torch.sparse_coo"),
    (lambda: torch.ones(3, device="meta"), "on 'meta'"),
])
def test_unsupported_tensors_are_coded_errors_naming_the_argument(make, what, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    with pytest.raises(ArgumentError, match=f"argument 'y' is a torch tensor .*{what}"):
        add(np.ones(3, np.float32), make())


def test_bfloat16_without_ml_dtypes_is_refused_with_the_fix(monkeypatch):
    from pyasc.torch import tensors

    monkeypatch.setenv("PYASC_TARGET", "cpu")
    monkeypatch.setattr(tensors, "_ml_bfloat16", lambda: None)
    x = torch.tensor([1.0, 2.5, -3.0], dtype=torch.bfloat16)
    with pytest.raises(ArgumentError, match="'x' is a torch tensor of dtype torch.bfloat16") \
            as info:
        add(x, x)
    assert "ml_dtypes" in info.value.hint and "tensor.float()" in info.value.hint


@parametrize_targets(("cpu", "ascend-sim"))
def test_bfloat16_tensors_in_and_out_without_copies(target, monkeypatch):
    """With ml_dtypes, a bfloat16 tensor is an ml_dtypes bfloat16 array over its memory
    (a transposed view too) and a bfloat16 result is a bfloat16 tensor."""
    pytest.importorskip("ml_dtypes")
    monkeypatch.setenv("PYASC_TARGET", target)
    x = torch.linspace(-3, 3, 12, dtype=torch.bfloat16).reshape(3, 4)
    got = add(x.T, x.T)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, x.T + x.T, rtol=0, atol=0)
    y = torch.ones(4, dtype=torch.bfloat16)
    r = scale_into(y, 2.0)  # the write lands in y's own memory
    assert y.tolist() == [2.0] * 4 and r.dtype == torch.bfloat16 and r.tolist() == [3.0] * 4


def test_pyasc_imports_no_torch():
    import subprocess
    import sys
    code = "import sys, pyasc; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_writes_into_star_args_tensors_are_reported_too(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    @pyasc.hybrid
    def bump_all(scale, *xs):
        xs[1][...] = xs[1] * scale
        return xs[0] + xs[1]

    a, b = torch.ones(2), torch.ones(2)
    va, vb = a._version, b._version
    r = bump_all(3.0, a, b)
    assert torch.equal(b, torch.full((2,), 3.0)) and torch.equal(r, torch.full((2,), 4.0))
    assert b._version > vb and a._version == va  # only the written one
    with pytest.raises(ArgumentError, match=r"argument 'xs'\[1\] is a torch tensor of dtype"):
        bump_all(1.0, a, torch.ones(2, dtype=torch.complex64))


@pytest.mark.parametrize("make", [lambda: torch.ones(1).expand(4),
                                  lambda: torch.arange(6.0).unfold(0, 3, 1)],
                         ids=["expand", "unfold"])
def test_self_overlapping_tensors_are_read_but_never_written(make, monkeypatch):
    """A kernel writing an expanded tensor wrote its one element four times (x became 5,
    silently); torch refuses such writes, and so does pyasc now."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = make()
    before = x.clone()
    with pytest.raises(ArgumentError, match="read-only but the operator writes"):
        scale_into(x, 2.0)
    assert torch.equal(x, before)
    torch.testing.assert_close(total(x), x.sum())  # reading is fine


def test_overlap_rule_on_ordinary_layouts():
    from pyasc.torch.tensors import may_self_overlap

    base = torch.arange(24.0).reshape(2, 3, 4)
    for t in (base, base.transpose(0, 2), base[:, ::2, 1:], base[0, 1], torch.tensor(1.0),
              torch.ones(0, 3).expand(0, 3)):
        assert not may_self_overlap(t.numpy()), t.stride()
    assert may_self_overlap(torch.ones(3, 1).expand(3, 2).numpy())


def _spy_pointers(monkeypatch, fn) -> tuple[list[int], list[tuple[int, int]]]:
    """The data pointers of the arrays ``fn``'s kernel gets, and of each result array
    with the tensor ``torch.from_numpy`` made over it."""
    args_seen: list[int] = []
    wrapped: list[tuple[int, int]] = []
    real_dispatch, real_from_numpy = fn._dispatch, torch.from_numpy

    def dispatch(args, kwargs):
        args_seen.extend(a.__array_interface__["data"][0]
                         for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray))
        return real_dispatch(args, kwargs)

    def from_numpy(a):
        t = real_from_numpy(a)
        wrapped.append((a.__array_interface__["data"][0], t.data_ptr()))
        return t
    monkeypatch.setattr(fn, "_dispatch", dispatch)
    monkeypatch.setattr(torch, "from_numpy", from_numpy)
    return args_seen, wrapped


def test_vjp_takes_and_returns_tensors_without_copies(monkeypatch):
    @pyasc.hybrid
    def cube(x, k):
        return x * x * x * k

    monkeypatch.setenv("PYASC_TARGET", "cpu")
    auto = cube._automatic_vjp()
    args_seen, wrapped = _spy_pointers(monkeypatch, auto)
    x, d = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    gx, gk = cube.vjp(x, 2.0, d)
    assert isinstance(gx, torch.Tensor) and gk is None
    torch.testing.assert_close(gx, 6 * x * x * d)
    assert x.data_ptr() in args_seen and d.data_ptr() in args_seen  # read in place
    assert wrapped and all(p == q for p, q in wrapped)  # the result arrays' memory


def test_vjp_of_a_registered_gradient_takes_and_returns_tensors(monkeypatch):
    @pyasc.hybrid
    def mul(a, b):
        return a * b

    @mul.def_grad
    def mul_grad(a, b, dout):
        return dout * b, dout * a

    monkeypatch.setenv("PYASC_TARGET", "cpu")
    args_seen, wrapped = _spy_pointers(monkeypatch, mul_grad)
    a, b, d = (torch.randn(3, 4) for _ in range(3))
    ga, gb = mul.vjp(a, b, d)
    assert isinstance(ga, torch.Tensor) and isinstance(gb, torch.Tensor)
    torch.testing.assert_close(ga, d * b)
    torch.testing.assert_close(gb, d * a)
    assert {a.data_ptr(), b.data_ptr(), d.data_ptr()} <= set(args_seen)
    assert wrapped and all(p == q for p, q in wrapped)
    assert isinstance(mul.vjp(a.numpy(), b.numpy(), d.numpy())[0], np.ndarray)
