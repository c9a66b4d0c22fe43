"""The operators of ``pyasc.ops`` differentiated automatically, against finite
differences in float64 (their forward is checked against numpy in ``tests/ops``)."""

from __future__ import annotations

import numpy as np
import pytest
from ad_fdcheck import check_vjp

import pyasc.ops as O

RNG = np.random.default_rng(11)
IMG = RNG.standard_normal((2, 3, 5, 5))
FILTERS = RNG.standard_normal((4, 3, 3, 3))
ROWS = RNG.standard_normal((3, 6))
GAIN, SHIFT = RNG.standard_normal(6), RNG.standard_normal(6)

CASES = {
    "softmax": (O.softmax, (ROWS, -1)),
    "log_softmax": (O.log_softmax, (ROWS, 0)),
    "layer_norm": (O.layer_norm, (ROWS, (6,), GAIN, SHIFT)),
    "layer_norm_2d": (O.layer_norm, (ROWS.reshape(3, 2, 3), (2, 3))),
    "rms_norm": (O.rms_norm, (ROWS, (6,), GAIN)),
    "gelu": (O.gelu, (ROWS,)),
    "gelu_tanh": (O.gelu, (ROWS, "tanh")),
    "silu": (O.silu, (ROWS,)),
    "conv2d": (O.conv2d, (IMG, FILTERS, GAIN[:4], 1, 1)),
    "conv2d_grouped_strided": (O.conv2d, (IMG, FILTERS[:3, :1], None, 2, 0, 1, 3)),
    "max_pool2d": (O.max_pool2d, (IMG, 2)),
    "avg_pool2d": (O.avg_pool2d, (IMG, 3, 2, 1)),
    "adaptive_avg_pool2d": (O.adaptive_avg_pool2d, (IMG, (2, 3))),
}


@pytest.mark.parametrize("name", CASES)
def test_operator_gradient(name):
    fn, args = CASES[name]
    check_vjp(fn, *args)
