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


@pytest.mark.parametrize("target", ["interpret", "cpu"])
@pytest.mark.parametrize("fn,args,cls,text", CASES[::2], ids=lambda c: getattr(c, "__name__", None))
def test_run_time_dimensions_are_checked_when_the_kernel_runs(fn, args, cls, text, target):
    # under dynamic_shape a library check on array dimensions is a run-time value: the
    # operator compiles (it was E50011 "must be known at compile time", although array
    # arguments may be dynamic_shape) and a bad call raises the same coded error there
    # (ascend-sim: strided_conv below; a grouped conv of run-time shapes is E50010 there)
    with pytest.raises(cls, match=text) as info:
        hybrid(fn, target=target, dynamic_shape=True)(*args)
    assert info.value.filename == __file__ and info.value.lineno == _line(fn)


def strided_conv(x, w):
    return ops.conv2d(x, w, stride=2, padding=1)           # mark: strided_conv


@pytest.mark.parametrize("target", ["cpu", "ascend-sim"])
def test_conv2d_with_dynamic_shapes_keeps_numpys_values(target):
    rng = np.random.default_rng(7)
    compiled = hybrid(strided_conv, target=target, dynamic_shape=True)
    for n, c, h, w, o, k in [(1, 3, 9, 11, 4, 3), (2, 5, 7, 6, 3, 1), (1, 2, 8, 8, 2, 5)]:
        args = (rng.random((n, c, h, w)).astype(np.float32),
                rng.random((o, c, k, k)).astype(np.float32))
        np.testing.assert_allclose(compiled(*args), strided_conv(*args), rtol=1e-4, atol=1e-5)
    with pytest.raises(ShapeInferenceError, match="C // groups") as info:
        compiled(np.ones((1, 3, 9, 9), np.float32), np.ones((2, 4, 3, 3), np.float32))
    assert info.value.filename == __file__ and info.value.lineno == _line(strided_conv)
