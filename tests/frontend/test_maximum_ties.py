"""Differential tests: ``maximum``/``minimum`` between equal values and with NaN.

numpy's loops differ by dtype between ``-0.0`` and ``0.0``: float16 returns the first
operand (its generic loop, ``a >= b || isnan(a) ? a : b``), float32 and float64 the
second (the SIMD loops, ``a > b || isnan(a) ? a : b``); reductions follow the same rule
with the accumulator first.  NaN propagates from either operand.  The comparison of
``diff.check`` is exact, the sign of zero included.
"""

from __future__ import annotations

import numpy as np
import pytest
from diff import check

from pyasc import hybrid

FLOATS = ["float16", "float32", "float64"]
VALUES = [-0.0, 0.0, np.nan, 1.0, -1.0, np.inf, -np.inf]


@hybrid
def pairwise(x, y):
    return (np.maximum(x, y), np.minimum(x, y), np.maximum(y, x), np.minimum(y, x),
            np.maximum(x, 0.0), np.minimum(x, -0.0), np.maximum(-0.0, y), np.minimum(0.0, y))


@hybrid
def reductions(x):
    return np.max(x), np.min(x), x.max(axis=-1), x.min(axis=-1, keepdims=True)


@hybrid
def scalars(a, b):
    return np.maximum(a, b), np.minimum(a, b), np.maximum(b, a), np.minimum(b, a)


def _grid(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of :data:`VALUES`, as two arrays."""
    x, y = np.meshgrid(np.array(VALUES, dtype), np.array(VALUES, dtype))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dtype", FLOATS)
def test_maximum_and_minimum_of_every_pair(dtype):
    x, y = _grid(dtype)
    check(pairwise, x, y)


@pytest.mark.parametrize("dtype", FLOATS)
def test_maximum_and_minimum_of_scalars(dtype):
    t = np.dtype(dtype).type
    for a, b in [(-0.0, 0.0), (0.0, -0.0), (np.nan, 1.0), (1.0, np.nan)]:
        check(scalars, t(a), t(b))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("row", [[-0.0, 0.0], [0.0, -0.0], [0.0, -0.0, 0.0, -0.0, 0.0],
                                 [1.0, np.nan, 2.0], [np.nan, -0.0, 0.0]], ids=str)
def test_reductions_between_equal_values(dtype, row):
    x = np.array([row, row[::-1]], dtype)
    check(reductions, x)


def test_the_rule_by_dtype():
    from pyasc.ir.ops.arith import first_wins_ties
    from pyasc.ir.types import ScalarType

    for dtype in FLOATS:
        t = ScalarType({"float16": "f16", "float32": "f32", "float64": "f64"}[dtype])
        a, b = np.array([-0.0], dtype), np.array([0.0], dtype)
        first = bool(np.signbit(np.maximum(a, b))[0])  # numpy's own answer, this machine
        assert first_wins_ties(t) == first, dtype


@hybrid
def against_constants(x):
    return (np.maximum(x, 0.5), np.minimum(x, -1.0), np.maximum(2.0, x), np.minimum(-0.5, x),
            np.clip(x, -1.0, 1.0), np.maximum(x, np.inf), np.minimum(-np.inf, x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_maximum_and_minimum_against_constants(dtype):
    # a constant operand is never NaN: the NaN test of the other one is folded into the
    # compare (one ``fcmp u..``/``o..`` instead of an ordered compare, ``uno`` and ``or``)
    x = np.array([*VALUES, 0.5, -1.0, 2.0, -0.5, 3.0, -3.0, 0.25], dtype)
    check(against_constants, np.concatenate([x, -x, x[::-1]]))


def test_compares_against_constants_need_no_nan_test():
    import re

    x = np.linspace(-3, 3, 64, dtype=np.float32)
    text = against_constants.llvm_ir(x)
    assert "fcmp uno" not in text, sorted(set(re.findall(r"fcmp \w+", text)))
    assert "fcmp uno" in pairwise.llvm_ir(x, x)  # no constant: NaN tested on its own
