"""Issue 19's convolutions written with loops, in spellings that were scalar kernels on
ascend-sim (``benchmarks/loop_spellings.py``): each must now launch stencil/vector kernels
only, with no scalar GM access, its result bit-equal to ``target="interpret"`` (the same
order of the sums) on odd sizes, float32 and float16, static and ``dynamic_shape=True``.

* an initial value per output (``acc = bias[o]``, ``acc = res[o, i, j]``) under
  ``dynamic_shape``: ``channel-interchange`` writes it with a nest of its own and the
  channel kernel starts its sums from the accumulator buffer (it refused a non-constant
  initial value: the whole conv was one scalar kernel, 31x the minimum of GM bytes).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import run_sim

from pyasc import hybrid

RNG = np.random.default_rng(1919)


def _kinds(k) -> list[tuple[str, str]]:  # noqa: ANN001
    kinds = {x.name: (type(x).__name__, getattr(x, "schedule", "")) for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _assert_equal_and_vector(fn, interp, args) -> list[tuple[str, str]]:  # noqa: ANN001
    got, k = run_sim(fn, *args)
    want = interp(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert {kind for kind, _ in _kinds(k)} <= {"VectorKernel", "StencilKernel"}, _kinds(k)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    return _kinds(k)


# ---- an initial value per output: acc = bias[o] -------------------------------------------

def conv_bias_init_relu(x, w, bias):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = bias[o]
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = max(acc, 0)
    return out


def conv_batch_bias_init(x, w, bias):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 1, x.shape[3] - 2), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 1):
                for j in range(x.shape[3] - 2):
                    acc = bias[o]
                    for ch in range(x.shape[1]):
                        for a in range(2):
                            for b in range(3):
                                acc = acc + x[n, ch, i + a, j + b] * w[o, ch, a, b]
                    out[n, o, i, j] = np.maximum(acc, 0)
    return out


def conv_residual_init(x, w, res):
    # a value per output element (a residual), scaled: not a value per plane
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = res[o, i, j] * 0.5
                for ch in range(len(x)):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out


def _bias_args(fn, channels: int, h: int, wd: int, outs: int, dtype) -> tuple:  # noqa: ANN001
    lead = (2,) if fn is conv_batch_bias_init else ()
    kh = 2 if fn is conv_batch_bias_init else 3
    x = RNG.standard_normal((*lead, channels, h, wd)).astype(dtype)
    w = RNG.standard_normal((outs, channels, kh, 3)).astype(dtype)
    third = RNG.standard_normal((outs, h - 2, wd - 2)) if fn is conv_residual_init else \
        RNG.standard_normal(outs)
    return x, w, third.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fn", [conv_bias_init_relu, conv_batch_bias_init, conv_residual_init])
def test_an_initial_value_per_output_is_a_channel_kernel(fn, dtype):
    # ONE compiled function for C = 3, 0, 5 and odd sizes (0 channels: the initial values)
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    for shape in [(3, 9, 13), (0, 6, 7), (5, 11, 30)]:
        kinds = _assert_equal_and_vector(dyn, interp, _bias_args(fn, *shape, 5, dtype))
        assert ("StencilKernel", "channels") in kinds
    assert len(dyn.specializations) == 1


def test_an_initial_value_per_output_with_static_shapes():
    args = _bias_args(conv_bias_init_relu, 3, 9, 13, 4, np.float32)
    fn = hybrid(conv_bias_init_relu)
    _assert_equal_and_vector(fn, hybrid(conv_bias_init_relu, target="interpret"), args)
