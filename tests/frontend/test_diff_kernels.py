"""Differential tests on whole operators as users write them (softmax, layer norm,
GELU, convolution, pooling, cumulative sums, NMS-style loops)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import SUM, Tol, check, rand, views

from pyasc import hybrid
from pyasc.backend.llvm.backend import lower_to_loops
from pyasc.ir.core import Operation
from pyasc.ir.ops import loop, mem


@hybrid
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@hybrid
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


@hybrid
def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


@hybrid
def linear(x, w, b):
    return np.maximum(x @ w.T + b, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 4, 5)])
def test_normalizations(dtype, shape):
    x, n = rand(shape, dtype), shape[-1]
    check(softmax, x, rtol=Tol(math=1, terms=n))
    check(layer_norm, x, rand(shape[-1:], dtype, 1), rand(shape[-1:], dtype, 2),
          rtol=SUM(2 * n))
    check(gelu, x, rtol=Tol(math=2))  # tanh and x ** 3 (pow)


@pytest.mark.parametrize("view", [None, 0, 1])
def test_linear_layer_on_views(view):
    x = rand((6, 4))
    check(linear, x if view is None else views(x)[view], rand((3, 4), seed=1),
          rand((3,), seed=2), rtol=SUM(4))


@hybrid
def conv1d(x, k):
    n, m = x.shape[0], k.shape[0]
    out = np.zeros(n - m + 1, dtype=x.dtype)
    for i in range(n - m + 1):
        out[i] = np.sum(x[i:i + m] * k)
    return out


@hybrid
def max_pool2d(x, size):
    h, w = x.shape
    out = np.empty((h // size, w // size), x.dtype)
    for i in range(h // size):
        for j in range(w // size):
            out[i, j] = x[i * size:(i + 1) * size, j * size:(j + 1) * size].max()
    return out


@pytest.mark.parametrize("n", [3, 10])
def test_convolution_and_pooling(n):
    check(conv1d, rand((n,)), rand((3,), seed=4))
    check(max_pool2d, rand((n, n + 1)), 2)
    check(max_pool2d, rand((n, n)), 3)


@hybrid
def window_means(x, oh, ow):
    n, c, h, w = x.shape
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        h0, h1 = (i * h) // oh, ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            w0, w1 = (j * w) // ow, ((j + 1) * w + ow - 1) // ow
            out[:, :, i, j] = np.mean(x[:, :, h0:h1, w0:w1], axis=(2, 3))
    return out


@hybrid
def smear_columns(x):
    out = x.copy()
    for j in range(1, x.shape[1]):
        out[:, j] = out[:, j - 1] * 0.5 + x[:, j]  # column j needs column j - 1 first
    return out


@pytest.mark.parametrize("shape,oh,ow", [((2, 3, 9, 7), 2, 3), ((1, 2, 40, 33), 3, 2),
                                         ((2, 1, 5, 5), 5, 5), ((1, 1, 64, 20), 1, 1)])
def test_window_pools_over_planes(shape, oh, ow):
    # user loops over windows around a reduction over all planes: the layout pass may
    # run the planes outermost (the structure is checked below); results unchanged
    check(window_means, rand(shape), oh, ow, rtol=SUM(64))
    check(window_means, views(rand((shape[0] * 2,) + shape[1:]))[0], oh, ow, rtol=SUM(64))


def test_loops_carrying_a_column_are_not_reordered():
    check(smear_columns, rand((6, 9)))
    check(smear_columns, views(rand((6, 18)))[3])


# ``layout`` on user loops around fused nests reading and writing through views made per
# iteration: analysed on the viewed buffers, the planes' loops move outside the window
# loops and take the ``parallel`` mark; a loop carrying a dependence stays in place.

def loop_module(fn, *args):
    return lower_to_loops(fn._specialization(args, {})[0].program)


def loop_chain(lp: loop.ForOp) -> list[loop.ForOp]:
    """``lp`` and the loops nested in it one by one (each the only loop of its parent)."""
    chain = [lp]
    while True:
        inner = [o for o in chain[-1].body.blocks[0].ops if isinstance(o, loop.ForOp)]
        if len(inner) != 1:
            return chain
        chain.append(inner[0])


def top_loops(module) -> list[loop.ForOp]:
    fn = next(iter(module.functions))
    return [op for op in fn.entry.ops if isinstance(op, loop.ForOp)]


def allocs(op: Operation) -> list[str | None]:
    return [o.result.name_hint for o in op.walk() if isinstance(o, mem.AllocOp)]


@pytest.mark.parametrize("fn", [window_means, hybrid(dynamic_shape=True)(
    window_means.__wrapped__)], ids=["static", "dynamic"])
def test_window_pool_runs_planes_outside_the_window_loops(fn):
    x = np.zeros((8, 64, 112, 112), np.float32)
    module = loop_module(fn, x, 7, 7)
    nest = [lp for lp in top_loops(module) if "lanes" in allocs(lp)]
    assert len(nest) == 1
    outer = nest[0]
    assert outer.attributes.get("parallel")  # one split for the whole pool
    # the group's loops over the planes (i0: n, i1: c) are among the three outermost
    # loops, outside the user's window loops (unnamed)
    names = [lp.induction_var.name_hint for lp in loop_chain(outer)][:3]
    assert "i0" in names and "i1" in names, names
    # the window sums are stored straight into out[:, :, i, j]: no temporary
    assert [a for a in allocs(module) if a != "lanes"] == [None]  # out, nothing else


@hybrid
def conv2d(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    out = np.zeros((n, k, h - r + 1, wd - s + 1), dtype=x.dtype)
    for o in range(k):
        for ci in range(c):
            for dy in range(r):
                for dx in range(s):
                    out[:, o] += w[o, ci, dy, dx] * x[:, ci, dy:dy + h - r + 1,
                                                      dx:dx + wd - s + 1]
    return out


@hybrid
def chained_rows(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        s = out[i - 1, 0]  # read between the loops, from the array the rows write
        out[i] = x[i] + s
    return out


def test_user_loops_around_a_convolution_are_reordered():
    # the weight is loaded between the user loops (memory the nest never writes): the
    # band reaches into the fused nest, whose row loop becomes the outermost, parallel
    x, w = rand((1, 3, 9, 8)), rand((4, 3, 3, 3), seed=1)
    check(conv2d, x, w, rtol=SUM(27))
    module = loop_module(conv2d, x, w)
    nest = [lp for lp in top_loops(module) if len(loop_chain(lp)) >= 6]
    assert len(nest) == 1 and nest[0].attributes.get("parallel")
    check(chained_rows, rand((5, 4)))
    user = [lp for lp in top_loops(loop_module(chained_rows, rand((5, 4))))
            if constant(lp.lower) == 1]
    assert len(user) == 1 and not user[0].attributes.get("parallel")


def test_loop_carrying_a_column_stays_outermost():
    module = loop_module(smear_columns, np.zeros((6, 9), np.float32))
    user = [lp for lp in top_loops(module) if constant(lp.lower) == 1]  # range(1, ...)
    assert len(user) == 1
    assert any(isinstance(o, loop.ForOp) for o in user[0].walk() if o is not user[0])
    assert not user[0].attributes.get("parallel")


def constant(v):
    return getattr(v.owner, "value", None)


@hybrid
def cumsum(x):
    out = np.empty_like(x)
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc
    return out


def test_running_sum_over_rows():
    check(cumsum, rand((5,), "int32"))
    check(cumsum, rand((4, 3)))


@hybrid
def greedy_suppress(scores, threshold):
    keep = np.zeros(scores.shape[0], dtype=np.bool_)
    s = scores.copy()
    for _ in range(scores.shape[0]):
        best = np.argmax(s)
        if s[best] < threshold:
            break
        keep[best] = True
        lo = max(best - 1, 0)
        hi = min(best + 2, s.shape[0])
        s[lo:hi] = -1.0
    return keep


@pytest.mark.parametrize("threshold", [-5.0, 0.0, 0.8])
def test_nms_style_loop_with_break(threshold):
    check(greedy_suppress, rand((9,), "float64"), threshold)
