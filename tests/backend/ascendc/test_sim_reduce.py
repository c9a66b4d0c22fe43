"""ascend-sim Compare/Select, per-row reductions and the DataCopyPad padding layout."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from ascend_simkit import library, marked_line

from pyasc.backend.ascendc.sim import SimViolationError

RNG = np.random.default_rng(7)
STALE = np.uint32(0xFFFFFFFF).view(np.float32)  # what the model leaves in "random" UB bytes


def lib():
    return library("sim_cmp_reduce.cpp")


def test_compare_then_select_tensor_and_scalar_forms():
    n = 512
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    out, clipped = np.zeros(n, np.float32), np.zeros(n, np.float32)
    counters = lib().launch("where_gt", 1, a, b, out, clipped, n, -0.5)
    np.testing.assert_array_equal(out, np.where(a > b, a, b))
    np.testing.assert_array_equal(clipped, np.where(a > b, a, np.float32(-0.5)))
    assert counters["Compare_calls"] == 1 and counters["Select_calls"] == 2


@pytest.mark.parametrize(
    "mode, op",
    list(enumerate([operator.lt, operator.gt, operator.eq, operator.le, operator.ge, operator.ne])),
)
def test_compare_modes_bit_per_element(mode, op):
    n = 128
    a = RNG.integers(-3, 3, n).astype(np.float32)
    b = RNG.integers(-3, 3, n).astype(np.float32)
    a[:4] = [np.nan, 1, np.nan, np.inf]
    b[:4] = [1, np.nan, np.nan, np.inf]
    out = np.full(n, 9, np.float32)
    lib().launch("compare_mode", 1, a, b, out, n, mode)
    np.testing.assert_array_equal(out, op(a, b).astype(np.float32))


@pytest.mark.parametrize("rows, cols", [(5, 37), (3, 64), (7, 1), (2, 300), (1, 2000)])
def test_row_reductions(rows, cols):
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    sums, maxs, mins = (np.zeros(rows, np.float32) for _ in range(3))
    argmax = np.full(rows, -1, np.int32)
    counters = lib().launch("row_reduce", 1, x, sums, maxs, mins, argmax, rows, cols)
    np.testing.assert_allclose(sums, x.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(maxs, x.max(axis=1))
    np.testing.assert_array_equal(mins, x.min(axis=1))
    np.testing.assert_array_equal(argmax, x.argmax(axis=1))
    assert counters["gm_to_ub_bytes"] == x.nbytes
    assert counters["ub_to_gm_bytes"] == 4 * rows * 4


def test_half_sum_exact_on_integers_and_close_on_noise():
    ints = RNG.integers(-2, 3, 1000).astype(np.float16)
    out = np.zeros(1, np.float16)
    lib().launch("sum_f16", 1, ints, out, ints.size)
    assert out[0] == ints.astype(np.float64).sum()
    noise = RNG.uniform(0, 1, 777).astype(np.float16)
    lib().launch("sum_f16", 1, noise, out, noise.size)
    np.testing.assert_allclose(float(out[0]), noise.astype(np.float64).sum(), rtol=5e-3)


def expected_pad_image(x, rows, cols, src_gap, left, right, is_pad, value, gap_blocks):
    blk = -(-(left + cols + right) * 4 // 32) * 8
    ub_cols = blk + gap_blocks * 8
    img = np.full((rows, ub_cols), -7.0, np.float32)
    pad = np.float32(value) if is_pad else STALE
    for r in range(rows):
        data = x[r * (cols + src_gap) : r * (cols + src_gap) + cols]
        img[r, :left] = pad
        img[r, left : left + cols] = data
        img[r, left + cols : left + cols + right] = pad
        img[r, left + cols + right : blk] = data[0] if left == right == 0 else pad
    return img


@pytest.mark.parametrize(
    "rows, cols, src_gap, left, right, is_pad, gap_blocks",
    [
        (3, 5, 0, 0, 0, 0, 0),  # dummy repeats the first element of each block
        (4, 5, 2, 0, 3, 1, 0),  # right padding with a value, then value-filled dummy
        (2, 13, 1, 2, 1, 1, 1),  # both paddings and a UB gap between blocks
        (2, 8, 0, 0, 0, 0, 2),  # aligned rows: no dummy at all
        (3, 6, 0, 1, 0, 0, 0),  # padding without isPad: stale bytes
    ],
)
def test_datacopypad_gm_to_ub_layout(rows, cols, src_gap, left, right, is_pad, gap_blocks):
    x = RNG.standard_normal(rows * (cols + src_gap) - src_gap).astype(np.float32)
    want = expected_pad_image(x, rows, cols, src_gap, left, right, is_pad, 2.5, gap_blocks)
    img = np.zeros(want.size, np.float32)
    counters = lib().launch(
        "pad_image", 1, x, img, rows, cols, src_gap, left, right, is_pad, 2.5, gap_blocks
    )
    np.testing.assert_array_equal(img.view(np.uint32), want.reshape(-1).view(np.uint32))
    assert counters["gm_to_ub_bytes"] == rows * cols * 4
    assert counters["ub_to_gm_bytes"] == img.nbytes


@pytest.mark.parametrize(
    "rows, cols, src_gap_blocks, dst_gap", [(3, 5, 0, 0), (4, 13, 1, 3), (2, 16, 2, 1)]
)
def test_datacopypad_ub_to_gm_strides(rows, cols, src_gap_blocks, dst_gap):
    ub_cols = -(-cols * 4 // 32) * 8 + src_gap_blocks * 8
    x = RNG.standard_normal(rows * ub_cols).astype(np.float32)
    y = np.full(rows * (cols + dst_gap) - dst_gap, -1.0, np.float32)
    lib().launch("pad_scatter", 1, x, y, rows, cols, src_gap_blocks, dst_gap)
    want = np.full_like(y, -1.0)
    for r in range(rows):
        want[r * (cols + dst_gap) : r * (cols + dst_gap) + cols] = x[
            r * ub_cols : r * ub_cols + cols
        ]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(
    "rows, blocks, src_gap, dst_gap", [(3, 2, 1, 0), (4, 1, 0, 2), (2, 3, 2, 1)]
)
def test_datacopyparams_strides_and_ub_to_ub(rows, blocks, src_gap, dst_gap):
    x = RNG.standard_normal((rows, (blocks + src_gap) * 8)).astype(np.float32)
    y = np.full((rows, (blocks + dst_gap) * 8), -1.0, np.float32)
    counters = lib().launch("strided_copy", 1, x, y, rows, blocks, src_gap, dst_gap)
    want = np.full_like(y, -1.0)
    want[:, : blocks * 8] = x[:, : blocks * 8]
    np.testing.assert_array_equal(y, want)
    assert counters["ub_to_ub_bytes"] == rows * blocks * 32
    assert counters["gm_to_ub_bytes"] == counters["ub_to_gm_bytes"] == rows * blocks * 32


def test_scalar_gm_access_and_its_counters():
    x = RNG.standard_normal(50).astype(np.float32)
    idx = RNG.integers(0, 50, 20).astype(np.int32)
    out = np.zeros(20, np.float32)
    counters = lib().launch("scalar_gather", 1, x, idx, out, 20)
    np.testing.assert_array_equal(out, x[idx])
    assert (
        counters["gm_scalar_read_bytes"] == 20 * 8 and counters["gm_scalar_write_bytes"] == 20 * 4
    )
    assert counters["gm_to_ub_bytes"] == 0


def test_scalar_gm_read_out_of_bounds_is_reported():
    idx = np.array([0, 50], np.int32)
    with pytest.raises(SimViolationError) as err:
        lib().launch("scalar_gather", 1, np.zeros(50, np.float32), idx, np.zeros(2, np.float32), 2)
    assert err.value.api == "GlobalTensor::GetValue"
    assert err.value.line == marked_line("sim_cmp_reduce.cpp", "// GATHER_READ")


def test_class_style_kernel_half_sigmoid_and_argmax_index():
    x = RNG.uniform(-6, 6, 256).astype(np.float16)
    y, arg = np.zeros_like(x), np.zeros(1, np.int32)
    counters = lib().launch("sigmoid_argmax_f16", 1, x, y, arg, x.size)
    np.testing.assert_allclose(
        y.astype(np.float32), 1 / (1 + np.exp(-x.astype(np.float32))), atol=1e-3
    )
    assert arg[0] == int(np.argmax(x))
    assert counters["Sigmoid_calls"] == 1 and counters["ReduceMax_calls"] == 1
