"""Window loops of a run-time size: under ``dynamic_shape`` the dimensions a window
loop's trip count comes from are specialized by value (``frontend/window_dims.py``),
every other dimension stays run-time."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc import hybrid
from pyasc.errors import (
    PyascPerformanceWarning,
    UnsupportedNumpyError,
    UnsupportedSyntaxError,
    WindowSizeCapWarning,
)
from pyasc.jit import facts, window_cap
from pyasc.runtime import MISS


def depthwise(x, wt):
    k = wt.shape[1]
    c, h, w = x.shape
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                s = np.float32(0)
                for di in range(k):
                    for dj in range(k):
                        s += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = s
    return out


def pair_conv1d(xw):
    x, wt = xw  # arrays inside a tuple: by-value path ("xw", 1, "shape", 0)
    out = np.zeros((x.shape[0] - wt.shape[0]) // 2 + 1, dtype=x.dtype)
    for i in range(out.shape[0]):
        for t in range(wt.shape[0]):  # stride 2: the window moves with 2 * i
            out[i] += x[2 * i + t] * wt[t]
    return out


def weighted_rows(x, wt):
    # no window: the loop over wt's rows is not added to an outer counter
    out = np.zeros(x.shape[1], dtype=x.dtype)
    for t in range(wt.shape[0]):
        out += x[t] * wt[t]
    return out


def flat_rows(x):
    # i * w + j flattens rows: j runs over the image width, not a window
    h, w = x.shape
    out = np.zeros(h * w, dtype=x.dtype)
    flat = x.reshape(-1)
    for i in range(h):
        for j in range(w):
            out[i * w + j] = flat[i * w + j] * 2
    return out


def taps_outside(x, wt):
    # the tap loop around the positions: i + t pairs i (inner) with t (outer), and i
    # runs over the image: no window to specialize
    n = x.shape[0] - wt.shape[0] + 1
    out = np.zeros(n, dtype=x.dtype)
    for t in range(wt.shape[0]):
        for i in range(n):
            out[i] += x[i + t] * wt[t]
    return out


def window_slices(x, wt):
    k = wt.shape[0]
    out = np.zeros(x.shape[0] - k + 1, dtype=x.dtype)
    for i in range(x.shape[0] - k + 1):
        out[i] = np.sum(x[i:i + k] * wt)  # a window slice of wt's size
    return out


def tap_slices(x, wt):
    # the tap loop around whole-image slices: t:t + n moves with t, but n (the image's
    # positions) is not among the tap loop's dimensions: x's dims stay run-time
    n = x.shape[0] - wt.shape[0] + 1
    out = np.zeros(n, dtype=x.dtype)
    for t in range(wt.shape[0]):
        out += x[t:t + n] * wt[t]
    return out


def half_windows(x):
    # a window sized from the image alone: x's dims stay run-time
    n = x.shape[0] // 2
    out = np.zeros(x.shape[0] - n + 1, dtype=x.dtype)
    for i in range(x.shape[0] - n + 1):
        out[i] = np.sum(x[i:i + n])
    return out


def shifted_by_size(x, wt):
    # x[i + k] is an index, not a slice bound: no window
    k = wt.shape[0]
    out = np.zeros(x.shape[0] - k, dtype=x.dtype)
    for i in range(x.shape[0] - k):
        out[i] = x[i + k] * wt[0]
    return out


def static_dim(x, wt):
    k = pyasc.static(wt.shape[0])  # a run-time dimension needed at compile time
    return x[:k].sum(axis=0) * k


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


SHAPES = [((3, 11, 13), 3), ((2, 7, 30), 5), ((4, 20, 9), 3), ((1, 5, 5), 5)]


def test_window_size_is_specialized_image_dims_stay_run_time():
    dyn = hybrid(depthwise, dynamic_shape=True)
    interp = hybrid(depthwise, dynamic_shape=True, target="interpret")
    for shape, k in SHAPES + SHAPES:  # twice: the second round takes the signature cache
        x, wt = _f32(*shape), _f32(shape[0], k, k, seed=1)
        np.testing.assert_allclose(dyn(x, wt), depthwise(x, wt), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(interp(x, wt), depthwise(x, wt), rtol=1e-5, atol=1e-5)
    assert dyn._by_value == {("wt", "shape", 1)}  # (range(k) twice; not x's dims)
    assert len(dyn.specializations) == 2
    assert "wt: float32[?, 3, ?]" in str(dyn.specializations)
    ir = dyn.ir(x, wt)
    assert "(%wt) {axis = 0}" in ir and "(%wt) {axis = 1}" not in ir


def test_window_dimension_of_an_array_in_a_tuple():
    f = hybrid(pair_conv1d, dynamic_shape=True)
    for n, k in [(10, 3), (17, 3), (9, 4), (30, 4), (12, 3)]:
        xw = (_f32(n), _f32(k, seed=2))
        np.testing.assert_allclose(f(xw), pair_conv1d(xw), rtol=1e-5, atol=1e-5)
    assert f._by_value == {("xw", 1, "shape", 0)}
    assert len(f.specializations) == 2


def test_loop_over_a_dimension_that_is_not_a_window_stays_run_time():
    f = hybrid(weighted_rows, dynamic_shape=True)
    for rows, cols in [(3, 5), (4, 7), (2, 2)]:
        x, wt = _f32(rows, cols), _f32(rows, seed=3)
        np.testing.assert_allclose(f(x, wt), weighted_rows(x, wt), rtol=1e-5, atol=1e-5)
    assert not f._by_value
    assert len(f.specializations) == 1


def test_flattened_row_loops_are_not_windows():
    f = hybrid(flat_rows, dynamic_shape=True)
    for shape in [(3, 5), (4, 7), (2, 9)]:
        x = _f32(*shape)
        np.testing.assert_allclose(f(x), flat_rows(x))
    assert not f._by_value
    assert len(f.specializations) == 1


def test_tap_loop_around_the_positions_keeps_the_image_run_time():
    f = hybrid(taps_outside, dynamic_shape=True)
    for n, k in [(10, 3), (17, 3), (12, 3)]:
        x, wt = _f32(n), _f32(k, seed=4)
        np.testing.assert_allclose(f(x, wt), taps_outside(x, wt), rtol=1e-5, atol=1e-5)
    assert not f._by_value
    assert len(f.specializations) == 1


def test_window_slice_size_is_specialized_image_dims_stay_run_time():
    f = hybrid(window_slices, dynamic_shape=True)
    for n, k in [(10, 3), (17, 3), (9, 4), (30, 4), (12, 3)]:
        x, wt = _f32(n), _f32(k, seed=5)
        np.testing.assert_allclose(f(x, wt), window_slices(x, wt), rtol=1e-5, atol=1e-5)
    assert f._by_value == {("wt", "shape", 0)}
    assert len(f.specializations) == 2


@pytest.mark.parametrize("fn", [tap_slices, shifted_by_size, half_windows])
def test_slices_and_indices_that_are_not_windows_stay_run_time(fn):
    f = hybrid(fn, dynamic_shape=True)
    for n, k in [(10, 3), (17, 3), (12, 4)]:
        args = (_f32(n), _f32(k, seed=6))[:1 if fn is half_windows else 2]
        np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-5, atol=1e-5)
    assert not f._by_value
    assert len(f.specializations) == 1


def test_static_of_a_run_time_dimension_stays_a_coded_error():
    # dynamic_shape=True means run-time dimensions: only the window analysis
    # specializes one (pyasc.static of a dimension is E50011, as without windows)
    f = hybrid(static_dim, dynamic_shape=True)
    with pytest.raises(UnsupportedNumpyError, match="compile time") as info:
        f(_f32(6, 3), _f32(2))
    assert not f._by_value
    assert "array sizes are run-time values" in info.value.hint


def linspace_then_window(x, wt):
    # a window loop over wt.shape[0], and the same dimension as a linspace count (a
    # constant need that is not a window's): the coded error, not a specialization
    ramp = np.linspace(0, 1, wt.shape[0])
    out = np.zeros(x.shape[0] - wt.shape[0] + 1, dtype=x.dtype)
    for i in range(out.shape[0]):
        for t in range(wt.shape[0]):
            out[i] += x[i + t] * wt[t] * ramp[t]
    return out


def grown_list(x):
    parts = []
    for k in range(x.shape[0]):
        parts.append(x[k])
    return np.stack(parts)


@pytest.mark.parametrize("fn, error, args", [
    (linspace_then_window, UnsupportedNumpyError, (_f32(10), _f32(3))),
    (grown_list, UnsupportedSyntaxError, (_f32(4, 3),)),
])
def test_other_constant_needs_on_a_dimension_stay_coded_errors(fn, error, args):
    f = hybrid(fn, dynamic_shape=True)
    with pytest.raises(error, match="compile time") as info:
        f(*args)
    assert not f._by_value
    if error is UnsupportedNumpyError:  # the hint says why (a shape is no constant here)
        assert "without dynamic_shape" in info.value.hint


def test_window_sizes_past_the_cap_run_the_generic_kernel(monkeypatch):
    monkeypatch.setattr(window_cap, "MAX_WINDOW_SIZES", 2)
    f = hybrid(depthwise, dynamic_shape=True)
    sizes = [3, 5, 3, 2, 4, 5, 2, 1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for round_ in range(2):  # the second round takes the signature tables
            for k in sizes:
                x, wt = _f32(2, 9, 11, seed=k), _f32(2, k, k, seed=round_)
                np.testing.assert_allclose(f(x, wt), depthwise(x, wt), rtol=1e-5,
                                           atol=1e-5)
    cap = [w for w in caught if issubclass(w.category, WindowSizeCapWarning)]
    assert len(cap) == 1, [str(w.message) for w in caught]
    assert "more than 2 window sizes" in str(cap[0].message)
    assert cap[0].filename == __file__ and issubclass(cap[0].category,
                                                      PyascPerformanceWarning)
    # 3 and 5 specialized, one generic kernel (its window dimension run-time) for 2, 4, 1
    described = str(f.specializations)
    assert len(f.specializations) == 3, described
    for text in ("wt: float32[?, 3, ?]", "wt: float32[?, 5, ?]", "wt: float32[?, ?, ?]"):
        assert text in described, described
    ir = f.ir(_f32(2, 9, 11), _f32(2, 4, 4))  # a size past the cap: the generic IR
    assert "(%wt) {axis = 1}" in ir


def corr_into(x, wt, out):
    # writes its argument, returns nothing: a native entry on the cpu target
    for i in range(out.shape[0]):
        for t in range(wt.shape[0]):
            out[i] += x[i + t] * wt[t]


def test_the_generic_kernel_is_never_the_first_one_a_call_tries(monkeypatch):
    # it takes every size: first in line, it would run an admitted size too
    monkeypatch.setattr(window_cap, "MAX_WINDOW_SIZES", 1)
    f = hybrid(corr_into, dynamic_shape=True, target="cpu")

    def args(k):
        return _f32(12, seed=k), _f32(k, seed=k + 1), np.zeros(13 - k, np.float32)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WindowSizeCapWarning)
        for k in (3, 5, 5, 3, 5, 4):
            got, want = args(k), args(k)
            f(*got)
            corr_into(*want)
            np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-5)
    assert len(f.specializations) == 2  # k=3, and the generic kernel for 5 and 4
    assert f._recent, "no native entries on this machine"
    assert all(native(*args(5)) is MISS for native in f._recent)
    assert f._fast(*args(3)) is not MISS


def test_disk_records_keep_dimensions_only_when_written_for_windows():
    # a record of the reverted build (any dimension a constant was needed for, no
    # "dims") must not specialize a linspace count: its dimensions are dropped
    old = {"by_value": [["x", "shape", 0], ["axis"]]}
    assert facts.by_value_paths(old) == {("axis",)}
    new = {**old, "dims": facts.WINDOW_DIMS}
    assert facts.by_value_paths(new) == {("x", "shape", 0), ("axis",)}


def test_a_fresh_process_learns_the_window_instead_of_loading_the_generic_kernel(
        monkeypatch):
    # the generic kernel has the first compilation's specs (every dimension run-time):
    # stored under the same program key, a fresh process would load it for every size
    monkeypatch.setattr(window_cap, "MAX_WINDOW_SIZES", 1)
    first = hybrid(corr_into, dynamic_shape=True, target="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WindowSizeCapWarning)
        for k in (3, 6):  # 6: the generic kernel, stored on disk
            first(_f32(12), _f32(k), np.zeros(13 - k, np.float32))
    assert "wt: float32[?]" in str(first.specializations)
    fresh = hybrid(corr_into, dynamic_shape=True, target="cpu")  # the same program keys
    x, wt = _f32(12), _f32(6, seed=1)
    got, want = np.zeros(7, np.float32), np.zeros(7, np.float32)
    fresh(x, wt, got)
    corr_into(x, wt, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    described = str(fresh.specializations)
    assert "wt: float32[6]" in described and "wt: float32[?]" not in described, described
