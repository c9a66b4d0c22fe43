"""ascend-sim's half/bf16 types and Cast under every legal RoundMode, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library, marked_line

from pyasc.backend.ascendc.sim import SimViolationError, bf16_bits_to_float32, float32_to_bf16_bits

RNG = np.random.default_rng(99)
NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD = range(7)


def lib():
    return library("sim_elementwise.cpp")


def cast(kernel: str, x: np.ndarray, out_dtype, mode: int, chunk: int = 8192) -> np.ndarray:
    """Cast ``x`` in UB-sized chunks (one launch per chunk, like a tiled kernel would)."""
    out = np.zeros(x.size, dtype=out_dtype)
    for start in range(0, x.size, chunk):
        part = np.ascontiguousarray(x[start : start + chunk])
        res = np.zeros(part.size, dtype=out_dtype)
        lib().launch(kernel, 1, part, res, part.size, mode)
        out[start : start + chunk] = res
    return out


def directed(x: np.ndarray, near: np.ndarray, mode: int) -> np.ndarray:
    """Round exact values ``x`` (float64) to ``near``'s format under ``mode``.

    ``near`` is numpy's round-to-nearest-even conversion; its neighbours give the
    candidates, so this reference shares no code with the model.
    """
    ftype = near.dtype.type
    below = near.astype(np.float64) > x
    above = near.astype(np.float64) < x
    with np.errstate(over="ignore"):  # nextafter(max) is inf, which is the right neighbour
        lo = np.where(below, np.nextafter(near, ftype(-np.inf)), near)
        hi = np.where(above, np.nextafter(near, ftype(np.inf)), near)
    if mode in (NONE, RINT):
        return near
    if mode == FLOOR:
        return lo
    if mode == CEIL:
        return hi
    if mode == TRUNC:
        return np.where(x >= 0, lo, hi)
    finite_max = np.finfo(ftype).max
    lo_v = np.where(np.isinf(lo), -2.0 * float(finite_max), lo.astype(np.float64))
    hi_v = np.where(np.isinf(hi), 2.0 * float(finite_max), hi.astype(np.float64))
    if mode == ROUND:  # ties away from zero; otherwise nearest
        tie = (x - lo_v == hi_v - x) & (lo != hi)
        return np.where(tie, np.where(x > 0, hi, lo), near)
    width = np.uint16 if ftype is np.float16 else np.uint32
    odd_lo = (lo.view(width) & 1) == 1
    return np.where(lo == hi, near, np.where(odd_lo, lo, hi))


def f32_inputs(n: int, scale: float) -> np.ndarray:
    """Random floats around the target range, signed, plus ties, zeros and overflow."""
    with np.errstate(over="ignore"):  # a few overflow to inf on purpose
        mags = np.exp2(RNG.uniform(-30, np.log2(scale) + 2, n)).astype(np.float32)
    vals = np.where(RNG.random(n) < 0.5, -mags, mags).astype(np.float32)
    extra = np.array(
        [
            0.0,
            -0.0,
            2049.0,
            2051.0,
            -2049.0,
            65519.0,
            65520.0,
            70000.0,
            -1e9,
            np.inf,
            -np.inf,
            2.0**-24,
            3 * 2.0**-25,
            -(2.0**-25),
            1.5,
            -2.5,
        ],
        dtype=np.float32,
    )
    return np.concatenate([extra, vals])


@pytest.mark.parametrize("mode", [NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD])
def test_float_to_half_every_mode(mode):
    x = f32_inputs(4000, 65504)
    got = cast("cast_f32_f16", x, np.float16, mode)
    with np.errstate(over="ignore"):
        want = directed(x.astype(np.float64), x.astype(np.float16), mode)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_every_half_widens_exactly():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = cast("cast_f16_f32", h, np.float32, NONE)
    nan = np.isnan(h)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(
        got[~nan].view(np.uint32), h[~nan].astype(np.float32).view(np.uint32)
    )


def test_half_rne_conversion_of_random_float_bits():
    bits = RNG.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    got = cast("cast_f32_f16", x, np.float16, RINT)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def bf16_reference(x: np.ndarray, mode: int) -> np.ndarray:
    """Directed rounding float32 -> bf16 on the bit patterns (sign-magnitude)."""
    bits = x.view(np.uint32).astype(np.uint64)
    trunc, rest, neg = bits >> 16, bits & 0xFFFF, (bits >> 31) == 1
    up = {
        RINT: (rest > 0x8000) | ((rest == 0x8000) & ((trunc & 1) == 1)),
        ROUND: rest >= 0x8000,
        TRUNC: np.zeros_like(neg),
        FLOOR: neg & (rest != 0),
        CEIL: ~neg & (rest != 0),
    }[mode]
    return (trunc + up).astype(np.uint16)


@pytest.mark.parametrize("mode", [RINT, FLOOR, CEIL, ROUND, TRUNC])
def test_float_to_bf16_every_legal_mode(mode):
    x = f32_inputs(4000, 3e38)
    x = x[np.isfinite(x) | np.isinf(x)]
    got = cast("cast_f32_bf16", x, np.uint16, mode)
    np.testing.assert_array_equal(got, bf16_reference(x, mode))
    if mode == RINT:
        np.testing.assert_array_equal(got, float32_to_bf16_bits(x))


def test_bf16_widens_exactly():
    b = RNG.integers(0, 1 << 16, 4096, dtype=np.uint16)
    b = b[~np.isnan(bf16_bits_to_float32(b))]
    got = cast("cast_bf16_f32", b, np.float32, NONE)
    np.testing.assert_array_equal(got.view(np.uint32), bf16_bits_to_float32(b).view(np.uint32))


def int_reference(x: np.ndarray, mode: int) -> np.ndarray:
    v = x.astype(np.float64)
    r = {
        RINT: np.rint,
        FLOOR: np.floor,
        CEIL: np.ceil,
        TRUNC: np.trunc,
        ROUND: lambda a: np.sign(a) * np.floor(np.abs(a) + 0.5),
    }[mode](v)
    r = np.where(np.isnan(r), 0, np.clip(r, -(2**31), 2**31 - 1))
    return r.astype(np.int32)


@pytest.mark.parametrize("mode", [RINT, FLOOR, CEIL, ROUND, TRUNC])
def test_float_and_half_to_int32(mode):
    x = np.concatenate(
        [
            RNG.uniform(-1000, 1000, 500),
            np.arange(-6, 6) + 0.5,
            [3e9, -3e9, np.inf, -np.inf, np.nan],
        ]
    ).astype(np.float32)
    np.testing.assert_array_equal(cast("cast_f32_i32", x, np.int32, mode), int_reference(x, mode))
    h = x[np.abs(x) < 60000].astype(np.float16)
    np.testing.assert_array_equal(cast("cast_f16_i32", h, np.int32, mode), int_reference(h, mode))


@pytest.mark.parametrize("mode", [NONE, RINT, FLOOR, CEIL, ROUND, TRUNC])
def test_int32_and_int64_to_float(mode):
    i = np.concatenate(
        [RNG.integers(-(2**31), 2**31 - 1, 1000), [2**24 + 1, 2**24 + 3, -(2**25) - 2]]
    )
    i32 = i.astype(np.int32)
    got = cast("cast_i32_f32", i32, np.float32, mode)
    want = directed(i32.astype(np.float64), i32.astype(np.float32), mode)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    if mode != NONE:
        i64 = (i.astype(np.int64) << 20) + 1
        got64 = cast("cast_i64_f32", i64, np.float32, mode)
        exact = i64.astype(np.longdouble)
        want64 = directed(exact, i64.astype(np.longdouble).astype(np.float32), mode)
        np.testing.assert_array_equal(got64.view(np.uint32), want64.view(np.uint32))


@pytest.mark.parametrize(
    "mode, ref",
    [
        (RINT, np.rint),
        (FLOOR, np.floor),
        (CEIL, np.ceil),
        (TRUNC, np.trunc),
        (ROUND, lambda a: np.copysign(np.floor(np.abs(a) + 0.5), a)),
    ],
)
def test_float_to_float_rounds_to_integral(mode, ref):
    x = np.concatenate([RNG.uniform(-50, 50, 300), np.arange(-4, 4) + 0.5, [-0.25, 0.25]]).astype(
        np.float32
    )
    got = cast("cast_f32_f32", x, np.float32, mode)
    np.testing.assert_array_equal(
        got.view(np.uint32), ref(x.astype(np.float64)).astype(np.float32).view(np.uint32)
    )


@pytest.mark.parametrize(
    "kernel, src, mode, text",
    [
        ("cast_f32_bf16", np.float32, NONE, "CAST_NONE from float to bfloat16_t"),
        ("cast_f32_bf16", np.float32, ODD, "CAST_ODD from float to bfloat16_t"),
        ("cast_f16_f32", np.float16, RINT, "CAST_RINT from half to float"),
        ("cast_f32_i32", np.float32, NONE, "CAST_NONE from float to int32_t"),
        ("cast_f32_f32", np.float32, NONE, "CAST_NONE from float to float"),
        ("cast_i64_f32", np.int64, NONE, "CAST_NONE from int64_t to float"),
    ],
)
def test_illegal_modes_are_violations_at_the_cast_line(kernel, src, mode, text):
    x = np.zeros(8, dtype=src)
    with pytest.raises(SimViolationError) as err:
        cast(kernel, x, np.float32 if "float" in text.split(" to ")[1] else np.int32, mode)
    assert err.value.api == "Cast"
    assert text in err.value.detail
    assert err.value.line == marked_line("sim_elementwise.cpp", "// CAST_CALL")
