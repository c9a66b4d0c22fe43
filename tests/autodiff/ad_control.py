"""Programs with loops, branches and writes into local arrays (``test_control``)."""

from __future__ import annotations

import numpy as np

import pyasc
from pyasc import hybrid


@hybrid
def loop_carried(x, y):
    s = x
    for _ in range(3):
        s = s * y + np.tanh(s)
    return s


@hybrid
def nested_loops(x, y):
    acc = np.zeros_like(x)
    for i in range(2):
        for j in range(x.shape[1]):
            acc = acc + x[:, j:j + 1] * y * (i + 1)
    return acc


@hybrid
def loop_index_arith(x, y):
    total = 0.0
    for i in range(1, x.shape[0], 2):
        total = total + (x[i] * y[i - 1]).sum()
    return total


@hybrid
def local_writes(x, y):
    out = np.empty((4, 3))
    for i in range(4):
        out[i] = x[i] * y[3 - i]
    out[1:3, 0] = 7.0
    out[0, 2] = x[0, 0] * 3.0
    return out * out


@hybrid
def augmented(x, y):
    out = np.zeros((4, 3))
    out += x
    out[1:] += y[:3] * x[1:]
    out[::2] *= 2.0
    return out


@hybrid
def padded(x, y):
    xp = np.full((6, 5), 0.0)
    xp[1:5, 1:4] = x * y
    return xp[:4, :3] + xp[2:, 2:]


def py_branch(x, y, k):
    if k > 1:
        z = np.exp(x) * y
    else:
        z = np.log(x * x + 1.0)
    return z + x


branch = hybrid(py_branch)


@hybrid
def scalar_branch(x, y):
    s = x.sum()
    if s > 0:
        r = s * y
    else:
        r = -s * x
    return r


@hybrid
def scoped(x, y):
    with pyasc.fusion_scope():
        z = np.tanh(x) * y
    return z + x


@pyasc.hybrid(dynamic_shape=True)
def dynamic_broadcasts(x, w):
    h = np.tanh(x @ w)
    return (h - h.mean(axis=1, keepdims=True)) * x[:, :1] + h.max(axis=0)


@pyasc.hybrid(dynamic_shape=True)
def dynamic_views(x, w):
    return ((np.exp(x[1:]) * w[0]).sum() + np.concatenate([x, w[:2] * x[2:]]).sum()
            + np.cumsum(x, axis=0)[::2].sum())
