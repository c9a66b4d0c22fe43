"""Pooling written with loops runs as one vector kernel on ascend-sim (``pool_loops``).

A loop nest ``out[..., i, j] = reduce(x[..., rows(i), cols(j)])`` with window bounds
known only at run time (the seed's adaptive pool, ``dynamic_shape=True``) becomes a pool
kernel: the host computes the window tables, the kernel sums the window rows with vector
``Add``/``Max`` and the columns with one ``Gather`` per tap.  Checked: the kernel that
runs (the pool kernel, not the scalar twin), one compilation for several shapes (odd
sizes, overlapping windows), GM traffic within 1.2x the minimum (input read once, output
written once; the window tables included), no scalar access to the image, and the
result equal to ``interpret`` (max/min exactly; sums and means to float32 rounding).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.codegen import lower_program
from pyasc.backend.ascendc.pool_kernel import PoolKernel
from pyasc.backend.ascendc.scalar_plan import ScalarKernel
from pyasc.ops import adaptive_avg_pool2d, avg_pool2d, max_pool2d

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from adaptive_pool import adaptive_pool  # noqa: E402

RNG = np.random.default_rng(1919)


def _sim(fn, dynamic: bool = True):
    return hybrid(fn.__wrapped__ if hasattr(fn, "__wrapped__") else fn, target="ascend-sim",
                  dynamic_shape=dynamic)


def _interpret(fn, *args):
    return hybrid(fn.__wrapped__ if hasattr(fn, "__wrapped__") else fn,
                  target="interpret")(*args)


def _ran_pool_kernel(k) -> bool:
    """The launches were the pool kernel alone (not its scalar twin), and it read no GM
    with the scalar unit (its window tables come to UB by DMA: issue 19)."""
    kinds = {kk.name: type(kk) for kk in k.ascend.kernels}
    return [kinds[name] for name, _ in k.last_kernels] == [PoolKernel] and \
        k.last_counters["gm_scalar_read_bytes"] == 0


def _gm_bytes(k) -> int:
    c = k.last_counters
    return sum(c.get(n, 0) for n in ("gm_to_ub_bytes", "ub_to_gm_bytes",
                                     "gm_scalar_read_bytes", "gm_scalar_write_bytes"))


def maxpool_loops(x, k, s, p):
    h, w = x.shape[-2:]
    oh = (h + 2 * p - k) // s + 1
    ow = (w + 2 * p - k) // s + 1
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0 = max(i * s - p, 0)
            c0 = max(j * s - p, 0)
            out[..., i, j] = x[..., r0:min(i * s - p + k, h),
                               c0:min(j * s - p + k, w)].max(axis=(-2, -1))
    return out


def minpool_rows(x, k, s):
    oh = (x.shape[0] - k) // s + 1
    ow = (x.shape[1] - k) // s + 1
    out = np.zeros((oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[i, j] = np.min(x[i * s:i * s + k, j * s:j * s + k])
    return out


def avgpool_fixed_divisor(x, k, s):
    """An average pool dividing by ``k * k`` (count_include_pad's divisor): a scalar of
    the host's table, not the window's own count."""
    h, w = x.shape[-2:]
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[..., i, j] = x[..., i * s:i * s + k, j * s:j * s + k].sum(axis=(-2, -1)) / (k * k)
    return out


def scaled_sum(x, oh, ow):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[..., (i * h) // oh:((i + 1) * h + oh - 1) // oh,
                    (j * w) // ow:((j + 1) * w + ow - 1) // ow]
            out[..., i, j] = np.sum(win, axis=(-2, -1)) * np.float32(i + 2 * j + 1)
    return out


def strided_rows(x, oh):
    """Windows with a step of 2 along the rows: the host's checks send it to the
    scalar twin."""
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, w // 2), dtype=x.dtype)
    for i in range(oh):
        for j in range(w // 2):
            out[..., i, j] = x[..., i:i + 3:2, 2 * j:2 * j + 2].max(axis=(-2, -1))
    return out


def diagonal_windows(x):
    """The rows of window (i, j) depend on j: not separable, stays a scalar kernel."""
    n = x.shape[-1] - 2
    out = np.zeros(x.shape[:-2] + (n, n), dtype=x.dtype)
    for i in range(n):
        for j in range(n):
            out[..., i, j] = x[..., j:j + 2, i:i + 2].sum(axis=(-2, -1))
    return out


def test_adaptive_pool_example_one_kernel_for_every_shape():
    sim = _sim(adaptive_pool)
    for shape in [(2, 3, 14, 14), (1, 4, 28, 21), (3, 2, 15, 17), (2, 8, 30, 45),
                  (1, 2, 7, 7)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        got = sim(x, (7, 7))
        np.testing.assert_allclose(got, _interpret(adaptive_pool, x, (7, 7)), rtol=1e-5,
                                   atol=1e-6)
        k = sim.kernel(x, (7, 7))
        assert _ran_pool_kernel(k), k.last_kernels
        minimum = x.nbytes + got.nbytes
        if x.size >= 4096:  # tiny images: the window tables per block dominate
            assert _gm_bytes(k) <= 1.2 * minimum, (shape, k.last_counters)
        assert k.last_counters["Gather_calls"] > 0
    assert len(sim.specializations) == 1


def test_pool_kernel_reads_no_image_element_with_the_scalar_unit():
    x = RNG.standard_normal((2, 8, 30, 45)).astype(np.float32)
    src = _sim(adaptive_pool).ascendc(x, (7, 7))
    body = src.split("void adaptive_pool_0(")[1].split("\n}\n")[0]
    assert "xGm.GetValue" not in body and "outGm.SetValue" not in body
    assert "Gather(" in body and "DataCopyPad(in, xGm" in body


@pytest.mark.parametrize("shape,k,s,p", [((2, 3, 15, 17), 3, 2, 1), ((1, 4, 28, 21), 2, 2, 0),
                                         ((3, 2, 9, 11), 3, 1, 1), ((4, 7, 7), 3, 2, 0),
                                         ((2, 16, 33, 31), 5, 3, 2)])
def test_max_pool_loops_stride_kernel_padding(shape, k, s, p):
    x = RNG.standard_normal(shape).astype(np.float32)
    sim = _sim(maxpool_loops)
    got = sim(x, k, s, p)
    np.testing.assert_array_equal(got, _interpret(maxpool_loops, x, k, s, p))
    kern = sim.kernel(x, k, s, p)
    assert _ran_pool_kernel(kern)
    if x.size >= 4096:
        assert _gm_bytes(kern) <= 1.2 * (x.nbytes + got.nbytes), kern.last_counters


def test_max_pool_loops_half_and_static_min_pool():
    x = RNG.standard_normal((3, 5, 19, 23)).astype(np.float16)
    sim = _sim(maxpool_loops)
    np.testing.assert_array_equal(sim(x, 3, 2, 1), _interpret(maxpool_loops, x, 3, 2, 1))
    assert _ran_pool_kernel(sim.kernel(x, 3, 2, 1))
    y = RNG.standard_normal((37, 29)).astype(np.float32)
    sim = _sim(minpool_rows, dynamic=False)
    np.testing.assert_array_equal(sim(y, 4, 3), _interpret(minpool_rows, y, 4, 3))
    assert _ran_pool_kernel(sim.kernel(y, 4, 3))


def test_avg_pool_divisor_table_and_scaled_sums():
    x = RNG.standard_normal((2, 6, 21, 26)).astype(np.float32)
    sim = _sim(avgpool_fixed_divisor)
    np.testing.assert_allclose(sim(x, 3, 2), _interpret(avgpool_fixed_divisor, x, 3, 2),
                               rtol=1e-5, atol=1e-6)
    assert _ran_pool_kernel(sim.kernel(x, 3, 2))
    sim = _sim(scaled_sum)
    np.testing.assert_allclose(sim(x, 5, 4), _interpret(scaled_sum, x, 5, 4), rtol=1e-5,
                               atol=1e-5)
    assert _ran_pool_kernel(sim.kernel(x, 5, 4))


def test_ops_adaptive_avg_pool2d_is_a_pool_kernel():
    x = RNG.standard_normal((2, 4, 15, 17)).astype(np.float32)
    sim = _sim(adaptive_avg_pool2d, dynamic=False)
    np.testing.assert_allclose(sim(x, (5, 4)), _interpret(adaptive_avg_pool2d, x, (5, 4)),
                               rtol=1e-5, atol=1e-6)
    k = sim.kernel(x, (5, 4))
    assert [type(kk) for kk in k.ascend.kernels][0] is PoolKernel
    assert _ran_pool_kernel(k)


def test_geometry_outside_the_kernel_runs_the_scalar_twin():
    x = RNG.standard_normal((2, 3, 9, 12)).astype(np.float32)
    sim = _sim(strided_rows)
    np.testing.assert_array_equal(sim(x, 3), _interpret(strided_rows, x, 3))
    k = sim.kernel(x, 3)
    kinds = {kk.name: type(kk) for kk in k.ascend.kernels}
    assert [kinds[n] for n, _ in k.last_kernels] == [ScalarKernel]
    assert PoolKernel in kinds.values()


def test_windows_not_separable_stay_scalar():
    x = RNG.standard_normal((2, 9, 9)).astype(np.float32)
    prog = _sim(diagonal_windows, dynamic=False).specialize(x)
    kinds = [type(k) for k in lower_program(prog).kernels]
    assert PoolKernel not in kinds
    np.testing.assert_allclose(_sim(diagonal_windows, dynamic=False)(x),
                               _interpret(diagonal_windows, x), rtol=1e-5, atol=1e-6)


def max_pool_op(x, k, s, p, ceil):
    return max_pool2d(x, k, s, p, 1, ceil)


MAXPOOL_OPS = [((2, 3, 15, 17), (3, 2, 1, False)), ((3, 7, 10), (2, 2, 0, False)),
               ((1, 2, 9, 8), ((3, 2), (2, 1), (1, 0), True)),
               ((2, 16, 40, 33), (3, 2, 1, False))]


@pytest.mark.parametrize("shape,args", MAXPOOL_OPS)
def test_ops_max_pool2d_taps_are_a_pool_kernel(shape, args):
    """``pyasc.ops.max_pool2d`` (one strided slice per tap folded with np.maximum) is a
    pool kernel over the padded input (static shapes; the padding is the host's)."""
    x = RNG.standard_normal(shape).astype(np.float32)
    sim = _sim(max_pool_op, dynamic=False)
    got = sim(x, *args)
    np.testing.assert_array_equal(got, _interpret(max_pool_op, x, *args))
    k = sim.kernel(x, *args)
    assert _ran_pool_kernel(k), k.last_kernels
    if x.size >= 4096:
        pad = args[2]
        padded = x.nbytes // (shape[-2] * shape[-1]) * (shape[-2] + 2 * pad) * \
            (shape[-1] + 2 * pad)
        assert _gm_bytes(k) <= 1.2 * (padded + got.nbytes), k.last_counters


def max_pool_any(x, k, s, p, d, ceil):
    return max_pool2d(x, k, s, p, d, ceil)


def avg_pool_any(x, k, s, p, ceil, include_pad):
    return avg_pool2d(x, k, s, p, ceil, include_pad)


def _kinds(k) -> list[type]:
    kinds = {kk.name: type(kk) for kk in k.ascend.kernels}
    return [kinds[name] for name, _ in k.last_kernels]


DILATED = [((1, 2, 9, 8), (2, 2, 0, 2, False)), ((2, 3, 15, 17), (3, 2, 1, 2, False)),
           ((2, 8, 32, 32), (3, None, 0, 2, False)),
           ((1, 2, 11, 9), ((3, 2), (2, 1), (1, 0), (2, 3), True)),
           ((3, 13, 14), (2, 3, 1, (3, 1), True))]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("shape,args", DILATED)
def test_ops_max_pool2d_with_dilation_is_a_pool_kernel(shape, args, dynamic):
    """Taps ``d`` apart are a window read every ``d``-th row and column: one pool
    kernel (it was a scalar kernel with no DataCopy), equal to interpret."""
    x = RNG.standard_normal(shape).astype(np.float32)
    sim = _sim(max_pool_any, dynamic=dynamic)
    got = sim(x, *args)
    np.testing.assert_array_equal(got, _interpret(max_pool_any, x, *args))
    assert _ran_pool_kernel(sim.kernel(x, *args))


def test_ops_max_pool2d_dynamic_shape_one_kernel_for_every_shape():
    """With ``dynamic_shape`` ``max_pool2d`` compiled (it was refused with E50010: the
    padded copy and the carried array were arrays of run-time size bound in a branch
    and a loop) and runs as the pool kernel, one specialization for every shape."""
    sim = _sim(max_pool_any)
    for shape, args in [((2, 8, 32, 32), (2, None, 0, 1, False)),
                        ((2, 3, 15, 17), (2, None, 0, 1, False)),
                        ((1, 5, 9, 31), (2, None, 0, 1, False))]:
        x = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(sim(x, *args), _interpret(max_pool_any, x, *args))
        k = sim.kernel(x, *args)
        assert _ran_pool_kernel(k)
        if x.size >= 4096:
            assert _gm_bytes(k) <= 1.2 * (x.nbytes + x.nbytes // 4), k.last_counters
    assert len(sim.specializations) == 1


def test_ops_max_pool2d_float16_dilated_dynamic():
    x = RNG.standard_normal((2, 3, 15, 17)).astype(np.float16)
    args = (3, 2, 1, 2, True)
    sim = _sim(max_pool_any)
    np.testing.assert_array_equal(sim(x, *args), _interpret(max_pool_any, x, *args))
    assert _ran_pool_kernel(sim.kernel(x, *args))


AVG = [((2, 8, 32, 32), (2, None, 0, False, True)), ((2, 3, 15, 17), (3, 2, 1, False, True)),
       ((2, 3, 15, 17), (3, 2, 1, True, False)), ((1, 2, 10, 7), ((3, 2), (2, 1), (1, 0), True, True)),
       ((3, 9, 8), (3, 1, 1, False, False))]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("shape,args", AVG)
def test_ops_avg_pool2d_is_pool_kernels_with_the_division_fused(shape, args, dynamic):
    """``avg_pool2d``: the divisor's taps over a buffer of ones and the sums' taps are
    pool kernels, the division by the divisor is the second kernel's (it was two scalar
    loops and a scalar division), equal to interpret to float32 rounding."""
    x = RNG.standard_normal(shape).astype(np.float32)
    sim = _sim(avg_pool_any, dynamic=dynamic)
    got = sim(x, *args)
    np.testing.assert_allclose(got, _interpret(avg_pool_any, x, *args), rtol=1e-5, atol=1e-6)
    k = sim.kernel(x, *args)
    assert _kinds(k) == [PoolKernel, PoolKernel], k.last_kernels
    assert k.last_counters["gm_scalar_write_bytes"] == 0, k.last_counters
    assert k.last_counters["gm_scalar_read_bytes"] == 0, k.last_counters


def test_avg_pool2d_float16_sums_in_float32():
    x = RNG.standard_normal((2, 3, 15, 17)).astype(np.float16)
    args = (3, 2, 1, True, False)
    sim = _sim(avg_pool_any)
    got = sim(x, *args)
    np.testing.assert_allclose(got.astype(np.float32), _interpret(avg_pool_any, x, *args).astype(
        np.float32), rtol=1e-3, atol=1e-3)
    assert PoolKernel in _kinds(sim.kernel(x, *args))


def taps_sum_from_ones(x):
    """Sums of 2x2 taps folded in place into ones (not the sum's neutral element)."""
    oh, ow = x.shape[0] // 2, x.shape[1] // 2
    acc = np.ones((oh, ow), dtype=x.dtype)
    for ti in range(2):
        for tj in range(2):
            acc += x[ti:ti + 2 * oh:2, tj:tj + 2 * ow:2]
    return acc


def taps_max_dilated_loops(x):
    """A user's dilated max pool by taps, in place: 3x3 taps two apart, stride 1."""
    oh, ow = x.shape[-2] - 4, x.shape[-1] - 4
    acc = np.full(x.shape[:-2] + (oh, ow), -np.inf, dtype=x.dtype)
    for ti in range(3):
        for tj in range(3):
            acc[...] = np.maximum(acc, x[..., 2 * ti:2 * ti + oh, 2 * tj:2 * tj + ow])
    return acc


def test_in_place_taps_need_the_neutral_fill():
    """An accumulator starting at ones is not a pool (the kernel ignores the start):
    it stays scalar and adds the ones."""
    x = RNG.standard_normal((9, 11)).astype(np.float32)
    prog = _sim(taps_sum_from_ones, dynamic=False).specialize(x)
    assert PoolKernel not in [type(k) for k in lower_program(prog).kernels]
    np.testing.assert_allclose(_sim(taps_sum_from_ones)(x), taps_sum_from_ones(x), rtol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True])
def test_user_in_place_dilated_taps_are_a_pool_kernel(dynamic):
    x = RNG.standard_normal((2, 3, 13, 18)).astype(np.float32)
    sim = _sim(taps_max_dilated_loops, dynamic=dynamic)
    np.testing.assert_array_equal(sim(x), taps_max_dilated_loops(x))
    assert _ran_pool_kernel(sim.kernel(x))


def test_avg_pool2d_rows_past_the_kernel_run_the_twin_with_the_division():
    """Rows wider than the pool kernel's UB row: the host launches the scalar twin of
    the sums' nest *and* the division fused into the kernel (the result still divided)."""
    x = RNG.standard_normal((2, 3, 4100)).astype(np.float32)
    args = (2, None, 0, False, True)
    sim = _sim(avg_pool_any)
    got = sim(x, *args)
    np.testing.assert_allclose(got, _interpret(avg_pool_any, x, *args), rtol=1e-5, atol=1e-6)
    assert PoolKernel not in _kinds(sim.kernel(x, *args))
