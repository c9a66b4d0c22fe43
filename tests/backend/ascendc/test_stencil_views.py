"""Stencils over views of their input, and tap loops with conditions, are stencil kernels.

Two spellings that ran correctly but slowly (issue 19):

* a stencil over a row/column-offset view of the argument (``y = x[:, 1:-1]``, ``x[1:,
  2:]``, ``x[:, :w - 1]``, then a 3x3 blur of ``y`` by slices or loops) was a ``flat``
  vector kernel reading every window as its own input (4.7x the minimum GM bytes): the
  windows were views of a view, and the stencil's base must be C-contiguous.  The match
  now reads them as windows of ``x`` at the views' added offsets (static and run-time
  starts).  A stencil over an argument that is itself a numpy view (``big[:, 3:70]``)
  reads it as a launch passes it, C-contiguous.  Views with an inner stride computed in
  the function (``x[:, ::2]``, ``x.T``) stay ``flat`` (their copy would be the host's).
  A tile copies only the columns its windows read (``x[:, 5:17]`` of a wide ``x``).
* a tap loop with a condition on the tap indices only (``if p + q > 0``, ``if p != 1 or
  q != 1``, ``continue``, ``elif``) was a scalar kernel (8x the GM bytes): after the
  taps unroll the condition is a constant, and ``batch-loops`` now takes its branch.

Every result is bit-equal to ``target="interpret"`` (the same order of operations),
float32 and float16, static and ``dynamic_shape=True`` (one specialization for odd
sizes), with GM traffic within 1.25x the minimum (each input read once, the output
written once) and no scalar GM access.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid

RNG = np.random.default_rng(1927)
KIND = {"StencilKernel": "T", "VectorKernel": "V", "ScalarKernel": "S"}


def _blur(y):
    return (y[:-2, :-2] + y[:-2, 1:-1] + y[:-2, 2:] + y[1:-1, :-2] + y[1:-1, 1:-1]
            + y[1:-1, 2:] + y[2:, :-2] + y[2:, 1:-1] + y[2:, 2:]) / 9


def blur_inner_cols(x):
    return _blur(x[:, 1:-1])


def blur_offset_view(x):
    return _blur(x[1:, 2:])


def blur_first_cols(x):
    return _blur(x[:, :x.shape[1] - 1])


def blur_every_other_col(x):
    return _blur(x[:, ::2])


def blur_transposed(x):
    return _blur(x.T)


def cross_loops_rows_view(x):
    y = x[1:, :]
    h, w = y.shape
    out = np.zeros((h - 2, w - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            out[i, j] = (y[i, j + 1] + y[i + 1, j] + y[i + 1, j + 1] + y[i + 1, j + 2]
                         + y[i + 2, j + 1]) / 5
    return out


def taps_sum_positive(x, w):
    h, ww = x.shape
    out = np.zeros((h - 2, ww - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(ww - 2):
            acc = x[i, j] * 0
            for p in range(3):
                for q in range(3):
                    if p + q > 0:
                        acc += x[i + p, j + q] * w[p, q]
            out[i, j] = acc
    return out


def taps_not_centre(x, w):
    h, ww = x.shape
    out = np.zeros((h - 2, ww - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(ww - 2):
            acc = x[i, j] * 0
            for p in range(3):
                for q in range(3):
                    if p != 1 or q != 1:
                        acc += x[i + p, j + q] * w[p, q]
            out[i, j] = acc
    return out


def taps_continue(x, w):
    h, ww = x.shape
    out = np.zeros((h - 2, ww - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(ww - 2):
            acc = x[i, j] * 0
            for p in range(3):
                for q in range(3):
                    if p == 1 and q == 1:
                        continue
                    acc += x[i + p, j + q] * w[p, q]
            out[i, j] = acc
    return out


def taps_elif(x, w):
    h, ww = x.shape
    out = np.zeros((h - 2, ww - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(ww - 2):
            acc = x[i, j] * 0
            for p in range(3):
                for q in range(3):
                    if p == q:
                        acc = acc + 2 * x[i + p, j + q]
                    elif p < q:
                        acc = acc - x[i + p, j + q] * w[p, q]
            out[i, j] = acc
    return out


def taps_data_condition(x, w):
    h, ww = x.shape
    out = np.zeros((h - 2, ww - 2), dtype=x.dtype)
    for i in range(h - 2):
        for j in range(ww - 2):
            acc = x[i, j] * 0
            for p in range(3):
                for q in range(3):
                    if x[i + p, j + q] > 0.5:
                        acc += x[i + p, j + q] * w[p, q]
            out[i, j] = acc
    return out


def _run(fn, args: tuple) -> tuple[list[str], float, int]:  # noqa: ANN001
    """Run ``fn`` (a HybridFunction on ascend-sim) against its interpret twin: the
    kinds launched, GM bytes over the minimum, scalar GM bytes; asserts bit-equality."""
    ref = hybrid(fn.__wrapped__, target="interpret",
                 dynamic_shape=fn.options.dynamic_shape)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(*args)
        k = fn.kernel(*args)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)
    kinds = {x.name: KIND.get(type(x).__name__, "?") for x in k.ascend.kernels}
    c = {key: k.last_counters.get(key, 0) for key in  # nothing launched: no counters
         ("gm_scalar_read_bytes", "gm_scalar_write_bytes", "gm_to_ub_bytes", "ub_to_gm_bytes")}
    scalar = c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + scalar
    minimum = sum(a.nbytes for a in args) + got.nbytes
    return [kinds[n] for n, _ in k.last_kernels], gm / minimum, scalar


def _image(shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    return RNG.random(shape).astype(dtype)


VIEWS = [blur_inner_cols, blur_offset_view, blur_first_cols, cross_loops_rows_view]
TAPS = [taps_sum_positive, taps_not_centre, taps_continue, taps_elif]
# (rows, cols) per configuration: odd sizes, several tiles; run-time shapes: one
# specialization for two shapes
STATIC_SHAPE, DYNAMIC_SHAPES = (41, 71), [(37, 53), (70, 129)]


def _args(fn, shape: tuple[int, int], dtype: type) -> tuple:  # noqa: ANN001
    weights = (_image((3, 3), dtype),) if fn in TAPS or fn is taps_data_condition else ()
    return (_image(shape, dtype), *weights)


def _assert_stencil(fn, args: tuple) -> None:  # noqa: ANN001
    kinds, ratio, scalar = _run(fn, args)
    assert kinds == ["T"], kinds
    assert scalar == 0
    assert ratio <= 1.25, ratio


# (cross_loops_rows_view with static shapes was a stencil already: batch_views folds
# ``y[i, j]`` into ``x[1 + i, j]``; its run-time form was not, DYNAMIC below)
STATIC = [f for f in VIEWS + TAPS if f is not cross_loops_rows_view]


@pytest.mark.parametrize("fn", STATIC, ids=[f.__name__ for f in STATIC])
def test_static_float32(fn):
    _assert_stencil(hybrid(fn, target="ascend-sim"), _args(fn, STATIC_SHAPE, np.float32))


@pytest.mark.parametrize("fn", [blur_offset_view, taps_not_centre],
                         ids=["blur_offset_view", "taps_not_centre"])
def test_static_float16(fn):
    _assert_stencil(hybrid(fn, target="ascend-sim"), _args(fn, STATIC_SHAPE, np.float16))


DYNAMIC = [blur_inner_cols, cross_loops_rows_view, taps_sum_positive]


@pytest.mark.parametrize("fn", DYNAMIC, ids=[f.__name__ for f in DYNAMIC])
def test_dynamic_shapes_one_specialization(fn):
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    for shape in DYNAMIC_SHAPES:
        _assert_stencil(sim, _args(fn, shape, np.float32))
    assert len(sim.specializations) == 1


def test_argument_views_with_a_row_stride():
    sim = hybrid(blur_inner_cols, target="ascend-sim")
    big = _image((83, 150))
    for view in (big[:41, 3:70], big[1::2, 2:73]):  # column range; every other row
        assert not view.flags.c_contiguous
        _assert_stencil(sim, (view,))
    dyn = hybrid(blur_inner_cols, target="ascend-sim", dynamic_shape=True)
    for view in (big[:41, 3:70], big[2:, 1:130]):
        _assert_stencil(dyn, (view,))


def blur_narrow_view(x):
    return _blur(x[:, 5:17])


def test_narrow_view_reads_its_columns_only():
    """A tile copies the columns its windows read (a GM stride past the rest of the
    row), not whole rows of ``x``: 12 of 300 columns here."""
    x = _image((41, 300))
    for dynamic in (False, True):
        sim = hybrid(blur_narrow_view, target="ascend-sim", dynamic_shape=dynamic)
        kinds, ratio, _ = _run(sim, (x,))
        assert kinds == ["T"], kinds
        view_bytes = x[:, 5:17].nbytes + 39 * 10 * 4  # the view read once, the output
        assert ratio * (x.nbytes + 39 * 10 * 4) <= 1.25 * view_bytes, ratio


def test_wide_rows_column_tiles_of_a_view():
    """Rows wider than a tile holds (run-time column tiles) of a column-offset view."""
    sim = hybrid(blur_offset_view, target="ascend-sim", dynamic_shape=True)
    _assert_stencil(sim, (_image((9, 9001)),))


def test_empty_and_tiny_views_at_run_time():
    """Views with no interior (``x[:, 1:-1]`` of 3 columns leaves 1: no window of 3):
    the stencil launches nothing, the result is the empty array interpret gives."""
    sim = hybrid(blur_inner_cols, target="ascend-sim", dynamic_shape=True)
    for shape in [(3, 5), (5, 3), (2, 2), (4, 4)]:
        kinds, _, _ = _run(sim, (_image(shape),))
        assert kinds in ([], ["T"]), (shape, kinds)


def test_inner_strided_views_and_data_conditions_stay_correct():
    """``x[:, ::2]`` and ``x.T`` (computed in the function: no unit inner stride) and a
    condition on the data stay on their former paths, equal to interpret."""
    for fn in (blur_every_other_col, blur_transposed):
        _run(hybrid(fn, target="ascend-sim"), (_image(STATIC_SHAPE),))
    _run(hybrid(taps_data_condition, target="ascend-sim"),
         _args(taps_data_condition, (23, 37), np.float32))
