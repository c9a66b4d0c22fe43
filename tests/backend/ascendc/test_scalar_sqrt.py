"""Square roots in scalar AscendC kernels are correctly rounded, as numpy's: the
device has no scalar sqrt, so ``scalar_math`` computes it in integer arithmetic
(a Newton iteration in double was up to an ulp off: found by the fuzzer)."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, float64_device_for

from pyasc import hybrid


@pytest.fixture(autouse=True)
def _float64_on_a_float64_soc(request):
    # float64 cases test the double code paths: on a SoC whose table allowed float64
    # (no real one does: docs/ascendc-backend.md#float64, ascendc_kit.float64_device)
    with float64_device_for(request):
        yield


@hybrid
def sqrt_each(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):  # a loop with array work: a scalar kernel
        out[i] = np.sqrt(x[i])
    return out


def _inputs(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(5)
    info = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, 2.0, 0.5, 3.0, info.tiny, info.tiny / 8, info.max,
               info.eps, 1 - info.eps, 1.5, 2.25, -1.0, np.inf, -np.inf, np.nan]
    spread = np.exp(rng.uniform(np.log(float(info.tiny)) / 1.2, np.log(float(info.max)) / 1.2,
                                400))
    near_squares = np.arange(1, 200, dtype=np.float64) ** 2 + rng.uniform(-2, 2, 199)
    return np.concatenate([special, spread, near_squares, rng.random(200) * 10]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scalar_sqrt_is_correctly_rounded(dtype):
    with np.errstate(all="ignore"):
        check(sqrt_each, _inputs(dtype), rtol=0, atol=0)  # exact
