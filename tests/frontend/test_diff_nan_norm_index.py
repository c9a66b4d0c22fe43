"""Differential tests: NaN-ignoring reductions, ``np.linalg.norm`` and the index
functions ``unravel_index``/``ravel_multi_index``, on the interpreter, the CPU backend
and ascend-sim, float16 and strided inputs included."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, SUM, Tol, check, in_layout, rand
from numpy.linalg import norm as imported_norm

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")
LAYOUTS = ["C", "step2", "transposed"]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # all-NaN slices


@hybrid
def nans(x):
    return (np.nansum(x), np.nansum(x, axis=0), np.nanprod(x, axis=1, keepdims=True),
            np.nanmax(x), np.nanmax(x, axis=1), np.nanmin(x, axis=0, keepdims=True),
            np.nanmean(x), np.nanmean(x, axis=1), np.nanmin(x), np.nanmean(x, axis=0),
            np.nanargmax(x), np.nanargmin(x, axis=1), np.nanargmax(x, axis=1, keepdims=True))


@hybrid
def nan_positions(x):
    return np.nanargmax(x, axis=0), np.nanargmin(x, axis=0, keepdims=True)


def with_nans(dtype: str, layout: str) -> np.ndarray:
    x = rand((4, 5), dtype, seed=2)
    if x.dtype.kind == "f":
        x[1, 2] = x[3, 0] = np.nan
        x[:, 3] = np.nan  # an all-NaN column: NaN for nanmax/nanmin/nanmean, 0 for nansum
        x[2] = np.nan
    return in_layout(x, layout)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_reductions(dtype, layout):
    runners = RUNNERS if dtype != "float64" and layout != "transposed" else DEFAULT_RUNNERS
    x = with_nans(dtype, layout)
    if x.dtype.kind == "f":
        x[2] = 1.0  # nanargmin/nanargmax along axis 1 need a non-NaN in every row
    check(nans, x, runners=runners, rtol=SUM(5))
    # a column of NaN: numpy's ValueError, on every runner
    result = check(nan_positions, with_nans(dtype, layout), runners=runners)
    assert isinstance(result, ValueError) == (dtype != "int16")


@hybrid
def norms(x):
    return (np.linalg.norm(x), np.linalg.norm(x, axis=0), np.linalg.norm(x, 1, axis=1),
            np.linalg.norm(x, np.inf, axis=0, keepdims=True), imported_norm(x[0], -np.inf),
            np.linalg.norm(x, 0, axis=1), np.linalg.norm(x[1], 3), np.linalg.norm(x, 1),
            np.linalg.norm(x, np.inf), np.linalg.norm(x, -1), np.linalg.norm(x, -np.inf),
            np.linalg.norm(x, "fro", keepdims=True), np.linalg.norm(x, None, (1, 0)),
            np.linalg.norm(x, np.inf, (1, 0), keepdims=True), np.linalg.norm(x[0], 2),
            np.linalg.norm(x, keepdims=True), np.linalg.norm(x, axis=-1, keepdims=True))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_linalg_norm(dtype, layout):
    runners = RUNNERS if dtype in ("float32", "float16") and layout != "transposed" else \
        DEFAULT_RUNNERS
    check(norms, in_layout(rand((4, 5), dtype, seed=4), layout), runners=runners,
          rtol=Tol(math=2, terms=20))


def test_norms_that_need_singular_values_are_refused():
    @hybrid
    def spectral(x):
        return np.linalg.norm(x, 2)

    @hybrid
    def three_axes(x):
        return np.linalg.norm(x, 1, axis=(0, 1, 2))

    with pytest.raises(errors.UnsupportedNumpyError, match="singular values"):
        spectral(np.ones((2, 2)))
    with pytest.raises(errors.ShapeInferenceError, match="Improper number"):
        three_axes(np.ones((2, 2, 2)))


@hybrid
def index_math(i, a, b, ia):
    return (np.unravel_index(i, (3, 4, 5)), np.unravel_index(i, (6, 10), order="F"),
            np.ravel_multi_index((a, b), (7, 9)),
            np.ravel_multi_index((a, b), (3, 4), mode="wrap"),
            np.ravel_multi_index((a, b), (4, 5), mode="clip", order="F"),
            np.unravel_index(ia, (4, 5)), np.ravel_multi_index((ia, ia), (40, 25)))


@pytest.mark.parametrize("args", [(17, 3, 2), (0, 0, 0), (59, 6, 8), (5, -1, 12)])
def test_index_functions(args):
    ia = np.array([0, 5, 19], np.int32)
    got = check(index_math, *args, ia, runners=RUNNERS)
    assert args[1] >= 0 or isinstance(got, ValueError)


def test_index_functions_raise_like_numpy():
    ia = np.array([0, 5, 19])
    assert isinstance(check(index_math, 60, 3, 2, ia), ValueError)  # 60 >= 3 * 4 * 5
    assert isinstance(check(index_math, 6, 7, 2, ia), ValueError)  # a == 7 is outside
    assert isinstance(check(index_math, 6, 1, 2, ia * 2), ValueError)  # 38 >= 20
