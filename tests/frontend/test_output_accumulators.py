"""``output-accumulators``: a window reduction per output element (scalar accumulators
carried through small window loops, the result not stored as it is) gets one
accumulator per output in memory, so that ``layout`` runs the contiguous output loop
innermost and the window loops outside it.  Results are bit-identical (the pass on and
off, exact comparisons); shapes the rule must leave alone keep their carried values.
The kernels are compiled with ``sum_lanes=False``: a long window sum the rule leaves alone
(or that runs with the pass off) would otherwise be summed in np.sum's lanes
(``sum-lanes``), not in the loop's order these exact comparisons are about."""

from __future__ import annotations

import numpy as np
import pytest
from diff import Tol, check, passes_disabled, rand
from diff import run as run_on

from pyasc import hybrid
from pyasc.ir import parse_module
from pyasc.ir.passes.loopgen import constant_of


@hybrid(sum_lanes=False)
def bilateral(img):
    """The scalar-loop bilateral filter (5x5 window, float64 sums of float32 weights)."""
    h, w = img.shape
    out = np.zeros_like(img)
    space = np.exp(-(np.arange(-2, 3) ** 2) / 8.0)
    for i in range(2, h - 2):
        for j in range(2, w - 2):
            c = img[i, j]
            num = 0.0
            den = 0.0
            for di in range(5):
                for dj in range(5):
                    v = img[i + di - 2, j + dj - 2]
                    d = c - v
                    wgt = space[dj] * np.exp(-(d * d) / np.float32(0.02))
                    num += v * wgt
                    den += wgt
            out[i, j] = num / den
    return out


@hybrid(sum_lanes=False)
def fir_scaled(x, w):
    """A long FIR filter whose sum is scaled before it is stored."""
    n, k = x.shape[0], w.shape[0]
    y = np.zeros(n - k + 1, np.float32)
    for i in range(n - k + 1):
        acc = np.float32(0.0)
        for t in range(k):
            acc += x[i + t] * w[t]
        y[i] = acc * np.float32(0.5)
    return y


@hybrid(sum_lanes=False)
def box_mean(img):
    """A 13x13 box mean: the sum divided by the window size."""
    h, w = img.shape
    out = np.zeros((h - 12, w - 12), np.float32)
    for i in range(h - 12):
        for j in range(w - 12):
            s = np.float32(0.0)
            for di in range(13):
                for dj in range(13):
                    s += img[i + di, j + dj]
            out[i, j] = s / np.float32(169.0)
    return out


@hybrid(sum_lanes=False)
def conv_relu(x, w):
    """A direct convolution with a scalar accumulator and a ReLU before the store."""
    c, h, wd = x.shape
    k, _, r, s = w.shape
    out = np.empty((k, h - r + 1, wd - s + 1), np.float32)
    for o in range(k):
        for y in range(h - r + 1):
            for xx in range(wd - s + 1):
                acc = np.float32(0.0)
                for ci in range(c):
                    for di in range(r):
                        for dj in range(s):
                            acc += x[ci, y + di, xx + dj] * w[o, ci, di, dj]
                out[o, y, xx] = max(acc, np.float32(0.0))
    return out


@hybrid(sum_lanes=False)
def window_max_minus_min(img):
    """Two accumulators of other reductions (max and min) over a 1x90 window."""
    h, w = img.shape
    out = np.zeros((h, w - 89), np.float32)
    for i in range(h):
        for j in range(w - 89):
            hi = img[i, j]
            lo = img[i, j]
            for t in range(90):
                hi = max(hi, img[i, j + t])
                lo = min(lo, img[i, j + t])
            out[i, j] = hi - lo
    return out


@hybrid(sum_lanes=False)
def column_window(img):
    """The window runs along the output loop's own (strided) axis: left alone."""
    h, w = img.shape
    out = np.zeros(h - 40, np.float32)
    for i in range(h - 40):
        s = np.float32(0.0)
        for t in range(40):
            for u in range(w):
                s += img[i + t, u]
        out[i] = s * np.float32(2.0)
    return out


@hybrid(sum_lanes=False)
def reads_what_it_writes(img):
    """The window reads the output buffer: left alone."""
    h, w = img.shape
    out = np.zeros((h, w), np.float32)
    for i in range(1, h):
        for j in range(w - 40):
            s = np.float32(0.0)
            for t in range(40):
                s += img[i, j + t] + out[i - 1, j + t]
            out[i, j] = s * np.float32(0.5)
    return out


@hybrid(sum_lanes=False)
def into_a_parameter(img, out):
    """The output is a parameter, which may alias the input: left alone."""
    for j in range(img.shape[0] - 40):
        s = np.float32(0.0)
        for t in range(40):
            s += img[j + t]
        out[j] = s * np.float32(0.5)
    return out


def _loops(fn, *args) -> list:
    return [op for op in parse_module(fn.kernel(*args).loop_ir).walk()
            if op.name == "loop.for"]


def _carried(fn, *args) -> int:
    """Loops carrying a float value in the compiled kernel's loop IR."""
    return sum(1 for op in _loops(fn, *args) if any(r.type.is_float for r in op.result_values))


def _trips_of_busiest_innermost(fn, *args) -> int | None:
    """The static trip count of the innermost loop with the most ops (the window's body
    in a window loop, the output loop once interchanged)."""
    inner = [lp for lp in _loops(fn, *args)
             if not any(o is not lp and o.name == "loop.for" for o in lp.walk())]
    busiest = max(inner, key=lambda lp: sum(1 for _ in lp.walk()))
    lo, hi = constant_of(busiest.operand_values[0]), constant_of(busiest.operand_values[1])
    return None if lo is None or hi is None else hi - lo


def _same_with_and_without(fn, *args) -> None:
    """The compiled kernel gives the same bits with the pass on and off."""
    on = run_on(fn, "cpu", args, {})
    with passes_disabled(["output-accumulators"]):
        off = run_on(fn, "cpu", args, {})
    for a, b in zip(np.atleast_1d(on), np.atleast_1d(off), strict=True):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("shape", [(9, 61), (23, 37), (7, 300)])
def test_bilateral_scalar_loops_vectorize_across_output_pixels(shape) -> None:
    img = np.random.default_rng(3).random(shape).astype(np.float32)
    assert _carried(bilateral, img) == 0
    if shape[1] - 4 <= 256:  # one chunk: the output loop's own bounds
        assert _trips_of_busiest_innermost(bilateral, img) == shape[1] - 4
    _same_with_and_without(bilateral, img)
    # each weight is one exp (compiled: pyasc's own, within its ulp bound of numpy's),
    # summed over 25 terms
    check(bilateral, img, rtol=Tol(math=2, terms=25))


@pytest.mark.parametrize("n", [197, 1001])
def test_fir_with_a_scaled_sum(n) -> None:
    x, w = rand((n,), "float32"), rand((150,), "float32", 1)
    assert _carried(fir_scaled, x, w) == 0
    _same_with_and_without(fir_scaled, x, w)
    check(fir_scaled, x, w)


def test_box_mean_runs_the_output_loop_innermost() -> None:
    img = rand((21, 50), "float32")
    assert _carried(box_mean, img) == 0
    assert _trips_of_busiest_innermost(box_mean, img) == 50 - 12
    check(box_mean, img)


def test_convolution_with_relu_and_two_reductions() -> None:
    x, w = rand((16, 9, 13), "float32"), rand((3, 16, 3, 3), "float32", 1)
    assert _carried(conv_relu, x, w) == 0
    check(conv_relu, x, w)
    img = rand((5, 183), "float32", 2)
    assert _carried(window_max_minus_min, img) == 0
    check(window_max_minus_min, img)


@pytest.mark.parametrize("fn", [column_window, reads_what_it_writes],
                         ids=lambda f: f.__name__)
def test_shapes_left_alone(fn) -> None:
    img = rand((45, 47), "float32")
    assert _carried(fn, img) >= 1
    check(fn, img)


def test_a_parameter_may_alias_an_input() -> None:
    img = rand((90,), "float32")
    assert _carried(into_a_parameter, img, np.zeros(50, np.float32)) >= 1
    check(into_a_parameter, img, np.zeros(50, np.float32))
