"""ascend-sim runs hand-written AscendC elementwise kernels with numpy-exact results."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library
from hypothesis import given, settings
from hypothesis import strategies as st

from pyasc.backend.ascendc.sim import bf16_bits_to_float32, float32_to_bf16_bits

RNG = np.random.default_rng(1234)


def lib():
    return library("sim_elementwise.cpp")


def special_halves(n: int) -> np.ndarray:
    """Random halves plus infinities, NaN, signed zeros, denormals and the extremes."""
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504, -65504, 6e-8, -6e-8, 6.1e-5, 1, -1],
        dtype=np.float16,
    )
    rand = RNG.integers(0, 1 << 16, size=n - special.size, dtype=np.uint16).view(np.float16)
    return np.concatenate([special, rand])


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, equal signs of zero, NaN where NaN is expected."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    width = {2: np.uint16, 4: np.uint32}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(width), want[~nan].view(width))


@settings(max_examples=20, deadline=None)
@given(total=st.integers(1, 6000), tile_blocks=st.integers(1, 64), blocks=st.integers(1, 48))
def test_add_blocks_tiles_and_tails(total, tile_blocks, blocks):
    tile = tile_blocks * 8
    x = RNG.standard_normal(total).astype(np.float32)
    y = RNG.standard_normal(total).astype(np.float32)
    z = np.full(total, np.nan, dtype=np.float32)
    counters = lib().launch("add_custom", blocks, x, y, z, total, tile)
    np.testing.assert_array_equal(z, x + y)
    # Each input read once, the output written once: the minimum GM traffic.
    assert counters["gm_to_ub_bytes"] == 2 * x.nbytes
    assert counters["ub_to_gm_bytes"] == z.nbytes
    assert counters["copy_in_single_buffered_calls"] == 0
    assert counters["blocks"] == blocks
    assert counters["ub_peak_bytes"] == 6 * tile * 4


def test_add_counters_for_a_large_tail_case():
    total, tile, blocks = 48 * 1024 + 37, 2048, 8
    x, y = np.ones(total, np.float32), np.arange(total, dtype=np.float32)
    z = np.zeros(total, np.float32)
    counters = lib().launch("add_custom", blocks, x, y, z, total, tile)
    np.testing.assert_array_equal(z, x + y)
    per_block = -(-total // (blocks * 8)) * 8
    tiles = sum(-(-min(per_block, total - b * per_block) // tile) for b in range(blocks))
    assert counters["Add_calls"] == tiles == counters["copy_out_calls"]
    assert counters["copy_in_calls"] == 2 * tiles
    assert counters["vec_elements"] == total


@pytest.mark.parametrize(
    "kernel, op",
    [
        ("add_f16", np.add),
        ("sub_f16", np.subtract),
        ("mul_f16", np.multiply),
        ("div_f16", np.divide),
        ("max_f16", np.maximum),
        ("min_f16", np.minimum),
    ],
)
def test_fp16_binary_is_bit_exact(kernel, op):
    a, b = special_halves(1024), special_halves(1024)[::-1].copy()
    out = np.zeros(1024, np.float16)
    lib().launch(kernel, 1, a, b, out, 1024)
    with np.errstate(all="ignore"):
        assert_same_bits(out, op(a, b))


def test_float_div_and_integer_wraparound():
    a = RNG.standard_normal(256).astype(np.float32)
    b = RNG.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    lib().launch("div_f32", 1, a, b, out, 256)
    np.testing.assert_array_equal(out, a / b)
    ia = np.array([2**31 - 1, -(2**31), 5, -7] * 16, dtype=np.int32)
    ib = np.array([1, -1, -9, 7] * 16, dtype=np.int32)
    iout = np.zeros(64, np.int32)
    lib().launch("add_i32", 1, ia, ib, iout, 64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(iout, ia + ib)
    sa = RNG.integers(-32768, 32767, 64, dtype=np.int16)
    sb = RNG.integers(-32768, 32767, 64, dtype=np.int16)
    sout = np.zeros(64, np.int16)
    lib().launch("mul_i16", 1, sa, sb, sout, 64)
    np.testing.assert_array_equal(sout, sa * sb)


@pytest.mark.parametrize(
    "kernel, ref, positive, rtol",
    [
        ("exp_f32", np.exp, False, 1e-6),
        ("ln_f32", np.log, True, 1e-6),
        ("sqrt_f32", np.sqrt, True, 0),
        ("rsqrt_f32", lambda v: 1 / np.sqrt(v), True, 1e-7),
        ("recip_f32", lambda v: 1 / v, False, 0),
        ("relu_f32", lambda v: np.maximum(v, 0), False, 0),
        ("abs_f32", np.abs, False, 0),
        ("sigmoid_f32", lambda v: 1 / (1 + np.exp(-v)), False, 1e-6),
    ],
)
def test_float_unary_matches_numpy(kernel, ref, positive, rtol):
    x = RNG.uniform(0.01 if positive else -20, 20, 512).astype(np.float32)
    out = np.zeros_like(x)
    lib().launch(kernel, 1, x, out, x.size)
    np.testing.assert_allclose(out, ref(x).astype(np.float32), rtol=rtol, atol=0)


def test_half_unary_and_int_relu():
    x = RNG.uniform(-8, 8, 256).astype(np.float16)
    out = np.zeros_like(x)
    lib().launch("exp_f16", 1, x, out, x.size)
    np.testing.assert_allclose(out.astype(np.float32), np.exp(x.astype(np.float32)), rtol=1e-3)
    y = np.abs(x)
    lib().launch("sqrt_f16", 1, y, out, y.size)
    assert_same_bits(out, np.sqrt(y))
    i = RNG.integers(-100, 100, 64).astype(np.int32)
    iout = np.zeros_like(i)
    lib().launch("relu_i32", 1, i, iout, i.size)
    np.testing.assert_array_equal(iout, np.maximum(i, 0))


@pytest.mark.parametrize(
    "kernel, op",
    [
        ("adds_f32", np.add),
        ("muls_f32", np.multiply),
        ("maxs_f32", np.maximum),
        ("mins_f32", np.minimum),
    ],
)
def test_scalar_forms(kernel, op):
    x = RNG.standard_normal(128).astype(np.float32)
    out = np.zeros_like(x)
    lib().launch(kernel, 1, x, out, x.size, 0.375)
    np.testing.assert_array_equal(out, op(x, np.float32(0.375)))


def test_half_scalar_parameter_and_int_muls():
    x = special_halves(256)
    out = np.zeros_like(x)
    lib().launch("adds_f16", 1, x, out, x.size, np.float16(-1.5))
    with np.errstate(invalid="ignore"):  # inf + -1.5 and NaN inputs
        assert_same_bits(out, x + np.float16(-1.5))
    i = np.array([2**30, -3, 7, 0] * 16, dtype=np.int32)
    iout = np.zeros_like(i)
    lib().launch("muls_i32", 1, i, iout, i.size, 4)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(iout, i * np.int32(4))


@pytest.mark.parametrize(
    "kernel, dtype, value",
    [
        ("fill_f32", np.float32, -2.25),
        ("fill_f16", np.float16, 3.140625),
        ("fill_i32", np.int32, -42),
    ],
)
def test_duplicate_fills_exactly_n(kernel, dtype, value):
    out = np.full(45, 7, dtype=dtype)
    counters = lib().launch(kernel, 1, out, 37, value)
    np.testing.assert_array_equal(out[:37], np.full(37, value, dtype=dtype))
    np.testing.assert_array_equal(out[37:], 7)  # DataCopyPad wrote 37 elements, no more
    assert counters["Duplicate_calls"] == 1
    assert counters["ub_to_gm_bytes"] == 37 * np.dtype(dtype).itemsize


def test_bf16_fill_and_axpy():
    out = np.zeros(19, np.uint16)
    lib().launch("fill_bf16", 1, out, 19, 1.0 / 3.0)
    np.testing.assert_array_equal(out, float32_to_bf16_bits(np.full(19, 1 / 3, np.float32)))
    a = float32_to_bf16_bits(RNG.standard_normal(256).astype(np.float32))
    b = float32_to_bf16_bits(RNG.standard_normal(256).astype(np.float32))
    res = np.zeros(256, np.uint16)
    lib().launch("axpy_bf16", 1, a, b, res, 256, 1.7)
    fa, fb = bf16_bits_to_float32(a), bf16_bits_to_float32(b)
    want = float32_to_bf16_bits(fa * np.float32(1.7) + fb)
    np.testing.assert_array_equal(res, want)
