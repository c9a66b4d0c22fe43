"""``maximum``/``minimum`` between ``-0.0`` and ``0.0`` and with NaN, on ascend-sim.

numpy returns the first operand between equal values for float16 and the second for
float32/float64 (``pyasc.ir.ops.arith.first_wins_ties``); NaN propagates.  float16 runs
on the vector unit (``Max``/``Maxs``/``ReduceMax``), float64 in scalar kernels
(``PyascFMax``).  float32 vector code follows the hardware's rule between -0.0 and 0.0
(the sim: the first operand), a documented difference (docs/ascendc-backend.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[2]
if str(TESTS / "frontend") not in sys.path:
    sys.path.insert(0, str(TESTS / "frontend"))

from ascendc_kit import float64_device_for  # noqa: E402
from diff import check  # noqa: E402

from pyasc import hybrid  # noqa: E402


@pytest.fixture(autouse=True)
def _float64_on_a_float64_soc(request):
    # float64 cases test the double code paths: on a SoC whose table allowed float64
    # (no real one does: docs/ascendc-backend.md#float64, ascendc_kit.float64_device)
    with float64_device_for(request):
        yield


VALUES = [-0.0, 0.0, np.nan, 1.0, -1.0, np.inf, -np.inf]


@hybrid(dynamic_shape=True)
def minmax(x, y):
    return (np.maximum(x, y), np.minimum(x, y), np.maximum(y, x), np.minimum(y, x),
            np.maximum(x, 0.0), np.minimum(x, -0.0), np.maximum(x, -0.0), np.minimum(x, 0.0))


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_ties_and_nan_like_numpy_on_ascend_sim(dtype):
    x, y = np.meshgrid(np.array(VALUES, dtype), np.array(VALUES, dtype))
    check(minmax, x.ravel(), y.ravel(), runners=("ascend-sim",))
