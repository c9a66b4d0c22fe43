"""A row reduction that is also returned: one rows kernel writes it beside the row output.

``m = x.max(-1); return x - m[:, None], m`` (or the batched row loop ``m = x[i].max();
mx[i] = m; out[i] = x[i] - m``; a layernorm returning its mean and variance; a softmax
returning its logsumexp, the saved statistics of a backward pass) launched two kernels
and read ``x`` twice from GM: the host's reshape (or write) of the returned reduction
sat between the reduction's group and its consumer's (``grouping.merge_adjacent``),
and a squeezed ``(n,)`` reduction cannot meet ``(n, 1)`` inside a kernel.  Now the host
ops move after the merged group when that changes nothing (``group_order``) and the
reduction is yielded as ``(n, 1)`` (``row_keepdims``): one kernel, GM traffic at the
minimum (read ``x``, write the outputs), results equal to ``target="interpret"``:
bit for bit for max and float16 (the float32 sums add in the kernel's order: 1e-6).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from ascendc_kit import assert_close, run_sim

from pyasc import hybrid

RNG = np.random.default_rng(2019)


def max_shift_loop(x):
    out = np.empty_like(x)
    mx = np.empty(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        m = x[i].max()
        mx[i] = m
        out[i] = x[i] - m
    return out, mx


def max_shift_whole(x):
    m = x.max(axis=-1)
    return x - m[:, None], m


def sum_scale_newaxis(x):
    s = np.sum(x, axis=1)
    return x / s[:, np.newaxis], s


def mean_center_reshape(x):
    mu = x.mean(axis=-1)
    return x - mu.reshape(-1, 1), mu


def mean_center_keepdims(x):
    mu = x.mean(axis=-1, keepdims=True)
    return x - mu, mu


def softmax_logsumexp(x):
    m = x.max(axis=-1)
    e = np.exp(x - m[:, None])
    s = e.sum(axis=-1)
    return e / s[:, None], m + np.log(s)


def layernorm_batch_loop(x):
    out = np.empty_like(x)
    mu = np.empty(x.shape[:2], dtype=x.dtype)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            m = x[b, i].mean()
            mu[b, i] = m
            d = x[b, i] - m
            out[b, i] = d / np.sqrt((d * d).mean() + 1e-5)
    return out, mu


def layernorm_whole_stats(x):
    mu = x.mean(-1)
    d = x - mu[..., None]
    var = (d * d).mean(-1)
    return d / np.sqrt(var + 1e-5)[..., None], mu, var


def layernorm_rows_keep(x):
    out = np.empty_like(x)
    mu = np.empty((x.shape[0], 1), x.dtype)
    rstd = np.empty((x.shape[0], 1), x.dtype)
    for i in range(x.shape[0]):
        m = x[i].mean()
        d = x[i] - m
        r = 1.0 / np.sqrt((d * d).mean() + 1e-5)
        out[i] = d * r
        mu[i, 0] = m
        rstd[i, 0] = r
    return out, mu, rstd


ALL = ("static-f32", "static-f16", "dynamic-f32", "dynamic-f16")
CASES = [  # (function, shape, configurations, bit-equal in float32)
    (max_shift_loop, (37, 203), ALL, True),
    (max_shift_whole, (37, 203), ALL, True),
    (layernorm_batch_loop, (3, 9, 101), ("static-f32", "dynamic-f16"), False),
    (sum_scale_newaxis, (19, 45), ("dynamic-f32",), False),
    (mean_center_reshape, (21, 33), ("dynamic-f16",), False),
    (mean_center_keepdims, (21, 33), ("dynamic-f32",), False),
    (softmax_logsumexp, (13, 130), ("static-f32", "dynamic-f16"), False),
    (layernorm_whole_stats, (2, 11, 57), ("static-f16", "dynamic-f32"), False),
    (layernorm_rows_keep, (9, 64), ("dynamic-f16",), False),
]


def _interpret(fn, args):  # noqa: ANN001, ANN202
    return hybrid(fn, target="interpret")(*copy.deepcopy(args))


def _gm_bytes(k) -> int:  # noqa: ANN001
    c = k.last_counters
    return (c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + c["gm_scalar_read_bytes"]
            + c["gm_scalar_write_bytes"])


def _nbytes(v) -> int:  # noqa: ANN001
    return sum(np.asarray(a).nbytes for a in v) if isinstance(v, tuple) else v.nbytes


@pytest.mark.parametrize("fn,shape,conf,exact", [
    pytest.param(fn, shape, conf, exact, id=f"{fn.__name__}-{conf}")
    for fn, shape, confs, exact in CASES for conf in confs])
def test_one_kernel_writes_row_output_and_reduction(fn, shape, conf, exact):
    dynamic, dtype = conf.startswith("dynamic"), np.dtype(conf[-3:].replace("f", "float"))
    x = RNG.standard_normal(shape).astype(dtype)
    want = _interpret(fn, (x,))
    got, k = run_sim(hybrid(fn, dynamic_shape=dynamic), x.copy())
    assert len(k.last_kernels) == 1, k.last_kernels
    assert _gm_bytes(k) <= 1.05 * (x.nbytes + _nbytes(want))
    if exact or dtype == np.float16:
        assert_close(got, want, 0, 0, fn.__name__)
    else:
        assert_close(got, want, 1e-6, 1e-6, fn.__name__)


def test_a_view_of_x():
    # every other row, from column 3: the rows kernel reads the strided view itself
    base = RNG.standard_normal((41, 70)).astype(np.float32)
    x = base[::2, 3:]
    got, k = run_sim(hybrid(max_shift_loop), x)
    assert len(k.last_kernels) == 1, k.last_kernels
    assert_close(got, _interpret(max_shift_loop, (x,)), 0, 0)


def test_rows_longer_than_ub_take_the_two_pass_kernel():
    # the long-rows schedule streams each row twice (max, then x - max); the max is its
    # per-row accumulator, written one element per row: still one kernel
    x = RNG.standard_normal((3, 40001)).astype(np.float32)
    for dynamic in (False, True):
        got, k = run_sim(hybrid(max_shift_whole, dynamic_shape=dynamic), x.copy())
        assert len(k.last_kernels) == 1, k.last_kernels
        assert _gm_bytes(k) <= 1.05 * (2 * x.nbytes + x.nbytes + x.nbytes // 40001)
        assert_close(got, _interpret(max_shift_whole, (x,)), 0, 0)


def reshape_to_argument(x, k):
    m = x.max(axis=-1)
    return x - m.reshape(k, 1), m


def test_reshape_of_unproven_size_stays_on_the_host():
    # k is not provably x.shape[0]: the host reshape keeps numpy's check
    x = RNG.standard_normal((6, 40)).astype(np.float32)
    fn = hybrid(reshape_to_argument, target="ascend-sim", dynamic_shape=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(fn(x, 6), _interpret(reshape_to_argument, (x, 6)), 0, 0)
        with pytest.raises(ValueError):
            fn(x, 5)


def write_then_read(x, buf):
    m = x.max(axis=-1, keepdims=True)
    buf[...] = m  # buf may be a view of x: x - m must read x after this write
    return x - m


def test_a_write_that_may_alias_the_input_is_not_moved():
    x = RNG.standard_normal((16, 40)).astype(np.float32)
    want_x = x.copy()
    want = hybrid(write_then_read, target="interpret")(want_x, want_x[:, :1])
    got_x = x.copy()
    fn = hybrid(write_then_read, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(got_x, got_x[:, :1])
    assert_close(got, want, 0, 0)
    assert_close(got_x, want_x, 0, 0)
