"""A window times a whole weight argument of run-time shape is a stencil kernel (issue 19).

Under ``dynamic_shape=True`` the weights ``k`` of ``np.sum(x[i:i+5, j:j+5] * k)`` have
a run-time shape, so the product has no static window size.  ``batch-loops`` versions
the nest on ``k.shape == (5, 5)`` (``batch_loops._versioned``): the fast branch reads
``k`` through a view of static sizes and runs as one stencil kernel; any other shape
runs the nest as written, with numpy's broadcasting (a correct scalar kernel) or its
error.  Each spelling here was a scalar kernel before (23x the minimum of GM bytes).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(1919)
WARN = "ignore::pyasc.backend.ascendc.PyascPerformanceWarning"


def _launched(k) -> list[str]:  # noqa: ANN001
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _gm_ratio(k, args: tuple, out: np.ndarray) -> float:  # noqa: ANN001
    """GM bytes moved over the minimum (each argument read once, the result written)."""
    c = k.last_counters
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + c["gm_scalar_read_bytes"] + \
        c["gm_scalar_write_bytes"]
    return gm / (sum(a.nbytes for a in args if isinstance(a, np.ndarray)) + out.nbytes)


def gauss5_weights(x, k):
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            out[i, j] = np.sum(x[i:i + 5, j:j + 5] * k)
    return out


def gauss3_method(x, k):
    out = np.empty((x.shape[0] - 2, x.shape[1] - 2), dtype=x.dtype)
    for i in range(x.shape[0] - 2):
        for j in range(x.shape[1] - 2):
            out[i, j] = (x[i:i + 3, j:j + 3] * k).sum()
    return out


def gauss5_weights_first(x, k):
    h, w = x.shape
    out = np.zeros((h - 4, w - 4), dtype=x.dtype)
    for i in range(h - 4):
        for j in range(w - 4):
            out[i, j] = np.sum(k * x[i:i + 5, j:j + 5])
    return out


def planes_shared_weights(x, k):
    # every channel's plane filtered with the same whole k
    c, h, w = x.shape
    out = np.zeros((c, h - 2, w - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(w - 2):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3] * k)
    return out


def row_weights(x, k):
    # k of rank 1: numpy broadcasts it along the window's rows
    out = np.zeros((x.shape[0] - 2, x.shape[1] - 2), dtype=x.dtype)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(x[i:i + 3, j:j + 3] * k)
    return out


def chosen_plane_weights(x, w, c):
    # w[c] of a scalar c: a view of run-time sizes that does not move with the nest
    # (the fast copy's sizes are constants but its type still says ?x?)
    out = np.zeros((x.shape[0] - 2, x.shape[1] - 2), dtype=x.dtype)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(x[i:i + 3, j:j + 3] * w[c])
    return out


SPELLINGS = [
    (gauss5_weights, lambda r: (r.random((23, 37)), r.random((5, 5))), "float32"),
    (gauss5_weights, lambda r: (r.random((23, 37)), r.random((5, 5))), "float16"),
    (gauss3_method, lambda r: (r.random((19, 45)), r.random((3, 3))), "float32"),
    (gauss3_method, lambda r: (r.random((19, 45)), r.random((3, 3))), "float16"),
    (gauss5_weights_first, lambda r: (r.random((21, 33)), r.random((5, 5))), "float32"),
    (gauss5_weights_first, lambda r: (r.random((21, 33)), r.random((5, 5))), "float16"),
    (planes_shared_weights, lambda r: (r.random((3, 17, 29)), r.random((3, 3))),
     "float32"),
    (planes_shared_weights, lambda r: (r.random((3, 17, 29)), r.random((3, 3))),
     "float16"),
    # (float32 only: the float16 path is the same as the spellings' above)
    (row_weights, lambda r: (r.random((15, 41)), r.random(3)), "float32"),
    (chosen_plane_weights, lambda r: (r.random((17, 31)), r.random((2, 3, 3)), 1),
     "float32"),
]


@pytest.mark.filterwarnings(WARN)
@pytest.mark.parametrize("fn,make,dtype", SPELLINGS,
                         ids=[f"{f.__name__}-{t}" for f, _, t in SPELLINGS])
def test_window_times_whole_dynamic_argument_is_a_stencil(fn, make, dtype):
    # Each case draws its own data: under xdist the order of tests differs per worker.
    made = make(np.random.default_rng(1919))
    args = tuple(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in made)
    tol = 2e-3 if dtype == "float16" else 1e-5
    k = check(hybrid(fn, dynamic_shape=True), *args, rtol=tol, atol=tol)
    assert _launched(k) == ["StencilKernel"], _launched(k)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    assert _gm_ratio(k, args, fn(*args)) <= 1.2


@pytest.mark.filterwarnings(WARN)
def test_weights_of_another_shape_run_the_nest_as_written():
    # one compiled function: (5, 5) takes the fast branch; shapes that broadcast
    # otherwise run the unchanged nest (numpy's broadcasting, correct); (3, 3) raises
    # numpy's error, as the interpreter does
    x = RNG.random((21, 33)).astype(np.float32)
    sim = hybrid(gauss5_weights, dynamic_shape=True)
    interp = hybrid(gauss5_weights, dynamic_shape=True, target="interpret")
    for shape, kinds in [((5, 5), ["StencilKernel"]), ((1, 5), ["ScalarKernel"]),
                         ((5, 1), ["ScalarKernel"]), ((1, 1), ["ScalarKernel"]),
                         ((5,), ["StencilKernel"])]:
        w = RNG.random(shape).astype(np.float32)
        k = check(sim, x, w)
        np.testing.assert_allclose(sim(x, w), interp(x, w), rtol=1e-5, atol=1e-6)
        assert _launched(k) == kinds, (shape, _launched(k))
    w = RNG.random((3, 3)).astype(np.float32)
    for fn in (interp, sim):
        with pytest.raises(ValueError, match="could not be broadcast"):
            fn(x, w)


def window_from_weights(x, k):
    # the window's size is k's: the jit compiles one kernel per k shape
    kh, kw = k.shape
    out = np.zeros((x.shape[0] - kh + 1, x.shape[1] - kw + 1), dtype=x.dtype)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(x[i:i + kh, j:j + kw] * k)
    return out


def test_window_sized_from_the_weights_changes_between_calls():
    x = RNG.random((19, 27)).astype(np.float32)
    sim = hybrid(window_from_weights, dynamic_shape=True)
    for shape in [(5, 5), (3, 3), (3, 5), (5, 5)]:
        k = check(sim, x, RNG.random(shape).astype(np.float32))
        assert _launched(k) == ["StencilKernel"], (shape, _launched(k))
    assert len(sim.specializations) == 3  # one per shape of k


@pytest.mark.filterwarnings(WARN)
def test_float16_window_sums_round_once_as_numpy_does():
    """A float16 window sum accumulates in float32 (``batch_window_chains.Chain``): a
    chain of float16 adds was 2-3e-3 from numpy's sum (25 roundings, not one)."""
    r = np.random.default_rng(5)
    x, k = r.random((21, 33)).astype(np.float16), r.random((5, 5)).astype(np.float16)
    for dynamic in (False, True):
        kern = check(hybrid(gauss5_weights_first, dynamic_shape=dynamic), x, k,
                     rtol=1e-3, atol=0)
        assert _launched(kern) == ["StencilKernel"], _launched(kern)
