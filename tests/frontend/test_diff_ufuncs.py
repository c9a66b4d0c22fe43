"""Differential tests: the ufuncs composed from existing ops (``frontend/composed.py``)
``deg2rad radians rad2deg degrees copysign heaviside fmax fmin hypot logaddexp logaddexp2 sinh
cosh sinc float_power fmod nextafter bitwise_count`` on the interpreter, the CPU backend
and ascend-sim: float16/32/64, integer promotion, odd sizes, non-contiguous inputs and
inf/NaN/-0.0/denormal operands."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, EXACT, MATH, Tol, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")
TWO_CALLS = Tol(math=2)  # sinh/cosh: exp (or expm1) and a square; logaddexp: exp + log1p


@hybrid
def exact_binary(x, y):
    return (np.deg2rad(x), np.radians(y), np.rad2deg(x), np.degrees(y),
            np.copysign(x, y), np.copysign(y, -1.0), np.heaviside(x, y),
            np.heaviside(y, 0.5), np.fmod(x, y), np.fmod(y, 1.5), np.nextafter(x, y),
            np.nextafter(y, np.inf), np.hypot(x, y))


@hybrid
def transcendental(x, y):
    return (np.logaddexp(x, y), np.logaddexp2(x, y), np.sinh(x), np.cosh(y),
            np.sinc(x), np.logaddexp(x, 0.0))


def _specials(dtype: str) -> np.ndarray:
    """inf, NaN, signed zeros, the smallest denormal, the largest finite, overflow edges."""
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal,
                     -info.smallest_subnormal, info.max, -info.max, 1.0, -1.0, 89.0,
                     -89.0, 11.0, 2.0, 1e-3], dtype=dtype)


def _operands(dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` of length ``n``: random values, then every pair of specials."""
    s = _specials(dtype)
    x = np.concatenate([rand((n,), dtype) * 4, np.repeat(s, s.size)]).astype(dtype)
    y = np.concatenate([rand((n,), dtype, seed=1) * 4, np.tile(s, s.size)]).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_exact_ufuncs(dtype, layout):
    x, y = (in_layout(v, layout) for v in _operands(dtype, 37))
    device = RUNNERS if dtype != "float64" else DEFAULT_RUNNERS
    # hypot is IEEE arithmetic plus one sqrt: within an ulp or two of libm's
    check(exact_binary, x, y, runners=device, rtol=Tol(math=1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_transcendental_ufuncs(dtype, layout):
    x, y = (in_layout(v, layout) for v in _operands(dtype, 41))
    device = RUNNERS if dtype != "float64" else DEFAULT_RUNNERS
    check(transcendental, x, y, runners=device, rtol=TWO_CALLS)


@hybrid
def nan_ignoring(x, y):
    return np.fmax(x, y), np.fmin(x, y), np.fmax(x, 0.5), np.fmin(2, y), np.fmax(x[::-1], y)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16", "bool"])
def test_fmax_fmin_take_the_other_operand_of_a_nan(dtype):
    x, y = _operands("float32", 23)
    with np.errstate(invalid="ignore"):
        x, y = x.astype(dtype), y.astype(dtype)
    check(nan_ignoring, x, y, rtol=EXACT)  # CPU: numpy's signs of zero too
    if dtype in ("float32", "float16"):
        # the device's Max/Min between -0.0 and 0.0 is the hardware's (docs/ascendc-
        # backend.md): x without zeros there, so no pairing is such a tie
        check(nan_ignoring, np.where(x == 0, x.dtype.type(3), x), y, runners=RUNNERS,
              rtol=EXACT)


@hybrid
def two_d(a, b):
    return np.hypot(a, b), np.copysign(a, b[:, :1]), np.fmod(a.T, b.T), np.sinh(a[::2])


def test_broadcasting_and_2d_views():
    a, b = rand((6, 5), "float32"), rand((6, 5), "float32", seed=3)
    check(two_d, a, b, rtol=TWO_CALLS, runners=RUNNERS)


@hybrid
def integer_ufuncs(a, b):
    return np.fmod(a, b), np.bitwise_count(a), np.bitwise_count(b), np.copysign(a, b)


@hybrid
def float64_results(a, b):
    return np.float_power(a, b), np.deg2rad(a), np.hypot(a, 3), np.sinc(a)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "int64",
                                   "uint64"])
def test_integer_ufuncs(dtype):
    info = np.iinfo(dtype)
    a = rand((29,), dtype, low=-50, high=50)
    b = rand((29,), dtype, seed=2, low=-6, high=7)
    a[:6] = [info.min, info.max, info.min, 7, 0, info.max]
    b[:6] = [-1 if info.min else 1, 0, 3, 0, 5, 2]  # MIN % -1, division by zero
    check(integer_ufuncs, a, b, runners=RUNNERS if a.itemsize <= 4 else DEFAULT_RUNNERS,
          rtol=EXACT)
    check(float64_results, a[6:], np.abs(b[6:]).astype(dtype), rtol=MATH)


def test_bool_operands_promote_like_numpy():
    @hybrid
    def on_bools(p, q):
        return np.fmod(p, q | True), np.bitwise_count(p), np.heaviside(p, q), np.sinc(p)

    p = np.array([True, False, True, False])
    check(on_bools, p, ~p, rtol=MATH)


def test_python_scalars_and_0d():
    @hybrid
    def scalars(x, s):
        return (np.hypot(3, 4), np.copysign(2, -0.0), np.fmod(-7, 2), np.sinc(0.0),
                np.logaddexp(s, s), np.cosh(x[0]), np.nextafter(s, 2.0), np.sinc(s))

    check(scalars, np.array([0.5, 2.0], np.float32), 1.25, rtol=TWO_CALLS)


def test_float_power_is_float64_on_the_device_too():
    """float_power computes in float64 (numpy's only real loops): the device has no
    float64, a documented, coded limit (E50041)."""
    @hybrid(target="ascend-sim")
    def fp(x):
        return np.float_power(x, 2.5)

    with pytest.raises(errors.PyascError, match="E50041"):
        fp(np.ones(4, np.float32))


def test_bitwise_count_of_a_float_is_a_type_error():
    @hybrid
    def count(x):
        return np.bitwise_count(x)

    with pytest.raises(errors.TypeMismatchError, match="bitwise_count"):
        count(np.ones(3, np.float32))
