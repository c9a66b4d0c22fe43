"""``channel_slices``: ``np.sum(x[:, i:i+3, j:j+3] * w[o])`` over a whole run-time axis
becomes, in a copy of the nest versioned on ``w.shape[1:] == (C, 3, 3)``, the loop form
``channel-interchange`` moves out (``acc += x[c, i+a, j+b] * w[o, c, a, b]``).  The copy
computes exactly what the loop form computes (the (channel, row, column) order, a
float32 sum for float16), the other branch keeps numpy's broadcasting and errors, and
forms without a whole run-time axis stay as they are."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.passes.channel_interchange import match
from pyasc.ir.passes.channel_slices import rewrite_slices, slice_candidates
from pyasc.ir.passes.versioning import is_versioned
from pyasc.ir.verifier import verify_module

RNG = np.random.default_rng(1919)


def conv_slices(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])
    return out


def conv_loops(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for c in range(x.shape[0]):
                    for a in range(3):
                        for b in range(3):
                            acc += x[c, i + a, j + b] * w[o, c, a, b]
                out[o, i, j] = acc
    return out


def method_sum_bias_relu(x, w, b):
    # (a*b).sum(), the weights first, a scale, a bias and a ReLU after the sum
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                s = (w[o] * x[:, i:i + 3, j:j + 3]).sum()
                out[o, i, j] = max(s * 0.5 + b[o], 0.0)
    return out


def batch_k5(x, w):
    # a batch loop around a 5x5 window
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 4, x.shape[3] - 4), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 4):
                for j in range(x.shape[3] - 4):
                    out[n, o, i, j] = np.sum(x[n, :, i:i + 5, j:j + 5] * w[o])
    return out


def static_axis(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                out[o, i, j] = np.sum(x[0:2, i:i + 3, j:j + 3] * w[o])
    return out


def partial_sum(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                out[o, i, j] = np.sum(np.sum(x[:, i:i + 3, j:j + 3] * w[o], axis=0))
    return out


def _module(fn, *args):
    mod = hybrid(fn, dynamic_shape=True).specialize(*args).module
    return parse_module(str(mod))


def _call(mod, name, *args):
    return np.asarray(Interpreter(mod).call(name, *args)[0])


def _rewritten(fn, *args):
    before, after = _module(fn, *args), _module(fn, *args)
    fasts = rewrite_slices(next(after.functions))
    verify_module(after)
    return before, after, fasts


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_copy_is_the_loop_form_exactly(dtype):
    # one module for every C: the copy equals the loop form bit for bit (float16: a
    # float32 sum rounded once), and numpy's pairwise sum within rounding
    shapes = [((1, 7, 9), 4), ((3, 9, 5), 1), ((5, 6, 11), 17), ((0, 5, 5), 2)]
    x, w = RNG.random(shapes[0][0]).astype(dtype), RNG.random((4, 1, 3, 3)).astype(dtype)
    before, after, fasts = _rewritten(conv_slices, x, w)
    assert len(fasts) == 1 and match(fasts[0]) is not None
    branch = fasts[0].parent.parent_op
    assert is_versioned(branch) and branch.parent is next(after.functions).entry
    loops = _module(conv_loops, x, w)
    for shape, outs in shapes:
        x = RNG.standard_normal(shape).astype(dtype)
        w = RNG.standard_normal((outs, shape[0], 3, 3)).astype(dtype)
        got = _call(after, "conv_slices", x, w)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, _call(loops, "conv_loops", x, w))
        tol = 1e-5 if dtype == np.float32 else 2e-3
        np.testing.assert_allclose(got.astype(np.float64), _call(before, "conv_slices", x, w),
                                   rtol=tol, atol=tol * shape[0] * 9)


def test_other_weight_shapes_keep_numpys_broadcasting_and_errors():
    x = RNG.random((3, 8, 9)).astype(np.float32)
    before, after, _ = _rewritten(conv_slices, x, RNG.random((2, 3, 3, 3)).astype(np.float32))
    w = RNG.random((2, 1, 3, 3)).astype(np.float32)  # broadcast along the channels
    np.testing.assert_array_equal(_call(after, "conv_slices", x, w),
                                  _call(before, "conv_slices", x, w))
    for mod in (before, after):
        with pytest.raises(ValueError, match="broadcast"):
            _call(mod, "conv_slices", x, RNG.random((2, 2, 3, 3)).astype(np.float32))


@pytest.mark.parametrize("fn,args", [
    (method_sum_bias_relu, ((3, 7, 10), (4, 3, 3, 3), (4,))),
    (batch_k5, ((2, 3, 9, 11), (5, 3, 5, 5)))], ids=["method_bias_relu", "batch_k5"])
def test_other_spellings_are_rewritten(fn, args):
    args = tuple(RNG.standard_normal(s).astype(np.float32) for s in args)
    before, after, fasts = _rewritten(fn, *args)
    assert len(fasts) == 1 and match(fasts[0]) is not None
    text = str(before)
    assert slice_candidates(next(before.functions)) == 1 and str(before) == text  # (a look)
    np.testing.assert_allclose(_call(after, fn.__name__, *args),
                               _call(before, fn.__name__, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn,w", [(static_axis, (4, 2, 3, 3)), (partial_sum, (4, 3, 3, 3))])
def test_left_alone(fn, w):
    # a window over a static range of the axis, a partial sum of the product
    args = (RNG.random((3, 7, 9)).astype(np.float32), RNG.random(w).astype(np.float32))
    before, after, fasts = _rewritten(fn, *args)
    assert fasts == [] and str(before) == str(after)
    assert slice_candidates(next(before.functions)) == 0
