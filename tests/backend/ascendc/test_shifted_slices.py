"""Shifted slices of one array without loops (``x[:-2, 1:-1] + x[2:, 1:-1] ...``) under
``dynamic_shape=True`` are the stencil kernel, as with static shapes.

numpy's clamping used to give ``x[:-2]``, ``x[1:-1]`` and ``x[2:]`` three different size
expressions and the starts ``min(1, h)``, ``min(2, h)``, so ``stencil-windows`` saw no
common output domain and the group was a ``flat`` kernel reading every view (4.8x the
minimum GM bytes for nine views).  Slices now get one canonical size expression
(``slicing._length_form``) and a clamped start of the view's own extent reads as its
constant (``window_values.window_start``; the host's guard checks it).  Every shape runs
one compiled kernel, equal (bit for bit: the same order of operations) to
``target="interpret"``, including the shapes whose result is empty (``h < 3``).
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid

RNG = np.random.default_rng(19)
SHAPES = [(0, 5), (1, 1), (2, 9), (3, 3), (3, 17), (9, 2), (100, 1), (33, 47)]


def shift9(x):
    return (x[:-2, :-2] + x[:-2, 1:-1] + x[:-2, 2:]
            + x[1:-1, :-2] + x[1:-1, 1:-1] + x[1:-1, 2:]
            + x[2:, :-2] + x[2:, 1:-1] + x[2:, 2:]) / 9


def cross5(x):
    return (x[1:-1, :-2] + x[1:-1, 2:] + x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, 1:-1]) * 0.2


def diff_rows(x):
    return x[1:] - x[:-1]


def diff_cols(x):
    return x[:, 1:] - x[:, :-1]


def shift_cols(x):
    return x[:, 2:] + x[:, :-2]


def shift_named(x):
    h, w = x.shape  # bounds of the extents themselves: the same lengths as x[:-2] ...
    return x[0:h - 2, 1:w - 1] - x[2:h, 1:w - 1] + x[1:h - 1, 0:w - 2] * x[1:h - 1, 2:w]


def _kinds(k) -> list[str]:
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _check_shapes(fn, dtype, shapes, view: bool = False) -> None:
    dyn = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    interp = hybrid(fn, target="interpret", dynamic_shape=True)
    for shape in shapes:
        x = RNG.random(shape).astype(dtype)
        if view:  # a strided view of a larger array
            x = RNG.random((shape[0] + 2, shape[1] + 3)).astype(dtype)[1:-1, 2:-1]
        want = interp(x)
        got = dyn(x)
        assert got.dtype == want.dtype and got.shape == want.shape, shape
        np.testing.assert_array_equal(got, want, err_msg=str(shape))
        if got.size == 0 or view:
            continue
        k = dyn.kernel(x)
        assert _kinds(k) == ["StencilKernel"], (shape, _kinds(k))
        c = k.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        if x.size >= 1024:
            gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
            assert gm <= 1.2 * (x.nbytes + got.nbytes), (shape, gm)
    assert view or len(dyn.specializations) == 1


@pytest.mark.parametrize("fn", [shift9, cross5, diff_rows, diff_cols, shift_cols,
                                shift_named])
def test_dynamic_shifted_slices_are_one_stencil_kernel(fn):
    _check_shapes(fn, np.float32, SHAPES)


@pytest.mark.parametrize("fn", [shift9, diff_rows])
def test_dynamic_shifted_slices_float16(fn):
    _check_shapes(fn, np.float16, [(2, 2), (3, 17), (33, 47)])


def test_dynamic_shifted_slices_of_a_view_are_numpys():
    # a strided argument is not a stencil base (it stays a flat kernel): still equal
    _check_shapes(shift9, np.float32, [(1, 4), (5, 7), (33, 47)], view=True)
