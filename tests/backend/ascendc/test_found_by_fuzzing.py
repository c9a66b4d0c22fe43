"""AscendC code generation bugs the fuzzer found (``tests/differential/campaign``),
each reduced to a small program run on ascend-sim against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check, float64_device_for, run_sim

from pyasc import hybrid


@pytest.fixture(autouse=True)
def _float64_on_a_float64_soc(request):
    # float64 cases test the double code paths: on a SoC whose table allowed float64
    # (no real one does: docs/ascendc-backend.md#float64, ascendc_kit.float64_device)
    with float64_device_for(request, "test_subtracting_a_negative_constant_compiles"):
        yield


@hybrid
def minus_negative_constants(x, y):
    x -= -1  # the vector unit's x - s is Adds(x, -s): `-` before `-1.0f` read as `--`
    return x, y - (-2.5), np.negative(-y)


@hybrid
def minus_negative_in_a_loop(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):  # a scalar kernel
        out[i] = x[i] - (-3) - -x[i]
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "int32"])
def test_subtracting_a_negative_constant_compiles(dtype):
    x = np.arange(-6, 6).astype(dtype)
    check(minus_negative_constants, x.copy(), x[::-1].copy(), rtol=0, atol=0)
    check(minus_negative_in_a_loop, x, rtol=0, atol=0)


@hybrid
def divmod_each(a, b):
    q, r = np.zeros_like(a), np.zeros_like(a)
    for i in range(a.shape[0]):  # a scalar kernel
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
    return q, r


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_floor_division_and_remainder_by_an_infinity(dtype):
    # numpy: 3.5 % inf == 3.5, -3.5 % inf == inf, -3.5 // inf == -1; the device's
    # a - floor(a / b) * b gave NaN (0 * inf) and -0.0
    a = np.array([3.5, -3.5, 0.0, -0.0, 3.5, -3.5, 0.0, -0.0, 7.0, -7.0, np.inf, np.nan])
    b = np.array([np.inf] * 4 + [-np.inf] * 4 + [2.0, 2.0, 2.0, np.inf])
    with np.errstate(all="ignore"):
        check(divmod_each, a.astype(dtype), b.astype(dtype), rtol=0, atol=0)


def _same_with_zero_signs(got, want):  # noqa: ANN001, ANN202
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)), (got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_a_zero_remainder_takes_the_divisor_sign(dtype):
    # numpy: 0.0 % -0.5 and 2.0 % -0.5 are -0.0 (npy_divmod copies b's sign onto a zero
    # remainder); the device's a - floor(a / b) * b gave +0.0 (0 - (-0.0 * -0.5) == 0.0).
    # Found as 0000015/0000170: `i % a` and `-x.astype(np.int64) % s` with a negative s.
    a = np.array([0.0, -0.0, 2.0, -2.0, 1.5, -1.5, 3.0, 0.0, 2.0, -2.0, 0.75, -0.75])
    b = np.array([-0.5] * 6 + [1.5, 0.5, 0.5, 0.5, -0.25, 0.25])
    a, b = a.astype(dtype), b.astype(dtype)
    got, _ = run_sim(divmod_each, a.copy(), b.copy())
    with np.errstate(all="ignore"):
        want = divmod_each.__wrapped__(a.copy(), b.copy())
    for g, w in zip(got, want, strict=True):
        _same_with_zero_signs(g, w)


@hybrid
def remainder_each(a, b):
    r = np.zeros_like(a)
    for i in range(a.shape[0]):  # a scalar kernel
        r[i] = a[i] % b[i]
    return r


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_a_float_remainder_is_numpy_s_bit_for_bit(dtype):
    # numpy's remainder is fmod-based, exact before its one rounding: a - floor(a/b) * b
    # rounded twice (0.7 % 0.1 gave 0.09999999999999987, numpy 0.09999999999999992) and
    # was far off for quotients beyond the float's integers (1 % 1e-30 in float32)
    rng = np.random.default_rng(7)
    info = np.finfo(dtype)
    mag = np.exp2(rng.uniform(np.log2(info.smallest_subnormal), np.log2(info.max), 3000))
    x = (mag * rng.choice([-1.0, 1.0], mag.size)).astype(dtype)
    a, b = x[:1500], x[1500:]
    a = np.concatenate([a, np.array([0.7, -0.7, 5.3, 1.0, 1e10 + 0.3, 0.0, -0.0], dtype)])
    b = np.concatenate([b, np.array([0.1, 0.1, -0.7, 1e-30, 0.3, -3.0, 3.0], dtype)])
    got = run_sim(remainder_each, a.copy(), b.copy())[0]
    with np.errstate(all="ignore"):
        want = remainder_each.__wrapped__(a.copy(), b.copy())
    _same_with_zero_signs(got, want)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64", "float64", "float32",
                                   "float16", "int16", "int32", "bool"])
def test_a_kernel_result_that_is_one_of_its_inputs_compiles(dtype):
    # The vector kernel copied such a result with Muls(x, 1), an API dav-c220 takes only
    # on half/float/int16/int32: uint8, int64 and float64 did not compile (0000119,
    # 0000189, 0000208).  It is a DataCopy now, and no call is emitted on a dtype its
    # API does not take (the kernel falls back to scalar code instead).
    x = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    check(first_row_broadcast_transposed, x, rtol=0, atol=0)


@hybrid(dynamic_shape=True)
def first_row_broadcast_transposed(x):
    return np.broadcast_to(x[0:1], x.shape).T


@hybrid(dynamic_shape=True)
def gram_rows_in_a_loop(x):
    out = x.copy()
    for i in range(x.shape[0]):  # a scalar kernel; each product's temporaries in its arena
        out[i] = (out.T @ out)[0] + (x.T @ out).sum(axis=1)
    return out


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "int64"])
def test_a_small_matmul_in_a_loop_fits_the_kernel_workspace(dtype):
    # The tiled matmul packed b into a panel of the CPU-tuned bound (1 MiB) whatever the
    # operands' sizes: a 2x2 product in a loop body took the whole per-block GM workspace
    # of a scalar kernel (1 MiB), so any other temporary raised E50003 (found as 8075 in a
    # look-ahead run).  The panel is now at most the product's own columns and depth.
    x = (np.arange(14).reshape(7, 2) % 3 - 1).astype(dtype)
    check(gram_rows_in_a_loop, x, rtol=1e-6, atol=0)


@hybrid
def narrow_scalar_arithmetic(a, s, t):
    # s, t: narrow integer scalars computed on in the kernel (C++ promotes them to int)
    return -s * a, (s + t) * a, (s * t) * a, (s - t) * a, np.argmin(-s * np.abs(a))


@hybrid
def narrow_scalar_loop(x, s, t):
    out = np.zeros(x.shape, np.int64)
    for i in range(x.shape[0]):  # a scalar kernel
        out[i] = (-s) + (s * t) + (t - s) + x[i]
    return out


@pytest.mark.parametrize("dtype,s,t", [("uint8", 8, 250), ("uint16", 300, 65000),
                                       ("int8", -128, 100), ("int16", 300, -32000)])
def test_narrow_integer_scalars_wrap_as_in_numpy(dtype, s, t):
    # Found as 0000872 (campaign seed 7): argmin(-b * abs(a)) with b a uint8 scalar gave
    # the index of the largest |a|: `-(b_)` in C++ is int -8, numpy's -b is uint8 248
    a = np.linspace(-3, 3, 301).astype(np.float32)[::-1].copy()
    s, t = np.dtype(dtype).type(s), np.dtype(dtype).type(t)
    with np.errstate(over="ignore"):
        check(narrow_scalar_arithmetic, a, s, t, rtol=0, atol=0)
        check(narrow_scalar_loop, np.arange(7, dtype=np.int64), s, t, rtol=0, atol=0)


@hybrid
def sums_of_empty_rows(x):
    # campaign seed 8 case 2176: tanh(a[1::2]).sum(axis=-1, keepdims=True) of a (1,) array
    # was NaN: the host launched nothing for rows of no columns, leaving the row results
    # unwritten (and the kernel's pitch would have divided by zero)
    return (np.tanh(x[..., 1::2]).sum(axis=-1, keepdims=True), x.sum(axis=-1) * 2 + 1,
            np.exp(x).sum(axis=-1))


@hybrid(dynamic_shape=True)
def sums_of_empty_rows_dynamic(x):
    return x.sum(axis=-1) * 2 + 1, np.tanh(x).sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(1,), (0,), (3, 0), (3, 1), (2, 4, 0), (5, 7)])
def test_row_sums_over_no_columns_are_zero(shape):
    x = np.full(shape, 2.0, np.float32)
    check(sums_of_empty_rows, x, rtol=1e-6, atol=1e-6)
    check(sums_of_empty_rows_dynamic, x, rtol=1e-6, atol=1e-6)


@hybrid
def maxes_of_rows(x):
    return x.max(axis=-1), np.tanh(x).sum(axis=-1)


@hybrid(dynamic_shape=True)
def mins_of_rows_dynamic(x):
    # dynamic rows: the host chooses between the rows kernel and its long-rows twin
    return np.exp(x).min(axis=-1, keepdims=True) + 1


@hybrid
def one_row_minus_its_max(x):
    return x - x.max(keepdims=True)


@pytest.mark.parametrize("fn, shape", [
    (maxes_of_rows, (3, 0)), (maxes_of_rows, (0, 0)), (maxes_of_rows, (2, 4, 0)),
    (mins_of_rows_dynamic, (3, 0)), (mins_of_rows_dynamic, (2, 3, 0)),
    (one_row_minus_its_max, (0,))])
def test_max_min_of_rows_with_no_columns_raise_like_numpy(fn, shape):
    # was 0 on ascend-sim (the kernel's identity for rows of no columns) where numpy
    # raises ValueError: max/min have no identity; the host now checks before launching
    x = np.ones(shape, np.float32)
    with pytest.raises(ValueError, match="zero-size array to reduction operation") as want:
        fn.__wrapped__(x)
    with pytest.raises(ValueError, match=str(want.value)) as got:
        run_sim(fn, x)
    assert "E50002" in str(got.value)


@pytest.mark.parametrize("shape", [(0, 5), (3, 1), (4, 9)])
def test_max_min_of_rows_with_columns_still_run(shape):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    check(maxes_of_rows, x)
    check(mins_of_rows_dynamic, x)


@hybrid
def bool_row_broadcasts(x, y):
    # a bool row (bytes in GM) broadcast over rows was materialized into a bit-mask
    # buffer (an eighth of the bytes): the row copies overran it in UB (memory corruption
    # on an NPU), and its bytes would have been read as mask bits (found by the numpy2
    # helper through np.meshgrid of bools)
    row = x[0].reshape(1, x.shape[1])
    return np.broadcast_to(row, y.shape), row & y, np.where(row, y, ~y)


@pytest.mark.parametrize("n", [5, 32, 33, 70])
def test_bool_rows_broadcast_as_bytes(n):
    rng = np.random.default_rng(n)
    x, y = rng.random((2, n)) < 0.5, rng.random((9, n)) < 0.5
    check(bool_row_broadcasts, x, y, rtol=0, atol=0)


@hybrid
def rows_minus_a_row(x, w):
    return (x - w).sum(axis=-1) + 1


@pytest.mark.parametrize("shape", [(3, 0), (4, 5)])
def test_a_row_operand_of_empty_rows_is_not_copied(shape):
    # rows of no columns launch the kernel (their sums are written), so its one-row
    # operand must not be copied with a DMA of 0 bytes
    x, w = np.ones(shape, np.float32), np.ones(shape[-1], np.float32)
    check(rows_minus_a_row, x, w)
    assert "if (cols > 0 && cols * sizeof(float) % 32 == 0)" in rows_minus_a_row.ascendc(x, w)


@hybrid(dynamic_shape=True)
def independent_dynamic_arrays(a):
    # campaign seed 8 case 6992: the grouping fallback put np.exp(out[::2]) and the fill
    # behind out.any() into one kernel; both typed (?,), the planner took them for one
    # space and the host's broadcast check rejected sizes 4 and 7 (E50002) that numpy,
    # which never relates them, accepts
    out = np.zeros_like(a)
    return np.exp(out[::2]), out.any(), np.tanh(a[1:]) * 2


@pytest.mark.parametrize("shape", [(7,), (1,), (6, 3), (5, 1)])
def test_independent_arrays_of_run_time_sizes_get_their_own_kernels(shape):
    check(independent_dynamic_arrays, np.linspace(-1, 1, np.prod(shape)).reshape(shape)
          .astype(np.float32))
