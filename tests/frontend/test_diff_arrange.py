"""Differential tests: ``tril triu roll diff repeat pad meshgrid linspace`` on the
interpreter, the CPU backend and ascend-sim, float16 included, contiguous and strided
inputs, static and run-time (``dynamic_shape``) lengths."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")
DTYPES = ["float32", "float16", "int16", "bool"]
LAYOUTS = ["C", "step2", "reversed", "transposed"]


def triangles(x, k):
    return (np.tril(x), np.triu(x, 1), np.tril(x, -1), np.triu(x, k), np.tril(x[0]),
            np.triu(x, -9), np.tril(x, 7))


def rolls(x, k):
    return (np.roll(x, 2), np.roll(x, -1, axis=1), np.roll(x, (1, 2), axis=(0, 1)),
            np.roll(x, k, 0), np.roll(x, 13, axis=-1), np.roll(x, (1, 1), axis=(1, 1)),
            np.roll(x[0], k))


def diffs(x):
    return (np.diff(x), np.diff(x, 2, axis=0), np.diff(x, prepend=0), np.diff(x, 0),
            np.diff(x, axis=0, append=x[:1]), np.diff(x, 3))


def repeats(x, k):
    return np.repeat(x, 2), np.repeat(x, 3, axis=1), np.repeat(x, k, axis=0), x.repeat(1)


def pads(x, k):
    return (np.pad(x, 1), np.pad(x, ((1, 2), (0, 3)), constant_values=((1, 2), (3, 4))),
            np.pad(x, 2, mode="edge"), np.pad(x, ((3, 7), (5, 1)), mode="reflect"),
            np.pad(x, (1, 0), constant_values=k), np.pad(x, ((0, 0), (9, 9)), mode="reflect"))


def grids(x):
    return (np.meshgrid(x[0], x[:, 0]), np.meshgrid(x[0], x[:, 1], indexing="ij"),
            np.meshgrid(x[0], x[:, 0], x[1], sparse=True), np.meshgrid(x[0]))


KERNELS = {"triangles": (triangles, 1), "rolls": (rolls, -3), "diffs": (diffs,),
           "repeats": (repeats, 2), "pads": (pads, 5), "grids": (grids,)}


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_rearranging(name, dtype, layout):
    fn, *extra = KERNELS[name]
    x = in_layout(rand((4, 5), dtype, seed=len(name)), layout)
    device = layout in ("C", "step2")
    check(hybrid(fn), x, *extra, runners=RUNNERS if device else DEFAULT_RUNNERS)


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("shape", [(4, 5), (7, 3), (2, 2)])
def test_rearranging_runtime_lengths(name, shape):
    fn, *extra = KERNELS[name]
    check(hybrid(dynamic_shape=True)(fn), rand(shape, "int32", seed=3), *extra,
          runners=("ir", "cpu"))


def spaced(a, b):
    return (np.linspace(0, 1, 7), np.linspace(a, b, 5, endpoint=False),
            np.linspace(2, 10, 4, dtype=np.int32), np.linspace(a, b, 5, retstep=True),
            np.linspace(b, b, 4), np.linspace(a, b, 1), np.linspace(a, b, 0),
            np.linspace(-3, 7, 10, dtype=np.int16))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32"])
def test_linspace_follows_numpys_arithmetic(dtype):
    a, b = np.array([-1.25, 3.5]).astype(dtype)
    check(hybrid(spaced), a, b, runners=DEFAULT_RUNNERS)


def test_linspace_on_the_device():
    @hybrid
    def unit(a, b):
        return np.linspace(a, b, 9), np.linspace(a, b, 4, endpoint=False)
    check(unit, np.float32(-2.0), np.float32(0.75), runners=RUNNERS)
    check(unit, np.float16(0.5), np.float16(3.0), runners=RUNNERS)


def test_refusals_are_coded():
    @hybrid
    def counts(x, r):
        return np.repeat(x, r)

    @hybrid
    def wrap(x):
        return np.pad(x, 1, mode="wrap")

    x = np.ones(3, np.float32)
    with pytest.raises(errors.UnsupportedNumpyError, match="depends on the data"):
        counts(x, np.array([1, 2, 3]))
    with pytest.raises(errors.UnsupportedNumpyError, match="mode='wrap'"):
        wrap(x)


def test_pad_of_an_empty_axis_raises_like_numpy():
    @hybrid
    def edge(x):
        return np.pad(x, 1, mode="edge")
    assert isinstance(check(edge, np.zeros((0,), np.float32), runners=("ir",)), ValueError)


def test_a_runtime_size_where_a_constant_is_needed_is_a_coded_error():
    # a dim of a dynamic_shape array is no scalar argument to specialize on: it was
    # taken for one ("value specialization did not converge", E50050)
    @hybrid(dynamic_shape=True)
    def spaced_by_size(x):
        return np.linspace(0, 1, x.shape[0])

    with pytest.raises(errors.UnsupportedNumpyError, match="compile time"):
        spaced_by_size(np.ones(3))
