"""Bad arguments to ``pyasc.ops`` are coded errors at the user's line (``pyasc.require``),
whether the operator is called from Python or from a ``@hybrid`` function, and library
modules can be reached by attribute inside ``@hybrid`` (``ops.conv2d``,
``pyasc.ops.softmax``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from pyasc import hybrid, ops, require
from pyasc.errors import ArgumentError, ShapeInferenceError, UndefinedNameError

X = np.ones((1, 4, 6, 6), np.float32)
W_BAD = np.ones((6, 3, 3, 3), np.float32)  # 4 channels with groups=2 need C // 2 = 2


def grouped(x, w):
    return ops.conv2d(x, w, groups=2)                       # mark: grouped


def pooled(x):
    return pyasc.ops.max_pool2d(x, 2, padding=2)            # mark: pooled


def normed(x):
    return ops.layer_norm(x, 5)                             # mark: normed


def _line(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if f"# mark: {fn.__name__}" in t)


CASES = [(grouped, (X, W_BAD), ShapeInferenceError, "C // groups"),
         (pooled, (X,), ArgumentError, "padding must be at most half"),
         (normed, (np.ones((4, 8), np.float32),), ShapeInferenceError, "normalized_shape")]


@pytest.mark.parametrize("target", ["interpret", "cpu", "ascend-sim"])
@pytest.mark.parametrize("fn,args,cls,text", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_bad_library_arguments_point_at_the_users_call(fn, args, cls, text, target):
    with pytest.raises(cls, match=text) as info:
        hybrid(fn, target=target)(*args)
    assert info.value.filename == __file__ and info.value.lineno == _line(fn)


def test_called_from_python_the_error_is_at_the_callers_line(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ShapeInferenceError) as info:
        ops.conv2d(X, W_BAD, groups=2)
    assert info.value.filename == __file__ and info.value.lineno == line


def test_library_reached_through_module_attributes(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    @hybrid
    def both(x):
        return pyasc.ops.softmax(x, dim=-1) + ops.silu(x)

    x = np.random.default_rng(0).random((3, 5)).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(both(x), e / e.sum(-1, keepdims=True) + x / (1 + np.exp(-x)),
                               rtol=1e-5)


def test_missing_module_attribute_is_located(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")

    @hybrid
    def typo(x):
        return ops.conv3d(x)

    with pytest.raises(UndefinedNameError, match="has no attribute 'conv3d'"):
        typo(X)


@hybrid
def user_check(x, k):
    require(x.shape[-1] % k == 0, "the last axis must divide by k")
    return x.reshape(-1, k)


def test_require_in_user_code(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    np.testing.assert_array_equal(user_check(np.arange(6.0), 3), np.arange(6.0).reshape(2, 3))
    with pytest.raises(ShapeInferenceError, match="must divide by k"):
        user_check(np.arange(6.0), 4)
    with pytest.raises(ShapeInferenceError, match="must divide by k"):
        user_check.__wrapped__(np.arange(6.0), 4)  # plain Python: the same error
