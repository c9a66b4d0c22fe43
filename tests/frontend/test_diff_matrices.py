"""Differential tests: ``flip fliplr flipud tile kron cross diag diagonal trace
count_nonzero select isclose allclose`` on the interpreter, the CPU backend and
ascend-sim, float16 and non-contiguous inputs included."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, Tol, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")
DTYPES = ["float32", "float16", "int32", "int8"]


def _device(dtype: str, layout: str = "C") -> tuple[str, ...]:
    return RUNNERS if dtype in ("float32", "float16", "int32") and layout == "C" \
        else DEFAULT_RUNNERS


@hybrid
def flips(x):
    return (np.flip(x), np.flip(x, 0), np.flip(x, axis=-1), np.flip(x, (0, 1)),
            np.fliplr(x), np.flipud(x), np.flip(x[0]))


@hybrid
def tiles(x, v):
    return (np.tile(x, 2), np.tile(x, (2, 1)), np.tile(x, (1, 2, 3)), np.tile(v, 3),
            np.tile(v, (2, 2)), np.kron(x, x[:2, :3]), np.kron(v, v[:2]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "step2", "transposed"])
def test_flip_tile_kron(dtype, layout):
    x = in_layout(rand((3, 5), dtype), layout)
    v = rand((4,), dtype, seed=1)
    check(flips, x, runners=_device(dtype, layout))
    check(tiles, x, v, runners=_device(dtype, layout))


@hybrid
def diagonals(x, v):
    return (np.diag(x), np.diag(x, 1), np.diag(x, -2), np.diag(x, 7), np.diag(v),
            np.diag(v, 2), np.diag(v, -1), np.diagonal(x), np.diagonal(x, 1),
            x.diagonal(-1), np.trace(x), np.trace(x, -1), x.trace(2))


@hybrid
def diagonals_3d(t):
    return (np.diagonal(t, 0, 1, 2), np.diagonal(t, 1, 0, 2), np.trace(t, 0, 2, 1),
            np.trace(t, axis1=1, axis2=0, dtype=np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_diag_diagonal_trace(dtype, layout):
    x = in_layout(rand((4, 5), dtype), layout)
    sums = Tol(terms=4)  # trace: the device adds in its own order
    check(diagonals, x, rand((3,), dtype, seed=2), runners=_device(dtype, layout),
          rtol=sums)
    check(diagonals_3d, in_layout(rand((3, 4, 5), dtype, seed=3), layout), rtol=sums)


@hybrid
def crosses(a, b):
    return (np.cross(a, b), np.cross(a[0], b), np.cross(a.T, b.T, axis=0),
            np.cross(a, b, axisc=0))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int16"])
def test_cross(dtype):
    a, b = rand((4, 3), dtype), rand((4, 3), dtype, seed=5)
    check(crosses, a, b, runners=_device(dtype))
    check(crosses, in_layout(a, "step2"), in_layout(b, "transposed"))


def test_cross_of_2_vectors_is_refused_with_a_hint():
    @hybrid
    def two(a, b):
        return np.cross(a, b)

    with pytest.raises(errors.UnsupportedNumpyError, match="3-vectors"):
        two(np.ones(2), np.ones(2))


@hybrid
def counting(x):
    return (np.count_nonzero(x), np.count_nonzero(x, axis=0),
            np.count_nonzero(x, axis=1, keepdims=True), np.count_nonzero(x > 0))


@hybrid
def selecting(x, y):
    return (np.select([x > 0.5, x < -0.5], [x, y]),
            np.select([x > 0, y > 0], [x * 2, 1.5], default=-1),
            np.select((x < y,), (y,), x), np.select([x > y], [3]))


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_count_nonzero_and_select(dtype, layout):
    x = in_layout(rand((5, 7), dtype, low=-2, high=3), layout)
    check(counting, x, runners=_device(dtype, layout))
    if dtype != "bool":
        y = rand((5, 7), dtype, seed=4)
        check(selecting, x, y, runners=_device(dtype, layout))


@hybrid
def closeness(a, b):
    return (np.isclose(a, b), np.isclose(a, b, rtol=0.1), np.isclose(a, b, atol=0.5),
            np.isclose(a, b, equal_nan=True), np.isclose(a, 1.0), np.allclose(a, b),
            np.allclose(a, a), np.allclose(a, b, rtol=10.0, atol=10.0, equal_nan=True),
            np.isclose(a, b[0]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16"])
@pytest.mark.parametrize("layout", ["C", "step2"])
def test_isclose_allclose(dtype, layout):
    a = rand((6, 5), dtype)
    b = (a + rand((6, 5), dtype, seed=6) * np.asarray(0.01).astype(a.dtype)).astype(dtype)
    if a.dtype.kind == "f":
        a[0, :4] = [np.nan, np.inf, -np.inf, np.inf]
        b[0, :4] = [np.nan, np.inf, np.inf, np.nan]
    device = _device(dtype, layout) if dtype != "float64" else DEFAULT_RUNNERS
    check(closeness, in_layout(a, layout), in_layout(b, layout), runners=device)


def test_select_refuses_non_boolean_conditions():
    @hybrid
    def bad(x):
        return np.select([x], [x])

    with pytest.raises(errors.TypeMismatchError, match="boolean"):
        bad(np.ones(3))


@hybrid
def diagonal_masks(x, n, k):
    # N, M from a shape and from a run-time int; k compile-time and run-time
    rows, cols = x.shape
    return (np.eye(rows), np.eye(rows, cols, 1, np.int32), np.eye(n, dtype=x.dtype),
            np.identity(cols, x.dtype) @ x.T, np.tri(rows, cols, k=-1, dtype=np.int8),
            np.eye(n, n + 2, k), np.tri(n, k=k, dtype=bool), x * np.eye(rows, cols, -k))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("shape, n, k", [((3, 5), 4, 1), ((4, 2), 1, -2), ((2, 2), 3, 7)])
def test_eye_identity_tri(dtype, shape, n, k):
    check(diagonal_masks, rand(shape, dtype), n, k, runners=_device(dtype))
