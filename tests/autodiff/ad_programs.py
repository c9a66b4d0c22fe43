"""Programs of two float arrays ``(x, y)`` of shape (4, 3), one per gradient rule
family; ``test_rules`` checks each one's ``vjp`` against finite differences."""

from __future__ import annotations

import numpy as np

from pyasc import hybrid

IDX = np.array([0, 2, 2, 3])
POS = np.linspace(0.5, 2.0, 12).reshape(4, 3)


@hybrid
def arith_ops(x, y):
    return (x + y) * (x - 2.0 * y) / (y * y + 1.0) - (-x)


@hybrid
def where(x, y):
    return np.where(x > 0, x, 2 * y)


@hybrid
def clip(x, y):
    return np.clip(x, -0.5, 0.5) * y


@hybrid
def extremum(x, y):
    return np.abs(x) + np.maximum(x, y) ** 2 + np.minimum(x, 0.3 * y)


@hybrid
def powers(x, y):
    return x ** 3 - np.power(x * x + 1.0, y) + (x * x + 0.1) ** 1.5 + 2.0 ** y


@hybrid
def transcendental(x, y):
    p = x * x + 0.5
    return (np.exp(x) + np.log(p) + np.sqrt(p) * np.tanh(y) + np.sin(x) * np.cos(y)
            + np.log1p(p) + np.expm1(y) + np.log2(p) + np.log10(p) + np.exp2(y)
            + np.tan(0.3 * x))


@hybrid
def sigmoid(x, y):
    return 1.0 / (1.0 + np.exp(-x)) * y


@hybrid
def rounding(x, y):
    return np.floor(x) * y + np.round(y) * x + np.sign(x) * y


@hybrid
def var_std(x, y):
    return x.var(axis=0) + x.std() + y.mean(axis=1, keepdims=True).sum() + y.std(axis=1)[1]


@hybrid
def reductions(x, y):
    return x.max(axis=1) + y.min() + x.sum(axis=0, keepdims=True)[0, 1:].sum() + np.mean(y)


@hybrid
def stack(x, y):
    return np.stack([x, y]).sum(axis=0)[0]


@hybrid
def mat_t(x, y):
    return x.T @ y


@hybrid
def matmul_batched(x, y):
    return np.matmul(x.reshape(2, 2, 3), y.T.reshape(1, 3, 4))


@hybrid
def matvec(x, y):
    return x @ y[0] + y[1] @ x.T


@hybrid
def einsum(x, y):
    return np.einsum("ij,ij->j", x, y)


@hybrid
def dot(x, y):
    return np.dot(x[0], y[1])


@hybrid
def reshape(x, y):
    return x.reshape(3, 4)[1, 2] + y.reshape(12)[3:9:2].sum()


@hybrid
def concat(x, y):
    return np.concatenate([x, y * 2], axis=1)[1:3]


@hybrid
def slices_of_values(x, y):
    z = x * y
    return z[1:3, ::2].sum() + (x + y)[0, 1] + z[::-1, 1]


@hybrid
def slices_of_inputs(x, y):
    return x[1:3, ::2].sum(axis=0) * y[0, 1] + x[-1, :2] + y[::-1][::2, 1:]


@hybrid
def take(x, y):
    return np.take(x * y, IDX, axis=0) + np.take(x, IDX[:3], axis=1).sum()


@hybrid
def fancy_index(x, y):
    return (x * y)[IDX] + x[IDX, 1:2]


@hybrid
def transpose(x, y):
    return np.transpose(x[None] * y[:, None], (2, 0, 1))


@hybrid
def broadcast(x, y):
    return np.broadcast_to(x[0], (5, 3)) * y.sum(axis=0) + y[:1, :]


@hybrid
def scalar_chain(x, y):
    s = x.sum()
    return np.exp(s * 0.1) * y + float(np.sqrt(s * s + 1.0))




@hybrid
def cast(x, y):
    return x.astype(np.float32).astype(np.float64) * y


@hybrid
def relu_mask(x, y):
    return x * (x > 0) + y * (y > 0).astype(np.float64)


@hybrid
def _helper(a, b):
    return np.tanh(a) * b


@hybrid
def calls_helper(x, y):
    return _helper(x, y) + _helper(y, x)


@hybrid
def runtime_index(x, y, i):
    return (x[i] * y[i - 1]).sum() + x[:, i - 1] * y[i, 0]




@hybrid
def cumulative(x, y):
    return np.cumsum(x * y, axis=0) + np.cumsum(x, axis=1)[::-1] + np.cumsum(y[1])




@hybrid
def cross_entropy(x, y):
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    picked = logp[np.arange(4), np.array([2, 0, 2, 1])]
    return -(picked * y[:, 0]).mean() + (x * y)[np.array([[0, 3], [3, 3]]), 1:].sum()



@hybrid
def inverse_trig(x, y):
    return np.arctan(x * y) + np.arcsinh(x) + np.arctan2(y, x * x + 1.0) + np.flip(x, 0) * y


PROGRAMS = [arith_ops, where, clip, extremum, powers, transcendental, sigmoid, rounding,
            var_std, reductions, stack, mat_t, matmul_batched, matvec, einsum, dot,
            reshape, concat, slices_of_values, slices_of_inputs, take, fancy_index,
            transpose, broadcast, scalar_chain, relu_mask, calls_helper,
            cumulative, cross_entropy, inverse_trig]
