"""Per-channel operands over NCHW arrays are vector kernels (``vec_collapse``'s channels).

Batch-norm written the numpy way on ``(N, C, H, W)`` (statistics over axes ``(0, 2,
3)`` with keepdims, ``gamma``/``beta`` of shape ``(C, 1, 1)`` or ``(1, C, 1, 1)``): a
``(1, C, 1, 1)`` value is constant over each ``(n, c)`` plane of ``H * W`` elements,
so seen as the 2-D space ``(N * C, H * W)`` it is one value per row, and a reduction
over the trailing axes ``(2, 3)`` is a row reduction.  Every kernel must be a vector
kernel (no scalar GM access), equal numpy (float32, float16 against the float32
computation) on odd shapes, and read ``x`` once per pass over it.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import assert_close, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(20261203)
TOL = {np.float32: {"rtol": 3e-5, "atol": 3e-5}, np.float16: {"rtol": 4e-3, "atol": 4e-3}}


def batchnorm(x, gamma, beta):
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def scale_shift(x, s, b):
    return x * s + b


def pool_mean(x):
    return x.mean(axis=(2, 3))


def centred_sums(x, m):
    return (x - m).sum(axis=(2, 3), keepdims=True)


def sum_then_add(x, m):
    return x.sum(axis=(2, 3), keepdims=True) + m


STATIC = {f.__name__: hybrid(f) for f in (batchnorm, scale_shift, pool_mean)}
DYNAMIC = {f.__name__: hybrid(f, dynamic_shape=True)
           for f in (batchnorm, scale_shift, centred_sums, sum_then_add)}


def _x(shape, dtype):
    return (RNG.standard_normal(shape) * 2 + 1).astype(dtype)


def _kinds(k) -> list[tuple[str, str | None]]:  # noqa: ANN001
    kinds = {x.name: (type(x).__name__, getattr(x, "schedule", None)) for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _check(fn, *args):
    """ascend-sim == numpy (float16 against the float32 computation); the kernel."""
    got, k = run_sim(fn, *args)
    dtype = args[0].dtype.type
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    want = np.asarray(fn.__wrapped__(*args))
    assert got.shape == want.shape and got.dtype == want.dtype
    ref = np.asarray(fn.__wrapped__(*wide))
    # float16: each rounding of an intermediate (x - mu of values up to ~10) is relative
    # to the magnitudes in play, not to the (small) result
    scale = max(1.0, float(np.max(np.abs(ref)))) if dtype == np.float16 else 1.0
    assert_close(got, ref.astype(want.dtype), TOL[dtype]["rtol"],
                 TOL[dtype]["atol"] * scale, where=fn.__name__)
    return k


def _all_vector(k) -> None:  # noqa: ANN001
    assert all(kind == "VectorKernel" for kind, _ in _kinds(k)), _kinds(k)
    assert k.last_counters["gm_scalar_read_bytes"] == 0
    assert k.last_counters["gm_scalar_write_bytes"] == 0


SHAPES = [(2, 3, 5, 7), (1, 1, 1, 1), (3, 5, 1, 4097), (4, 16, 9, 9), (1, 7, 33, 1)]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_batchnorm_nchw(dtype, dynamic):
    """Statistics: a rows kernel over (N*C, H*W) and a cols one over N, twice; the
    output: one rows kernel with mean, variance, gamma and beta one value per row."""
    fn = (DYNAMIC if dynamic else STATIC)["batchnorm"]
    for i, shape in enumerate(SHAPES):
        n, c = shape[:2]
        x = _x(shape, dtype)
        pshape = (c, 1, 1) if i % 2 else (1, c, 1, 1)
        k = _check(fn, x, _x(pshape, dtype), _x(pshape, dtype))
        if x.size == 1:
            continue  # one element: numpy's scalar arithmetic (scalar kernels)
        _all_vector(k)
        if not dynamic:  # (?, ?, ?) gamma may be a whole (C, H, W) plane: read as one
            # x three times (mean, variance, output); the rest is O(N * C) per kernel
            extra = k.last_counters["gm_to_ub_bytes"] - 3 * x.nbytes
            assert 0 <= extra <= 8 * n * c * 4 + 64 * 3, extra


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_channel_scale_shift_is_one_rows_kernel(dtype):
    x = _x((3, 5, 7, 9), dtype)
    for shapes in [((5, 1, 1), (1, 5, 1, 1)), ((3, 5, 1, 1), (5, 1, 1))]:
        k = _check(STATIC["scale_shift"], x, *(_x(s, dtype) for s in shapes))
        assert _kinds(k) == [("VectorKernel", "rows")]
        assert k.last_counters["gm_scalar_read_bytes"] == 0


def test_trailing_axes_are_one_row_reduction():
    """x.mean(axis=(2, 3)): one rows kernel over (N*C, H*W), x read once."""
    x = _x((3, 5, 7, 9), np.float32)
    k = _check(STATIC["pool_mean"], x)
    assert _kinds(k) == [("VectorKernel", "rows")]
    assert k.last_counters["gm_to_ub_bytes"] == x.nbytes


def test_dynamic_broadcasts_stay_exact():
    """Run-time sizes where the channel operand sizes the space ((N, C, 1, 1) against
    x of (1, C, H, W)): the sum must not count copies numpy never makes."""
    x = _x((1, 3, 5, 7), np.float32)
    m = _x((4, 3, 1, 1), np.float32)
    _all_vector(_check(DYNAMIC["centred_sums"], x, m))
    _check(DYNAMIC["sum_then_add"], x, m)
    _check(DYNAMIC["scale_shift"], x, m, _x((3, 1, 1), np.float32))
    _check(DYNAMIC["batchnorm"], _x((2, 3, 5, 7), np.float32), m[:1], m[:1])


def last_axis_centred(x, m):
    return (x - m).sum(axis=3)


def plane_and_channel(x, w, b):
    return x * w + b


def scaled_sums(x, m):
    return (x * m).sum(axis=(2, 3)) * 2.0 + 1.0


@pytest.mark.parametrize("fn", [last_axis_centred, plane_and_channel, scaled_sums],
                         ids=lambda f: f.__name__)
def test_other_splits_are_one_rows_kernel(fn):
    """A reduction over the last axis alone beside a channel (2-D form split at 3), a
    plane and a channel split at the same axis, a result without keepdims scaled by
    scalars (it stays squeezed): each one rows kernel."""
    x, m = _x((3, 4, 5, 6), np.float32), _x((4, 1, 1), np.float32)
    args = (x, _x((5, 6), np.float32), m) if fn is plane_and_channel else (x, m)
    k = _check(hybrid(fn), *args)
    assert _kinds(k) == [("VectorKernel", "rows")]
    assert k.last_counters["gm_scalar_read_bytes"] == 0
