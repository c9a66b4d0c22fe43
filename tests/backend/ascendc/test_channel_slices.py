"""A multi-channel convolution written with window slices over a run-time channel axis
(``np.sum(x[:, i:i+3, j:j+3] * w[o])``, ``dynamic_shape=True``) is the loop form's
channel stencil kernel (``ir/passes/channel_slices.py`` rewrites the sum into the loop
form before ``channel-interchange``): one compiled function for every channel count,
results exactly the loop form's (its (channel, row, column) order, a float32 sum for
float16), within rounding of numpy's pairwise sum; forms that do not become one
channel kernel run as before."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(2719)


def conv_slices(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])
    return out


def conv_loops(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for c in range(x.shape[0]):
                    for a in range(3):
                        for b in range(3):
                            acc += x[c, i + a, j + b] * w[o, c, a, b]
                out[o, i, j] = acc
    return out


def conv_batch_slices(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 2, x.shape[3] - 2), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 2):
                for j in range(x.shape[3] - 2):
                    out[n, o, i, j] = np.sum(x[n, :, i:i + 3, j:j + 3] * w[o])
    return out


def conv_batch_loops(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 2, x.shape[3] - 2), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 2):
                for j in range(x.shape[3] - 2):
                    acc = np.float32(0)
                    for c in range(x.shape[1]):
                        for a in range(3):
                            for b in range(3):
                                acc += x[n, c, i + a, j + b] * w[o, c, a, b]
                    out[n, o, i, j] = acc
    return out


def _schedules(k) -> list[str]:
    kinds = {x.name: (type(x).__name__, getattr(x, "schedule", "")) for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


SHAPES = [((1, 7, 17), 4), ((3, 17, 7), 1), ((5, 9, 33), 17), ((3, 11, 13), 4), ((0, 7, 9), 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("batch", [False, True], ids=["conv", "batch"])
def test_slice_conv_is_the_loop_forms_channel_kernel(dtype, batch):
    fn, loops = (conv_batch_slices, conv_batch_loops) if batch else (conv_slices, conv_loops)
    dyn = hybrid(fn, dynamic_shape=True)
    numpy_order = hybrid(fn, dynamic_shape=True, target="interpret")
    loop_order = hybrid(loops, dynamic_shape=True, target="interpret")
    for shape, outs in SHAPES:
        x = RNG.standard_normal((2, *shape) if batch else shape).astype(dtype)
        w = RNG.standard_normal((outs, shape[0], 3, 3)).astype(dtype)
        got, k = run_sim(dyn, x, w)
        # (float16: the float32 sums' cast is the channel kernel's epilogue)
        assert _schedules(k) == [("StencilKernel", "channels")]
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, loop_order(x, w))
        tol = 1e-5 if dtype == np.float32 else 2e-3  # numpy's pairwise order: rounding
        np.testing.assert_allclose(got.astype(np.float64), numpy_order(x, w),
                                   rtol=tol, atol=tol * shape[0] * 9)
    assert len(dyn.specializations) == 1


def _gm_ratio(k, args, got) -> float:
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    return (c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]) / \
        (sum(a.nbytes for a in args) + np.asarray(got).nbytes)


@pytest.mark.parametrize("batch", [False, True], ids=["conv", "batch"])
def test_slice_conv_moves_about_the_minimum_of_gm_bytes(batch):
    fn = conv_batch_slices if batch else conv_slices
    x = RNG.standard_normal((2, 8, 45, 61) if batch else (8, 45, 61)).astype(np.float32)
    args = (x, RNG.standard_normal((16, 8, 3, 3)).astype(np.float32))
    got, k = run_sim(hybrid(fn, dynamic_shape=True), *args)
    assert _schedules(k) == [("StencilKernel", "channels")]
    assert _gm_ratio(k, args, got) <= 1.2


def method_sum_bias_relu(x, w, b):
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                s = (w[o] * x[:, i:i + 3, j:j + 3]).sum()
                out[o, i, j] = max(s * 0.5 + b[o], 0.0)
    return out


def conv_k5(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 4, x.shape[2] - 4), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 4):
            for j in range(x.shape[2] - 4):
                out[o, i, j] = np.sum(x[:, i:i + 5, j:j + 5] * w[o])
    return out


@pytest.mark.parametrize("fn,shapes,kernels", [
    (method_sum_bias_relu, [(3, 13, 19), (4, 3, 3, 3), (4,)], 1),
    (conv_k5, [(3, 13, 19), (4, 3, 5, 5)], 1)], ids=["method_bias_relu", "k5"])
def test_other_spellings_are_the_channel_kernel(fn, shapes, kernels):
    # (a*b).sum() with the weights first and post ops reading a value per plane (the
    # channel kernel's epilogue, as the loop form's: test_channel_epilogue_inputs), a
    # 5x5 window
    args = tuple(RNG.standard_normal(s).astype(np.float32) for s in shapes)
    # 75 products of standard normals summed in the kernel's order (channel, row, column)
    # against numpy's pairwise one: an output near zero differs by a few 1e-6 (the
    # default atol failed 1 of 540 elements for some draws of the shared RNG, whose
    # state depends on the test order)
    k = check(hybrid(fn, dynamic_shape=True), *args, atol=1e-4)
    assert _schedules(k)[0] == ("StencilKernel", "channels") and len(k.last_kernels) == kernels
    assert k.last_counters["gm_scalar_read_bytes"] == 0


def two_windows(x, y):
    out = np.zeros((x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for i in range(x.shape[1] - 2):
        for j in range(x.shape[2] - 2):
            out[i, j] = np.sum(x[:, i:i + 3, j:j + 3] * y[:, i:i + 3, j:j + 3])
    return out


def strided(x, w):
    out = np.zeros((w.shape[0], (x.shape[1] - 1) // 2, (x.shape[2] - 1) // 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range((x.shape[1] - 1) // 2):
            for j in range((x.shape[2] - 1) // 2):
                out[o, i, j] = np.sum(x[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[o])
    return out


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
@pytest.mark.parametrize("fn,shapes", [(two_windows, [(3, 9, 11), (3, 9, 11)]),
                                       (strided, [(3, 9, 11), (2, 3, 3, 3)]),
                                       (conv_slices, [(3, 9, 11), (2, 1, 3, 3)])],
                         ids=["two_windows", "strided", "broadcast_weights"])
def test_forms_without_one_channel_kernel_run_as_before(fn, shapes):
    # the sum of two windows and a strided window do not plan as one channel kernel (the
    # trial keeps nothing); weights broadcast along the channels run the unchanged nest
    args = tuple(RNG.random(s).astype(np.float32) for s in shapes)
    k = check(hybrid(fn, dynamic_shape=True), *args)
    assert [kind for kind, _ in _schedules(k)] == ["ScalarKernel"]


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_weights_of_another_channel_count_raise_numpys_error():
    x, w = RNG.random((3, 9, 11)).astype(np.float32), RNG.random((2, 2, 3, 3)).astype(np.float32)
    for target in ("interpret", "ascend-sim"):
        with pytest.raises(ValueError, match="broadcast"):
            hybrid(conv_slices, dynamic_shape=True, target=target)(x, w)
