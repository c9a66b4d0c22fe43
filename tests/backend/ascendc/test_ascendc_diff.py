"""Differential tests: ascend-sim runs the generated AscendC; results equal numpy's.

Tolerances (relative / absolute): float32 1e-5 / 1e-6 for elementwise and row-wise
kernels (the vector unit's Exp/Ln/Sqrt differ from numpy's libm in the last bits; tanh
is composed from Exp), 2e-5 for whole-array sums (different summation order); float16
4e-3 / 4e-3 (one or two half ulps: numpy rounds every step of a composite in half, the
kernels compute composites in float and round once).  Shapes cover one and many blocks,
tiles with tails, rows that are not whole 32-byte blocks, and all run one kernel per
dtype (``dynamic_shape=True``).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_cases import (
    adaptive_avg_pool,
    bilateral_filter,
    checked_gather,
    f64_math,
    gelu,
    half_suite,
    int_suite,
    layernorm,
    make_boxes,
    nms,
    relu,
    residual,
    row_stats,
    scale_rows,
    seed_relu,
    softmax,
    squared_error,
    zoo,
)
from ascendc_kit import STORE, check, float64_device, float64_device_for, run_sim

from pyasc import hybrid
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError

RNG = np.random.default_rng(20240607)
F16 = {"rtol": 4e-3, "atol": 4e-3}


def _rand(shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


@pytest.fixture(scope="module", autouse=True)
def _prefetch():
    """Start every build of this module at once (two compilers in parallel)."""
    x1, x2, x3 = _rand((8,)), _rand((4, 8)), _rand((2, 4, 8))
    h2 = _rand((4, 8), np.float16)
    for fn, args in [(relu, (x1,)), (relu, (x2,)), (gelu, (x2,)),
                     (softmax, (x1,)), (softmax, (x2,)), (softmax, (x3,)),
                     (layernorm, (x2, x1, x1)), (squared_error, (x2, x2)),
                     (half_suite, (h2, h2[0], h2[0], h2, np.float16(1))),
                     (int_suite, (x2.astype(np.int32), x2.astype(np.int32), x2, x2 > 0)),
                     (residual, (x2, x2)),
                     (zoo, (x2, x2, np.float32(1))), (row_stats, (x2,)),
                     (adaptive_avg_pool, (x2, (2, 2))),
                     (checked_gather, (x1, np.zeros(3, np.int64))), (scale_rows, (x2,)),
                     (nms, make_boxes(RNG, 20)),
                     (seed_relu, (_rand((3, 683)),))]:
        STORE.submit(fn, *args)
    with float64_device():  # float64 device code: only where the SoC table allows it
        STORE.submit(f64_math, x1.astype(np.float64))
        STORE.submit(bilateral_filter, _rand((24, 20)))  # float64 by numpy's rules


@pytest.fixture(autouse=True)
def _float64_cases(request):
    """float64-parametrized cases test numpy's semantics, not the float64 policy: they
    run on a SoC configuration whose table allows float64 (test_float64_policy.py
    covers the refusal and the demotion)."""
    with float64_device_for(request):
        yield


SHAPES = [(7,), (1000,), (37, 53), (300, 1000), (1, 2049)]


@pytest.mark.parametrize("shape", SHAPES)
def test_relu(shape):
    x = _rand(shape)
    x.flat[0] = -0.0
    k = check(relu, x)
    assert k.last_counters["blocks"] == max(1, min(48, -(-x.size // 1024)))


def test_seed_relu_static_shape():
    check(seed_relu, _rand((3, 683)))  # a static shape: literal tiling, 2049 = tile tail


@pytest.mark.parametrize("shape", [(1, 5), (37, 53), (200, 1100)])
def test_gelu(shape):
    check(gelu, _rand(shape, scale=3.0))


@pytest.mark.parametrize("shape", [(9,), (37, 53), (6, 5, 24), (100, 4000), (1, 8192)])
def test_softmax(shape):
    check(softmax, _rand(shape, scale=4.0))


@pytest.mark.parametrize("shape", [(37, 53), (1, 8), (64, 1000)])
def test_layernorm(shape):
    c = shape[-1]
    check(layernorm, _rand(shape), _rand((c,)), _rand((c,)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 3), (37, 53), (500, 1000)])
def test_squared_error(shape):
    check(squared_error, _rand(shape), _rand(shape), rtol=2e-5)


@pytest.mark.parametrize("shape", [(3, 7), (33, 47), (64, 1029)])
def test_float16_variants(shape):
    x = _rand(shape, np.float16, 2.0)
    c = shape[-1]
    check(half_suite, x, _rand((c,), np.float16), _rand((c,), np.float16),
          _rand(shape, np.float16), np.float16(0.25), **F16)


def test_adaptive_avg_pool():
    for shape, out in [((24, 20), (5, 3)), ((7, 9), (7, 9)), ((40, 33), (4, 6))]:
        k = check(adaptive_avg_pool, _rand(shape), out, rtol=1e-6)
        # the loops are one pool kernel (test_pool_kernel.py), its units spread over blocks
        assert len(k.last_kernels) == 1 and k.last_counters["Gather_calls"] > 0


def test_bilateral_filter():
    img = RNG.random((24, 20)).astype(np.float32)
    with float64_device():  # its space kernel is float64 (test_float64_policy: E50041)
        k = check(bilateral_filter, img, rtol=1e-5, atol=1e-6)
    assert k.last_counters["blocks"] == 24 - 10  # one block per filtered row


def test_elementwise_zoo():
    x, y = _rand((37, 53), scale=2.0), _rand((37, 53), scale=2.0)
    x[0, :4] = [0.0, -0.0, 1e-30, -5.0]
    check(zoo, x, y, np.float32(0.25), rtol=2e-5, atol=1e-5)


def test_row_stats():
    check(row_stats, _rand((37, 53)), rtol=2e-5, atol=1e-5)
    check(row_stats, _rand((300, 257)), rtol=2e-5, atol=1e-4)


def test_integer_and_boolean_ops():
    a = RNG.integers(-1000, 1000, (37, 53)).astype(np.int32)
    b = RNG.integers(-1000, 1000, (37, 53)).astype(np.int32)
    b[0, :5] = a[0, :5]
    x = _rand((37, 53), scale=100.0)
    check(int_suite, a, b, x, x > 10)


def test_fused_outputs_next_to_whole_array_reductions():
    k = check(residual, _rand((300, 700)), _rand((300, 700)), rtol=2e-5)
    assert len(k.last_launches) == 1


def test_broadcast_decided_at_run_time():
    x = _rand((4, 6))
    check(layernorm, x, _rand((1,)), _rand((6,)), rtol=1e-4, atol=1e-5)


def test_strided_and_in_place_arguments():
    x = _rand((40, 60))
    check(relu, x[:, ::2])
    check(softmax, x.T)


def test_in_place_writes_reach_strided_views():
    base = _rand((6, 10))
    view = base[:, ::2]
    check(scale_rows, view)
    before = base.copy()
    out, _ = run_sim(scale_rows, view)
    assert out is view and np.shares_memory(out, base)
    np.testing.assert_array_equal(base[:, 1::2], before[:, 1::2])  # untouched columns


@pytest.mark.parametrize("n", [20, 300])
def test_nms(n):
    k = check(nms, *make_boxes(np.random.default_rng(n), n))
    assert [type(x).__name__ for x in k.ascend.kernels] == [
        "ScalarKernel", "VectorKernel", "ScalarKernel"]  # argsort, areas, the greedy loop


def test_double_precision_scalar_math():
    x = np.concatenate([RNG.standard_normal(40) * 5, [0.0, -0.0, 1e-310, 700.0, -740.0,
                                                     0.5, -2.5, 1e-9]])
    with float64_device():  # the double helpers, on a SoC configuration with float64
        check(f64_math, x, rtol=1e-13, atol=1e-300)


def test_scalar_kernel_bounds_check():
    x = _rand((10,))
    check(checked_gather, x, np.array([0, 9, -1, 3], dtype=np.int64))
    with pytest.raises(IndexError):
        run_sim(checked_gather, x, np.array([1, 10], dtype=np.int64))


@hybrid
def floor_divide_rows(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):  # a loop with array work: scalar AscendC
        out[i] = x[i] // y[i]
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_floor_division_is_numpys(dtype):
    # the rounded quotient can land on an integer the exact quotient is below:
    # 1 // (1/-3) is -4 in numpy; zeros keep the sign of a / b
    x = np.array([[1.0, -1.0, 7.0, 0.5, -0.0], [2.0, 1.0, -7.0, 0.0, 3.0]], dtype)
    y = np.array([[1 / -3, 1 / 3, 0.1, 3.0, 2.0], [0.2, 0.0, 2.0, -5.0, np.inf]], dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        check(floor_divide_rows, x, y, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_floor_division_of_any_magnitude_is_numpys(dtype):
    # quotients of 2^62 and more used to go through int64 (wrong: fuzz campaign); numpy's
    # npy_divmod works in T's precision at any size, half in float
    rng = np.random.default_rng(7)
    info = np.finfo(dtype)
    big = np.array([info.max, info.max / 3, 2.0 ** 70 if dtype != "float16" else 6e4,
                    -(2.0 ** 63) if dtype != "float16" else -3e4, 1e30 if dtype == "float64"
                    else 1e4], dtype)
    small = np.array([0.1, -3.0, 7e-3, 0.3, -1e-3], dtype)
    signs = rng.choice([-1.0, 1.0], 40)
    mags = 10.0 ** rng.uniform(-3, np.log10(float(info.max)) - 1, 40)
    x = np.concatenate([big, small, (signs * mags).astype(dtype)]).reshape(-1, 5)
    y = np.concatenate([small, big, (rng.choice([-1.0, 1.0], 40) *
                         10.0 ** rng.uniform(-3, 3, 40)).astype(dtype)]).reshape(-1, 5)
    with np.errstate(all="ignore"):
        check(floor_divide_rows, x, y, rtol=0, atol=0)


@hybrid(dynamic_shape=True)
def strided_and_direct(a):
    out = np.zeros_like(a)
    out[::2] *= 0.0
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = 0.0
        out[::2] += 2.0  # the same kernel writes out directly and through a view
    return out


@hybrid
def strided_only(a):
    out = a.copy()
    for i in range(3):
        out[::2] += out[::2] * i
    return out


def test_one_array_through_a_copied_view_and_directly_is_refused():
    # a strided view reaches the kernel as a contiguous copy; with the array itself
    # also in the kernel the writes through one would not reach the other
    with pytest.raises(DeviceUnsupportedError, match="strided view"):
        run_sim(strided_and_direct, np.arange(7.0, dtype=np.float32))
    check(strided_only, np.arange(7.0, dtype=np.float32))


@hybrid
def column_minus_row_means(a):
    return a[:, :1] - a.mean(axis=1)  # (R, 1) - (R,): the means run along the columns


@hybrid
def row_sums_plus_column(a):
    return a.sum(axis=1) + a[:, 1:2] * 2.0


@pytest.mark.parametrize("fn", [column_minus_row_means, row_sums_plus_column])
def test_a_reduced_row_broadcast_against_a_column(fn):
    # fuzz program 3493 (seed 1): a reduction without keepdims, (R,), against a column
    # (R, 1) was classified as a per-row value of a rows kernel (E50050 from a rank
    # mismatch; with the right shapes it would have paired row i with mean i, where
    # numpy pairs column j with mean j); such a kernel is not vectorized now
    for shape in ((7, 7), (5, 9), (1, 6)):
        a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        check(fn, a)
