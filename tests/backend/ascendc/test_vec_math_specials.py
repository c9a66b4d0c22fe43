"""Special values of the vector unit's composed math functions (``vec_math.py``) on
ascend-sim: the compositions must give what the function gives at infinities, zeros and
NaN, not what the composition's intermediate steps make of them."""

from __future__ import annotations

import math

import numpy as np
from ascendc_kit import run_sim

import pyasc.ops as ops
from pyasc import hybrid


@hybrid
def erf_of(x):
    return ops.erf(x)


def test_erf_at_the_infinities_zeros_and_nan():
    # the sign was restored as x / (|x| + 1e-30): inf / inf gave erf(+-inf) = NaN
    special = [np.inf, -np.inf, 0.0, -0.0, np.nan, 3e38, -3e38, 1.0, -1.0, 0.5, -2.0, 9.0]
    x = np.array(special + [0.25] * 4, np.float32)
    got, kernel = run_sim(erf_of, x)
    kinds = {k.name: type(k).__name__ for k in kernel.ascend.kernels}
    assert [kinds[n] for n, _ in kernel.last_kernels] == ["VectorKernel"]
    want = np.array([math.erf(float(v)) for v in x], np.float32)
    # A&S 7.1.26 is within 1.5e-7; float32 arithmetic adds about as much again
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-7)
    assert np.array_equal(np.signbit(got[:4]), np.signbit(want[:4]))  # erf(-0) = -0
