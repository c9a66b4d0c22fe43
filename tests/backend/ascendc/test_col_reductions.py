"""Reductions over the leading axes are vector kernels (the ``cols`` schedule).

Batch-norm statistics (``x.mean(axis=0)``, ``x.var(axis=0)``), softmax over axis 0,
``x.sum(axis=0)``, ``np.max(x, axis=0)``: each block owns a range of columns and
streams the rows (``vec_cols``).  Each function must run as one vector kernel of that
schedule (no scalar GM access) and equal numpy on odd sizes, float32/float16/int32,
NaN (max/min propagate it as numpy does), run-time shapes and views.  Sums add each
column's rows in order, as numpy does, unless the rows are split across blocks
(``test_col_split_rows.py``): float tolerances as for the other float reductions.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import STORE, assert_close, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(20261203)
TOL = {np.float32: {"rtol": 2e-5, "atol": 2e-5}, np.float16: {"rtol": 4e-3, "atol": 4e-3},
       np.int32: {"rtol": 0, "atol": 0}}
SIZES = [(1, 7), (7, 1), (17, 33), (300, 17), (33, 4097), (4097, 7), (300, 300),
         (1, 4097), (4097, 33)]


def col_sum(x):
    return x.sum(axis=0)


def col_mean(x):
    return x.mean(axis=0)


def col_var(x):
    return x.var(axis=0)


def col_max(x):
    return np.max(x, axis=0)


def col_min_keep(x):
    return x.min(axis=0, keepdims=True)


def softmax0(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def batchnorm(x, gamma, beta):
    mu = x.mean(axis=0)
    var = ((x - mu) ** 2).mean(axis=0)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def sum_leading2(x):
    return x.sum(axis=(0, 1))


FLOAT_FNS = [col_sum, col_mean, col_var, col_max, col_min_keep, softmax0]
INT_FNS = [col_max, col_min_keep]
STATIC = {f.__name__: hybrid(f) for f in [*FLOAT_FNS, batchnorm, sum_leading2]}
DYNAMIC = {f.__name__: hybrid(f, dynamic_shape=True) for f in [*FLOAT_FNS, batchnorm]}


def _x(shape, dtype):
    if dtype == np.int32:
        return RNG.integers(-10**6, 10**6, shape).astype(np.int32)
    return (RNG.standard_normal(shape) * 2).astype(dtype)


def _kinds(k) -> list[tuple[str, str | None]]:  # noqa: ANN001
    kinds = {x.name: (type(x).__name__, getattr(x, "schedule", None)) for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _check(fn, *args):
    """ascend-sim == numpy (float16 against the float32 computation); the kernel."""
    got, k = run_sim(fn, *args)
    dtype = args[0].dtype.type
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    want = np.asarray(fn.__wrapped__(*wide)).astype(np.asarray(fn.__wrapped__(*args)).dtype)
    tol = dict(TOL[dtype])
    if fn.__name__ == "col_sum" and dtype != np.int32:
        # rows split across blocks add in another order than numpy: a few float32 ulps
        # of the column's sum of magnitudes (its error bound), not of the (cancelled) sum
        mags = np.abs(wide[0].astype(np.float32)).sum(axis=0)
        tol["atol"] = max(tol["atol"], 4 * float(np.finfo(np.float32).eps) * float(
            mags.max(initial=0)))
    assert_close(got, want, **tol, where=fn.__name__)
    return k


def _one_cols_kernel(k) -> None:  # noqa: ANN001
    """One cols kernel, or one per pass when a narrow tall matrix's statistics split
    their rows across blocks (``cols_split``: a variance's two passes)."""
    kinds = _kinds(k)
    assert kinds in ([("VectorKernel", "cols")], [("VectorKernel", "cols")] * 2), kinds
    assert k.last_counters["gm_scalar_read_bytes"] == 0
    assert k.last_counters["gm_scalar_write_bytes"] == 0


@pytest.fixture(scope="module", autouse=True)
def _prefetch():
    """Start the builds of the run-time-shape functions at once."""
    for name, fn in DYNAMIC.items():
        for dtype in (np.float32, np.float16):
            args = (_x((5, 9), dtype),) + ((_x(9, dtype), _x(9, dtype))
                                           if name == "batchnorm" else ())
            STORE.submit(fn, *args)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", [f.__name__ for f in FLOAT_FNS])
def test_float_column_reductions_dynamic(name, dtype):
    """One build per function and dtype serves every size; each is one cols kernel."""
    for shape in SIZES:
        _one_cols_kernel(_check(DYNAMIC[name], _x(shape, dtype)))


@pytest.mark.parametrize("name", [f.__name__ for f in FLOAT_FNS])
def test_float_column_reductions_static(name):
    for shape in [(17, 33), (300, 7)]:
        k = _check(STATIC[name], _x(shape, np.float32))
        _one_cols_kernel(k)
        if name != "softmax0":  # one read of x per reduction level, nothing more
            reads = 2 if name == "col_var" else 1
            # a split second pass also reads the mean row once per block
            row = 4 * shape[1] * k.last_counters["blocks"] if reads == 2 else 0
            assert reads * 4 * shape[0] * shape[1] <= k.last_counters["gm_to_ub_bytes"] \
                <= reads * 4 * shape[0] * shape[1] + row


@pytest.mark.parametrize("name", [f.__name__ for f in INT_FNS])
def test_int32_max_min(name):
    for shape in [(33, 17), (300, 1), (7, 4097)]:
        _one_cols_kernel(_check(STATIC[name], _x(shape, np.int32)))


@pytest.mark.parametrize("name", ["col_max", "col_min_keep"])
def test_nan_propagates_like_numpy(name):
    x = _x((33, 17), np.float32)
    x[5, 3] = np.nan
    x[32, 16] = np.nan
    x[0, 0] = np.nan
    got, k = run_sim(STATIC[name], x)
    _one_cols_kernel(k)
    want = STATIC[name].__wrapped__(x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert_close(got, want, 0, 0, name)


def test_views_and_leading_axes():
    x = _x((41, 19), np.float32)
    _one_cols_kernel(_check(STATIC["col_sum"], x[::2]))
    _one_cols_kernel(_check(DYNAMIC["col_mean"], x[::3, 1:]))
    _one_cols_kernel(_check(STATIC["sum_leading2"], _x((4, 5, 33), np.float32)))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_batchnorm_is_one_kernel(dynamic):
    fn = (DYNAMIC if dynamic else STATIC)["batchnorm"]
    for n, c in [(300, 17), (33, 4097)]:
        x, g, b = _x((n, c), np.float32), _x(c, np.float32), _x(c, np.float32)
        k = _check(fn, x, g, b)
        _one_cols_kernel(k)
        # x read three times (mean, variance, output); gamma and beta once per column
        assert k.last_counters["gm_to_ub_bytes"] == 3 * x.nbytes + g.nbytes + b.nbytes


def test_no_rows():
    """A sum over no rows is 0 per column; max over none raises numpy's ValueError."""
    x = np.zeros((0, 5), np.float32)
    got, _ = run_sim(DYNAMIC["col_sum"], x)
    assert_close(got, np.zeros(5, np.float32), 0, 0)
    with pytest.raises(ValueError, match="zero-size array"):
        run_sim(DYNAMIC["col_max"], x)


def whole_max(x):
    return x.max()


def whole_min(x):
    return np.min(x)


INT_WHOLE = {f.__name__: hybrid(f, dynamic_shape=True) for f in (whole_max, whole_min)}


@pytest.mark.parametrize("dtype", [np.int16, np.int32])
@pytest.mark.parametrize("name", sorted(INT_WHOLE))
def test_integer_whole_array_max_min(name, dtype):
    """ReduceMax/Min take no integers: each block folds its accumulator by halves with
    Max/Min instead (exact) and the host finishes over every block's 32-byte slot."""
    info = np.iinfo(dtype)
    for n in (1, 77, 1001, 200003):
        x = RNG.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        x[RNG.integers(0, n)] = info.max if name == "whole_max" else info.min
        got, k = run_sim(INT_WHOLE[name], x)
        assert _kinds(k) == [("VectorKernel", "reduce")]
        assert k.last_counters["gm_scalar_read_bytes"] == 0
        assert got == INT_WHOLE[name].__wrapped__(x) and np.asarray(got).dtype == dtype


def channel_sum(x):
    return x.sum(axis=(0, 2))


def channel_mean_keep(x):
    return x.mean(axis=(0, 2), keepdims=True)


def channel_max(x):
    return np.max(x, axis=(0, 2))


def nchw_mean(x):
    return x.mean(axis=(0, 2, 3))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", [channel_sum, channel_mean_keep, channel_max, nchw_mean],
                         ids=lambda f: f.__name__)
def test_per_channel_statistics(fn, dynamic):
    """Axes (0, 2) of (N, C, HW): a row reduction to (N, C), then a column one; no
    scalar kernel (a run-time keepdims result: its unit axes back by a reshape whose
    extents are the unreduced result's)."""
    compiled = hybrid(fn, dynamic_shape=dynamic)
    shapes = [(4, 3, 17), (33, 7, 1), (2, 17, 300)]
    for shape in shapes:
        shape = (*shape, 5) if fn is nchw_mean else shape
        x = _x(shape, np.float32)
        if fn is channel_max:
            x[1, 2, 0] = np.nan
        k = _check(compiled, x)
        assert all(kind == "VectorKernel" for kind, _ in _kinds(k)), _kinds(k)
        assert k.last_counters["gm_scalar_read_bytes"] == 0


def test_split_float16_sum_keeps_float32_partials():
    """(0, 2) of float16: the (N, C) partial sums stay float32 between the two kernels,
    so the result is the float32 sum rounded once (within one float16 ulp)."""
    compiled = hybrid(channel_sum)
    x = (RNG.standard_normal((4097, 5, 7)) * 2).astype(np.float16)
    got, k = run_sim(compiled, x)
    assert all(kind == "VectorKernel" for kind, _ in _kinds(k))
    want = x.astype(np.float32).sum(axis=(0, 2))
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    assert got.dtype == np.float16
    assert np.all(np.abs(got.astype(np.float32) - want) <= ulp)
