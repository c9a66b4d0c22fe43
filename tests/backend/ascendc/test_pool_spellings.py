"""More spellings of a pool run as the pool kernel on ascend-sim (issue 19).

* float16 sums and means of windows accumulate in float32 in the kernel (a float16
  ``tensor.sum``, or ``np.mean``'s widen / sum / divide / narrow) and round once: equal
  to ``interpret`` within one float16 ulp (the float32 sums add in another order, so the
  one rounding may fall on the other side; docs/math-accuracy.md);
* loops over leading axes around the two window loops (``for ch: for i: for j:
  out[ch, i, j] = np.max(x[ch, ...])``, ``for b: for ch:``) are the kernel's planes,
  checked at run time to run over the whole axis (else the scalar twin runs);
* ``x.reshape(..., h // k, k, w // l, l).max(axis=(-3, -1))`` (and ``min``, ``sum``,
  ``mean``, ``np.max``) is a ``k x l`` pool (``pool_reshape``); a reshape that does not
  split the last two axes keeps the vector kernels.

Each checks the launched kernels and the result against ``target="interpret"``.
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.pool_kernel import PoolKernel
from pyasc.backend.ascendc.scalar_plan import ScalarKernel

RNG = np.random.default_rng(1919)


def _kinds(k) -> list[type]:
    kinds = {kk.name: type(kk) for kk in k.ascend.kernels}
    return [kinds[name] for name, _ in k.last_kernels]


def _check(fn, args, dynamic: bool, kinds=(PoolKernel,), exact: bool | float = True):
    """Run on ascend-sim; compare with interpret; check the launched kernels (unless
    ``kinds`` is None); return the kernel."""
    def fresh():
        return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=dynamic)
    got = sim(*fresh())
    want = hybrid(fn, target="interpret", dynamic_shape=dynamic)(*fresh())
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact is True:
        np.testing.assert_array_equal(got, want)
    elif exact is not False:  # a float16 sum numpy rounds per step: ``exact`` is the tolerance
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=exact, atol=exact)
    elif got.dtype == np.float16:  # one rounding of a float32 sum: within one ulp
        assert np.all(np.abs(got.astype(np.float32) - want.astype(np.float32)) <=
                      np.spacing(np.abs(want)).astype(np.float32)), (got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    k = sim.kernel(*args)
    assert kinds is None or _kinds(k) == list(kinds), k.last_kernels
    if kinds is not None and ScalarKernel not in kinds:  # the tables come to UB by DMA
        assert k.last_counters["gm_scalar_read_bytes"] == 0, k.last_counters
    return k


def _x(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


# ---- float16 window sums ---------------------------------------------------------


def mean_win(x):
    h, w = x.shape
    out = np.zeros((h // 2, w // 2), dtype=x.dtype)
    for i in range(h // 2):
        for j in range(w // 2):
            out[i, j] = x[2 * i:2 * i + 2, 2 * j:2 * j + 2].mean()
    return out


def sum_win_div(x):
    """A float16 sum (rounded to float16) then divided in float16."""
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (h // 3, w // 3), dtype=x.dtype)
    for i in range(h // 3):
        for j in range(w // 3):
            out[..., i, j] = x[..., 3 * i:3 * i + 3, 3 * j:3 * j + 3].sum(axis=(-2, -1)) / 9
    return out


def adapt_mean(x):
    oh, ow = 5, 4
    c, h, w = x.shape
    out = np.zeros((c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = x[:, (i * h) // oh:((i + 1) * h + oh - 1) // oh,
                             (j * w) // ow:((j + 1) * w + ow - 1) // ow].mean(axis=(1, 2))
    return out


@pytest.mark.parametrize("dynamic", [False, True])
def test_float16_window_means_accumulate_in_float32(dynamic):
    _check(mean_win, (_x((41, 71), np.float16) * 30,), dynamic, exact=False)
    _check(sum_win_div, (_x((2, 31, 29), np.float16) * 30,), dynamic, exact=False)
    _check(adapt_mean, (_x((3, 23, 37), np.float16),), dynamic, exact=False)


# ---- loops over leading axes -----------------------------------------------------


def max_ch(x):
    c, h, w = x.shape
    out = np.zeros((c, h // 2, w // 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h // 2):
            for j in range(w // 2):
                out[ch, i, j] = np.max(x[ch, 2 * i:2 * i + 2, 2 * j:2 * j + 2])
    return out


def mean_batch_ch(x):
    n, c, h, w = x.shape
    out = np.zeros((n, c, h // 3, w // 2), dtype=x.dtype)
    for b in range(n):
        for ch in range(c):
            for i in range(h // 3):
                for j in range(w // 2):
                    out[b, ch, i, j] = x[b, ch, 3 * i:3 * i + 3, 2 * j:2 * j + 2].mean()
    return out


def adaptive_max_ch(x):
    oh, ow = 5, 4
    c, h, w = x.shape
    out = np.zeros((c, oh, ow), dtype=x.dtype)
    for ch in range(c):
        for i in range(oh):
            for j in range(ow):
                s, e = (i * h) // oh, ((i + 1) * h + oh - 1) // oh
                t, f = (j * w) // ow, ((j + 1) * w + ow - 1) // ow
                out[ch, i, j] = x[ch, s:e, t:f].max()
    return out


def max_some_channels(x):
    """The channel loop skips the last channel: not the whole axis."""
    c, h, w = x.shape
    out = np.zeros((c, h // 2, w // 2), dtype=x.dtype)
    for ch in range(c - 1):
        for i in range(h // 2):
            for j in range(w // 2):
                out[ch, i, j] = np.max(x[ch, 2 * i:2 * i + 2, 2 * j:2 * j + 2])
    return out


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_channel_loops_around_a_pool_are_its_planes(dynamic, dtype):
    _check(max_ch, (_x((3, 41, 71), dtype),), dynamic)
    _check(adaptive_max_ch, (_x((3, 23, 37), dtype),), dynamic)
    k = _check(mean_batch_ch, (_x((2, 3, 20, 33), dtype),), dynamic, exact=False)
    assert k.last_counters["gm_scalar_write_bytes"] == 0


def test_a_loop_over_part_of_an_axis_runs_the_scalar_twin():
    k = _check(max_some_channels, (_x((3, 10, 13), np.float32),), True, kinds=(ScalarKernel,))
    assert PoolKernel in [type(kk) for kk in k.ascend.kernels]


# ---- reductions of a reshape -----------------------------------------------------


def reshape_max(x):
    h, w = x.shape
    return x.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3))


def reshape_np_min(x):
    h, w = x.shape
    return np.min(x.reshape(h // 3, 3, w // 2, 2), axis=(1, 3))


def reshape_mean(x):
    h, w = x.shape
    return x.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))


def reshape_sum_batch(x):
    c, h, w = x.shape
    return x.reshape(c, h // 2, 2, w // 3, 3).sum(axis=(2, 4))


def reshape_np_max_batch(x):
    n, c, h, w = x.shape
    return np.max(x.reshape(n, c, h // 2, 2, w // 2, 2), axis=(3, 5))


def reshape_not_split(x):
    """(H, W) -> (H / 4, 2, W, 2): the reshape mixes rows, not a pool."""
    h, w = x.shape
    return x.reshape(h // 4, 2, w, 2).max(axis=(1, 3))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_reductions_of_a_split_reshape_are_pools(dynamic, dtype):
    k = _check(reshape_max, (_x((40, 70), dtype),), dynamic)
    assert k.last_counters["gm_to_ub_bytes"] + k.last_counters["ub_to_gm_bytes"] <= \
        1.3 * 40 * 70 * 1.25 * np.dtype(dtype).itemsize, k.last_counters
    _check(reshape_np_min, (_x((27, 34), dtype),), dynamic)
    _check(reshape_mean, (_x((30, 46), dtype),), dynamic, exact=False)
    # numpy's float16 sum over axes (2, 4) rounds each partial sum to float16 (6 terms)
    _check(reshape_sum_batch, (_x((3, 22, 33), dtype),), dynamic,
           exact=4e-3 if dtype == np.float16 else False)
    _check(reshape_np_max_batch, (_x((2, 3, 14, 10), dtype),), dynamic)


def test_a_reshape_that_does_not_split_keeps_the_vector_kernels():
    k = _check(reshape_not_split, (_x((40, 70), np.float32),), False, kinds=None)
    assert PoolKernel not in _kinds(k)
