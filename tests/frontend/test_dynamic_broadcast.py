"""Differential tests: the shape of a broadcast whose sizes are known at run time only.

With ``dynamic_shape=True`` two ``?`` dims are not the same size: either may be 1
(``x + b`` with shapes (1, 8) and (5, 8)), so the result's extent is chosen at run time.
Everything derived from that shape must see the broadcast size, not the first operand's:
``mean`` (its count), ``.shape``, ``.size``, ``len``, reshapes, and arrays allocated
from it.  Each function runs with the size-1 operand first and second, in every axis.
"""

from __future__ import annotations

import numpy as np
import pytest
from diff import SUM, check, rand

from pyasc import hybrid

PAIRS_1D = [((1,), (7,)), ((7,), (1,)), ((7,), (7,)), ((1,), (1,))]
PAIRS_2D = [((1, 8), (5, 8)), ((5, 1), (5, 8)), ((1, 1), (5, 8)), ((5, 1), (1, 8)),
            ((5, 8), (1, 8)), ((5, 8), (5, 1))]


@hybrid(dynamic_shape=True)
def means(x, b):
    y = x + b
    return np.mean(y), np.mean(y, axis=-1, keepdims=True), np.mean(y, axis=0), y.var()


@hybrid(dynamic_shape=True)
def shapes(x, b):
    y = x * b
    return y.shape, y.size, len(y), y.reshape(-1), np.zeros_like(y), np.zeros(y.shape)


@hybrid(dynamic_shape=True)
def chained(x, b):
    y = (b - x) * x            # the first operand of each op is the size-1 one in turn
    z = x + y
    return z.sum() / z.size, z.shape


@hybrid(dynamic_shape=True)
def written(x, b):
    out = np.empty_like(x + b)
    out[...] = b
    out += x
    return out


@pytest.mark.parametrize("pair", PAIRS_1D + PAIRS_2D, ids=str)
def test_mean_counts_the_broadcast_size(pair):
    x, b = rand(pair[0], seed=1), rand(pair[1], seed=2)
    check(means, x, b, rtol=SUM(40))


@pytest.mark.parametrize("pair", PAIRS_1D + PAIRS_2D, ids=str)
def test_shape_of_a_runtime_broadcast(pair):
    x, b = rand(pair[0], "int32", seed=1), rand(pair[1], "int32", seed=2)
    check(shapes, x, b)
    check(chained, x, b)
    check(written, x, b)


def test_incompatible_runtime_sizes_raise_like_numpy():
    x, b = rand((5,), seed=1), rand((3,), seed=2)
    with pytest.raises(ValueError):
        means.__wrapped__(x, b)
    check(means, x, b)  # every runner raises ValueError too


@hybrid(dynamic_shape=True)
def folded(c, x, b):
    # identities that hold per element but not for the shape: the result has the
    # broadcast size of the two run-time shapes, never the kept operand's alone
    return np.where(c, x, x), np.minimum(x, x) + 0 * b, x * (b == b)


@pytest.mark.parametrize("pair", PAIRS_1D + PAIRS_2D, ids=str)
def test_identities_keep_the_runtime_broadcast_shape(pair):
    x, b = rand(pair[0], "int32", seed=1), rand(pair[1], "int32", seed=2)
    check(folded, b > 0, x, b)
    check(folded, x > 0, b, x)
