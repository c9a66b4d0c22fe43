"""``**`` and ``np.power`` give numpy's special values for every kind of exponent.

numpy computes an array to a *scalar* exponent of 0.5 with ``sqrt`` (the fast path of
its float loops for a stride-0 exponent: ``(-0)**0.5 = -0``, ``(-inf)**0.5 = nan``), but
a scalar base (numpy's and Python's scalar ``**``) and an array of exponents with
``pow`` (``+0`` and ``inf`` there).  The compiled code once took ``pow`` for a run-time
exponent that was 0.5, and ``sqrt`` for a scalar base to the constant 0.5.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid

SPECIALS = [-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, 4.0, 2.0, 1e-3]
TARGETS = ["cpu", pytest.param("ascend-sim", marks=pytest.mark.ascend_sim)]


def _same(got: object, want: object, rtol: float) -> None:
    """Special values (NaN, infinities, zeros with their signs) exactly; the rest within
    ``rtol`` (0 on the CPU; the device's Exp/Ln are not correctly rounded)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (got, want)
    special = ~np.isfinite(want) | (want == 0)
    assert (got[special & ~nan] == want[special & ~nan]).all(), (got, want)
    assert (np.signbit(got) == np.signbit(want))[~nan].all(), (got, want)
    np.testing.assert_allclose(got[~special], want[~special], rtol=rtol, atol=0)


def _programs(target: str) -> dict:
    def arr_const(x):
        return x ** 0.5

    def arr_runtime(x, s):
        return x ** s

    def np_power_runtime(x, s):
        return np.power(x, s)

    def scalar_const(x):
        return x[0] ** 0.5, x[1] ** 0.5, x[2] ** 0.5

    def scalar_runtime(x, s):
        return x[0] ** s, x[2] ** s

    def array_of_exponents(x):
        return np.power(x, np.full_like(x, 0.5))

    fns = [arr_const, arr_runtime, np_power_runtime, scalar_const, scalar_runtime,
           array_of_exponents]
    return {f.__name__: (f, hybrid(target=target)(f)) for f in fns}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_special_values_match_numpy(target, dtype):
    if target == "ascend-sim" and dtype == np.float64:
        pytest.skip("no float64 on the device")
    x = np.array(SPECIALS, dtype)
    progs = _programs(target)
    with np.errstate(all="ignore"):
        for name, (py, compiled) in progs.items():
            args = (x, 0.5) if "runtime" in name else (x,)
            want, got = py(*args), compiled(*args)
            for w, g in zip(np.atleast_1d(want) if not isinstance(want, tuple) else want,
                            np.atleast_1d(got) if not isinstance(got, tuple) else got,
                            strict=True):
                _same(g, w, 0 if target == "cpu" else 4e-7)


@pytest.mark.parametrize("s", [0.5, 2.0, 1.5, -1.0, 3.0])
def test_runtime_exponent_other_values_unchanged(s):
    rng = np.random.default_rng(5)
    x = np.concatenate([np.array(SPECIALS, np.float32),
                        rng.standard_normal(300).astype(np.float32) * 10])
    def power(x, s):
        return x ** s

    f = hybrid(target="cpu")(power)
    with np.errstate(all="ignore"):
        want = x ** s
    got = f(x, s)
    # numpy's own loops are not correctly rounded for general exponents: one ulp
    close = np.isclose(got, want, rtol=2 ** -22, atol=0) | (got == want)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert close[~nan].all()
    assert (np.signbit(got) == np.signbit(want))[~nan].all()


GRID = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0],
                np.float32)
EXPONENTS = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0,
                      0.5, -0.5, 1.5, -2.5, 1e10, 33.0], np.float32)


def pair_power(x, y):
    return x ** y


def constant_powers(x):
    return x ** 1.5, x ** -0.5, x ** -2.5, x ** 3, x ** -2, np.power(x, np.full_like(x, 0.5))


@pytest.mark.parametrize("target", TARGETS)
def test_pairs_follow_c99_pow_special_values(target):
    # ascend-sim: a scalar kernel (PyascPowFF); it gave NaN for (-inf)**1.5, (-2)**inf,
    # 1**nan and (-2)**1e10
    x, y = (a.ravel() for a in np.meshgrid(GRID, EXPONENTS))
    with np.errstate(all="ignore"):
        want = x ** y
    got = hybrid(target=target)(pair_power)(x, y)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (x[np.isnan(got) != nan], y[np.isnan(got) != nan])
    exact = np.isinf(want) | (want == 0) | (np.abs(want) == 1)
    assert (got[exact] == want[exact]).all()
    assert (np.signbit(got) == np.signbit(want))[~nan].all()
    np.testing.assert_allclose(got[~nan], want[~nan], rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_constant_exponents_follow_pow_special_values(target):
    # ascend-sim vector kernels: Rsqrt(-0) was -inf, (-inf)**1.5 NaN, Sqrt(-0) -0
    with np.errstate(all="ignore"):
        wants = constant_powers(GRID)
    gots = hybrid(target=target)(constant_powers)(GRID)
    for got, want in zip(gots, wants, strict=True):
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all(), (GRID, got, want)
        assert (np.signbit(got) == np.signbit(want))[~nan].all(), (GRID, got, want)
        np.testing.assert_allclose(got[~nan], want[~nan], rtol=1e-5)


def _kernel_kinds(fn, *args) -> list[str]:
    """The kinds of the AscendC kernels ``fn`` lowers to for ``args`` (no build)."""
    from pyasc.backend.ascendc import lower_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [type(k).__name__ for k in lower_program(fn.specialize(*args)).kernels]


@pytest.mark.ascend_sim
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_runtime_exponent_is_a_vector_kernel_with_pow_special_values(dtype):
    # a focal loss's (1 - p) ** gamma: 'math.pow' (and the select of numpy's sqrt fast
    # path on a scalar condition) made it a scalar kernel; every special of C99 pow
    # (and numpy's sqrt for 0.5) must survive Exp(y * Ln|x|) on the vector unit
    x = GRID.astype(dtype)
    f = hybrid(target="ascend-sim")(pair_power)
    assert _kernel_kinds(f, x, 2.0) == ["VectorKernel"]
    for y in EXPONENTS.tolist():
        with np.errstate(all="ignore"):
            want = x ** y
        got = f(x, y)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all(), (y, got, want)
        assert (np.signbit(got) == np.signbit(want))[~nan].all(), (y, got, want)
        exact = np.isinf(want) | (want == 0) | (np.abs(want) == 1)
        assert (got[exact] == want[exact]).all(), (y, got, want)
        # device Exp/Ln and float32's y * Ln|x|: a few ulp (27 seen, 33 * Ln 3)
        np.testing.assert_allclose(got[~nan], want[~nan], rtol=4e-6 if dtype == np.float32
                                   else 1e-3)


@pytest.mark.ascend_sim
def test_runtime_exponent_accuracy_on_the_vector_unit():
    # Exp(y * Ln|x|) in float32: the product's rounding is amplified by |y Ln x| <= 9.2
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 4096).astype(np.float32)
    f = hybrid(target="ascend-sim")(pair_power)
    for y in rng.uniform(-4, 4, 8).astype(np.float32).tolist():
        want = x.astype(np.float64) ** y
        np.testing.assert_allclose(f(x, y), want, rtol=2.5e-6, atol=0)


def half_power(x, s):
    return x ** s, np.power(x, s), x ** 0.5, np.power(x, 0.5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("exponent", [0.5, np.float16(0.5), 1.5])
def test_half_arrays_take_sqrt_only_where_numpy_does(target, exponent):
    # numpy's float16 loop has no sqrt fast path (pow through float: (-0)**0.5 = +0,
    # (-inf)**0.5 = inf); only ndarray.__pow__ of a Python float 0.5 takes sqrt. The
    # compiled code took sqrt for np.power and np.float16 exponents too
    x = GRID.astype(np.float16)
    with np.errstate(all="ignore"):
        wants = half_power(x, exponent)
    gots = hybrid(target=target)(half_power)(x, exponent)
    for got, want in zip(gots, wants, strict=True):
        _same(got, want, 0 if target == "cpu" else 1e-3)


def python_int_powers(x, n, k):
    return x * (n ** -1), x * (n ** -2), x * n ** k, x * (2 ** k)


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_a_python_int_to_a_negative_int_power_is_a_float(target):
    # Python: 4 ** -1 == 0.25.  The compiled code computed an integer power (0) for a
    # run-time Python int base: a silent wrong result
    x = np.ones(3, np.float32)
    f = hybrid(target=target)(python_int_powers)
    for got, want in zip(f(x, 4, 3), python_int_powers(x, 4, 3), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    # a run-time exponent: the type is an int's (Python's would depend on the sign), so
    # a negative one is refused where it runs instead of giving 0
    if target != "interpret":
        with pytest.raises(ValueError, match=r"float\(n\) \*\* k"):
            f(x, 4, -1)
