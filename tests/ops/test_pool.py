"""``pyasc.ops`` pools against numpy's sliding windows on every target: kernel sizes,
strides, paddings, dilations, ``ceil_mode``, the divisor rules, 3-D and 4-D inputs,
dtypes; and a pool after a convolution in an ``AscendOperator``."""

from __future__ import annotations

import numpy as np
import ops_reference as ref
import pytest

from pyasc import AscendOperator
from pyasc.ops import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d

TARGETS = ref.TARGETS
CASES = {  # name: (function name, x shape, positional, keywords)
    "max_k3s2p1": ("max_pool2d", (2, 3, 9, 8), (3,), dict(stride=2, padding=1)),
    "max_pairs_ceil": ("max_pool2d", (1, 2, 9, 8), ((3, 2),),
                       dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), ceil_mode=True)),
    "max_3d_default_stride": ("max_pool2d", (3, 7, 10), (2,), {}),
    "avg_k3s2p1": ("avg_pool2d", (2, 3, 9, 8), (3,), dict(stride=2, padding=1)),
    "avg_ceil_exclude_pad": ("avg_pool2d", (1, 2, 9, 8), (3,),
                             dict(stride=2, padding=1, ceil_mode=True,
                                  count_include_pad=False)),
    "avg_ceil_include_pad": ("avg_pool2d", (1, 2, 10, 7), ((3, 2),),
                             dict(stride=(2, 3), padding=(1, 1), ceil_mode=True)),
    "avg_divisor": ("avg_pool2d", (2, 7, 6), (2,), dict(divisor_override=3)),
    "adaptive_uneven": ("adaptive_avg_pool2d", (2, 3, 9, 8), ((4, 3),), {}),
    "adaptive_none_int": ("adaptive_avg_pool2d", (3, 5, 7), ((None, 3),), {}),
    "adaptive_int": ("adaptive_avg_pool2d", (1, 2, 7, 7), (7,), {}),
}
OPS = {"max_pool2d": max_pool2d, "avg_pool2d": avg_pool2d,
       "adaptive_avg_pool2d": adaptive_avg_pool2d}
SIM_DTYPE_CASES = ("max_pairs_ceil", "avg_ceil_include_pad", "adaptive_none_int")


@pytest.mark.parametrize("target, case, dtype", list(ref.grid(CASES, SIM_DTYPE_CASES)))
def test_pool_matches_numpy(target, case, dtype, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    ref.float64_device(monkeypatch, target, dtype)
    name, shape, args, kw = CASES[case]
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    got = OPS[name](x, *args, **kw)
    ref.assert_close(got, getattr(ref, name)(x, *args, **kw), dtype)


def test_max_pool2d_propagates_nan(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 1] = np.nan
    got = max_pool2d(x, 2)
    assert np.isnan(got[0, 0, 0, 0]) and not np.isnan(got[0, 0, 1:, :]).any()


class ConvPool(AscendOperator):
    def __init__(self, rng):
        self.w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        self.b = rng.standard_normal(4).astype(np.float32)

    def compute(self, x):
        y = np.maximum(conv2d(x, self.w, self.b, padding=1), 0)
        return adaptive_avg_pool2d(max_pool2d(y, 2, ceil_mode=True), 2)


@pytest.mark.parametrize("target", TARGETS)
def test_pools_after_conv_in_an_operator(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    rng = np.random.default_rng(4)
    op = ConvPool(rng)
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    y = np.maximum(ref.conv2d(x, op.w, op.b, padding=1), 0)
    want = ref.adaptive_avg_pool2d(ref.max_pool2d(y, 2, ceil_mode=True), 2)
    ref.assert_close(op(x), want, np.float32, scale=27)
