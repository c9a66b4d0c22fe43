"""``AscendOperator``: compute compiled like ``@hybrid``, array attributes as state updated
in place, other attributes as compile-time constants, helpers inlined, inspection
methods, options per class and the coded errors of bad operators."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_errors import load

from pyasc import AscendOperator, errors, hybrid
from pyasc.jit.fingerprint import function_digest

TARGETS = ("cpu", "ascend-sim")


@hybrid
def relu(x):
    return np.maximum(x, 0)


class RunningNorm(AscendOperator):
    """Running mean (state written in place), a counter, a constant, helpers."""

    def __init__(self, n, momentum=0.9):
        self.mean = np.zeros(n, np.float32)
        self.count = np.zeros((), np.int64)
        self.momentum = momentum

    def update(self, x):
        self.mean[:] = self.momentum * self.mean + (1 - self.momentum) * x.mean(axis=0)
        self.count += 1

    @staticmethod
    def centre(x, m):
        return x - m

    def compute(self, x):
        self.update(x)
        return relu(self.centre(x, self.mean))


def _reference(op: AscendOperator, *args):
    """compute run as Python on a copy of the instance: (result, instance after)."""
    twin = copy.deepcopy(op)
    return type(op).compute(twin, *args), twin


@pytest.mark.parametrize("target", TARGETS)
def test_state_is_updated_in_place_as_numpy_would(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    op = RunningNorm(4)
    mean = op.mean
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((5, 4)).astype(np.float32)
        want, twin = _reference(op, x)
        got = op(x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(op.mean, twin.mean, rtol=1e-6, atol=1e-7)
        assert op.count == twin.count
    assert op.mean is mean and op.count == 3  # the instance's own arrays


def test_interpret_runs_compute_itself(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "interpret")
    op = RunningNorm(2)
    compiled = len(op.specializations)  # (of the class: other tests' too)
    op(np.ones((3, 2), np.float32))
    assert op.count == 1 and len(op.specializations) == compiled


def test_changing_a_constant_attribute_recompiles(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    class Scale(AscendOperator):
        def __init__(self, k):
            self.k = k
            self.shape = (2, 3)

        def compute(self, x):
            return x.reshape(self.shape) * self.k

    op = Scale(2.0)
    x = np.arange(6, dtype=np.float64)
    assert op(x).tolist() == [[0, 2, 4], [6, 8, 10]]
    op.k = 3.0
    assert op(x)[1].tolist() == [9, 12, 15]
    op.shape = (3, 2)
    assert op(x).shape == (3, 2)
    assert len(op.specializations) == 3
    op.k = 2.0
    op.shape = (2, 3)
    assert op(x)[1].tolist() == [6, 8, 10] and len(op.specializations) == 3
    kinds = sorted(str(info.types) for info in op.specializations.values())
    assert "const 2.0" in kinds[0] and "float64[6]" in kinds[0]


def test_instances_share_the_compiled_class_and_keep_their_own_state(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    class Norm(RunningNorm):  # a class of its own: its own specializations
        pass

    a, b = Norm(3), Norm(3)
    a(np.ones((2, 3), np.float32))
    b(np.full((2, 3), 10, np.float32))
    assert a.mean.tolist() == pytest.approx([0.1] * 3) and b.mean.tolist() == \
        pytest.approx([1.0] * 3)
    assert len(a.specializations) == 1 and a.specializations == b.specializations


def test_dynamic_shape_option_compiles_once_for_every_size():
    class Norm(AscendOperator):
        hybrid_options = dict(target="cpu", dynamic_shape=True)

        def __init__(self):
            self.eps = 1e-5

        def compute(self, x):
            return (x - x.mean()) / np.sqrt(x.var() + self.eps)

    op = Norm()
    for n in (5, 17, 64):
        x = np.random.default_rng(n).standard_normal(n)
        np.testing.assert_allclose(op(x), (x - x.mean()) / np.sqrt(x.var() + 1e-5))
    assert len(op.specializations) == 1
    (info,) = op.specializations.values()
    assert info.types["x"] == "float64[?]" and info.targets == ("cpu",)


def test_inspection_mirrors_hybrid(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    op = RunningNorm(4)
    x = np.ones((2, 4), np.float32)
    text = op.ir(x)
    assert "%self_mean: memref<4xf32>" in text and "%x: memref<2x4xf32>" in text
    assert "test_operator.py" in text
    assert "__aicore__" in op.ascendc(x)
    assert op.kernel(x, target="cpu") is op.kernel(x)
    assert op.mean.tolist() == [0, 0, 0, 0]  # inspecting does not run


def test_cache_key_covers_the_helper_methods(tmp_path):
    body = """
    from pyasc import AscendOperator
    SCALE = 2.0

    class Op(AscendOperator):
        def helper(self, x):
            return x * SCALE

        def compute(self, x):
            return self.helper(x)

    f = Op()
    """
    op, _ = load(tmp_path, body)
    fn = type(op)._function()
    before = function_digest(fn)
    fn.__wrapped__.__globals__["SCALE"] = 3.0
    assert function_digest(fn) != before


def _error(tmp_path, body: str, *args) -> errors.PyascError:
    with pytest.raises(errors.PyascError) as info:
        op, _ = load(tmp_path, "from pyasc import AscendOperator\n" + body)
        op(*args)
    return info.value


X = np.zeros((3, 4), np.float32)
# (body, expected code, line, column); line 5 is the first line of ``body``
ERROR_CASES = [
    ("class Op(AscendOperator):\n    def __init__(self):\n        self.a = 1\n"
     "f = Op()\n", "E50010", 5, 0),
    ("class Op(AscendOperator):\n    def compute(self, x):\n        return x + self.w\n"
     "f = Op()\n", "E50012", 7, 19),
    ("class Op(AscendOperator):\n    def compute(self, x):\n        self.w = x\n"
     "        return x\nf = Op()\n", "E50010", 7, 8),
    ("class Op(AscendOperator):\n    def __init__(self):\n        self.n = 0\n"
     "    def compute(self, x):\n        self.n += 1\n        return x\nf = Op()\n",
     "E50010", 9, 8),
    ("class Op(AscendOperator):\n    def compute(self, x):\n        return g(self)\n"
     "f = Op()\n", "E50010", 7, 17),
    ("class Op(AscendOperator):\n    def __init__(self):\n        self.d = {}\n"
     "    def compute(self, x):\n        return x + self.d\nf = Op()\n", "E50010", 9, 19),
    ("class Op(AscendOperator):\n    def __init__(self):\n        self.w = np.ones((5, 2))\n"
     "    def compute(self, x):\n        return x @ self.w\nf = Op()\n", "E50002", 9, 15),
    ("class Op(AscendOperator):\n    def __init__(self):\n        self.g = np.ones(4)\n"
     "    def g(self, x):\n        return x\n    def compute(self, x):\n"
     "        return self.g(x)\nf = Op()\n", "E50010", 11, 15),
    ("class Op(AscendOperator):\n    hybrid_options = dict(target='gpu')\n"
     "    def compute(self, x):\n        return x\nf = Op()\n", "E50041", 5, 0),
]


@pytest.mark.parametrize("body,code,line,col", ERROR_CASES)
def test_bad_operators_are_coded_errors_at_the_users_line(tmp_path, body, code, line, col):
    err = _error(tmp_path, body, X)
    assert (err.code, err.lineno, err.col_offset) == (code, line, col), str(err)
    assert err.filename.startswith(str(tmp_path)) and err.hint


def test_compute_must_be_a_plain_method(tmp_path):
    err = _error(tmp_path, "class Op(AscendOperator):\n    compute = staticmethod(len)\n"
                 "    def __init__(self):\n        pass\nf = Op()\n", X)
    assert err.code == "E50010" and err.lineno == 5 and "compute" in err.message
