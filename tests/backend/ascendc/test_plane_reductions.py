"""Reductions over a middle axis are column reductions of each plane (``cols`` schedule).

``x.sum(axis=1)`` of ``(B, N, D)`` (attention-style pooling over tokens), ``axis=-2``,
``axis=1`` of ``(B, N, H, W)`` (columns ``H * W``) and ``axis=0`` of ``(N, H, W)`` were
scalar kernels.  Each must now be one ``cols`` kernel reading ``x`` once per reduction
level with no scalar GM access, and equal numpy: float32 sums, means and variances bit
for bit where numpy adds the rows in order too (every ``D > 1``: numpy's pairwise
summation runs along the contiguous axis only), float16 against the float32
computation (the kernel accumulates in float32), int32 max/min exactly; odd sizes, more
planes than cores, rows wider than a tile, views, run-time shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import assert_close, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(20261205)


def mid_sum(x):
    return x.sum(axis=1)


def mid_max(x):
    return x.max(axis=-2)


def mid_min_keep(x):
    return np.min(x, axis=1, keepdims=True)


def mid_mean(x):
    return x.mean(axis=1)


def mid_var(x):
    return x.var(axis=1)


def center(x):
    return x - x.mean(axis=1, keepdims=True)


def pool_scale(x, w):
    return x.mean(axis=1, keepdims=True) * w


def sum0(x):
    return x.sum(axis=0)


def minus_squeezed(x):
    return x - x.mean(axis=1)


FLOAT_FNS = [mid_sum, mid_max, mid_min_keep, mid_mean, mid_var, center]
STATIC = {f.__name__: hybrid(f) for f in [*FLOAT_FNS, pool_scale]}
DYNAMIC = {f.__name__: hybrid(f, dynamic_shape=True) for f in FLOAT_FNS}
SHAPES = [(4, 33, 17), (3, 1, 5), (1, 7, 9), (50, 9, 13), (2, 7, 5000), (3, 100, 1),
          (3, 5, 6, 7), (2, 3, 40, 9)]
READS = {"mid_var": 2, "center": 2}   # passes over x: the mean first, then x - mean


def _x(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-10**6, 10**6, shape).astype(dtype)
    return (RNG.standard_normal(shape) * 2).astype(dtype)


def _check(fn, x, *rest):
    got, k = run_sim(fn, x, *rest)
    kinds = {n.name: getattr(n, "schedule", None) for n in k.ascend.kernels}
    assert [kinds[n] for n, _ in k.last_kernels] == ["cols"], fn.__name__
    assert k.last_counters["gm_scalar_read_bytes"] == 0
    assert k.last_counters["gm_scalar_write_bytes"] == 0
    reads = READS.get(fn.__name__, 1)
    # a row operand is read once per plane (the host broadcasts (D,) to (B, 1, D))
    rows = sum(r.nbytes for r in rest) * x.shape[0]
    assert k.last_counters["gm_to_ub_bytes"] == reads * x.nbytes + rows, fn.__name__
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    want = np.asarray(fn.__wrapped__(wide, *rest)).astype(
        np.asarray(fn.__wrapped__(x, *rest)).dtype)
    where = f"{fn.__name__}{x.shape} {x.dtype}"
    if x.dtype == np.float16:
        assert_close(got, want, 4e-3, 4e-3, where)
    elif x.shape[-1] == 1 and x.dtype == np.float32:  # numpy adds a contiguous axis pairwise
        assert_close(got, want, 1e-5, 1e-5 * x.shape[-2], where)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape, where
        assert np.array_equal(got, want), where
    return k


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", [f.__name__ for f in FLOAT_FNS])
def test_middle_axis_dynamic(name, dtype):
    """One build per function and dtype serves every size, rank 3 and 4."""
    for shape in SHAPES:
        _check(DYNAMIC[name], _x(shape, dtype))


@pytest.mark.parametrize("name", [f.__name__ for f in FLOAT_FNS])
def test_middle_axis_static(name):
    for shape in [(4, 33, 17), (50, 9, 13), (3, 5, 6, 7)]:
        _check(STATIC[name], _x(shape, np.float32))


@pytest.mark.parametrize("name", ["mid_max", "mid_min_keep"])
def test_int32_max_min(name):
    for shape in [(5, 9, 13), (3, 1, 8), (2, 3, 40, 9)]:
        _check(STATIC[name], _x(shape, np.int32))


def test_views_and_row_operand():
    """A transposed or sliced x (the host passes a contiguous copy); a per-column
    operand ``w`` of shape (D,) broadcast to one row per plane."""
    base = _x((33, 4, 34), np.float32)
    _check(STATIC["mid_sum"], base.transpose(1, 0, 2))
    _check(STATIC["mid_mean"], base[:, :, ::2].transpose(1, 0, 2))
    _check(STATIC["pool_scale"], _x((4, 33, 17), np.float32), _x(17, np.float32))


def test_axis0_of_rank3_and_keepdims_shapes():
    """``axis=0`` of ``(N, H, W)``: no planes, columns ``H * W``."""
    fn = hybrid(sum0)
    x = _x((40, 6, 7), np.float32)
    got, k = run_sim(fn, x)
    assert np.array_equal(got, x.sum(axis=0))
    assert k.last_counters["gm_scalar_read_bytes"] == 0
    got, _ = run_sim(DYNAMIC["mid_min_keep"], x)
    assert got.shape == (40, 1, 7) and np.array_equal(got, x.min(axis=1, keepdims=True))


def test_squeezed_result_against_full_array():
    """``x - x.mean(axis=1)`` aligns the ``(B, D)`` mean with ``(N, D)`` (numpy): the
    kernel must not read it as one row per plane."""
    fn = hybrid(minus_squeezed)
    x = _x((5, 5, 3), np.float32)
    got, _ = run_sim(fn, x)
    assert_close(got, x - x.mean(axis=1), 1e-6, 1e-6)


def test_no_rows():
    x = np.zeros((3, 0, 5), np.float32)
    got, _ = run_sim(DYNAMIC["mid_sum"], x)
    assert got.shape == (3, 5) and not got.any()
    with pytest.raises(ValueError, match="zero-size array"):
        run_sim(DYNAMIC["mid_max"], x)
