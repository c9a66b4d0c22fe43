"""AscendC code generation bugs the fuzzer found (``tests/differential/campaign``),
each reduced to a small program run on ascend-sim against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid


@hybrid
def minus_negative_constants(x, y):
    x -= -1  # the vector unit's x - s is Adds(x, -s): `-` before `-1.0f` read as `--`
    return x, y - (-2.5), np.negative(-y)


@hybrid
def minus_negative_in_a_loop(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):  # a scalar kernel
        out[i] = x[i] - (-3) - -x[i]
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "int32"])
def test_subtracting_a_negative_constant_compiles(dtype):
    x = np.arange(-6, 6).astype(dtype)
    check(minus_negative_constants, x.copy(), x[::-1].copy(), rtol=0, atol=0)
    check(minus_negative_in_a_loop, x, rtol=0, atol=0)
