"""Representative kernels on every dtype and every memory layout, compiled vs numpy.

Kernels: an elementwise binary op with broadcasting, reductions with ``axis``/``keepdims``,
slice reads and writes, a loop accumulating rows, ``where``, and casts.  Dtypes: every
dtype pyasc supports.  Layouts and shapes (:data:`CASES`): C and Fortran order, every
axis strided by 2, ``x[::-1]``, ``x[:, ::-1]``, a transposed view, 0-d arrays, size-0
and size-1 dims and odd sizes (7, 13, 257); each with ``dynamic_shape`` off and on.

Every (kernel, dtype, case, dynamic_shape) combination is 1584 compilations, too slow
for the default run; the default is a covering design instead: the test for kernel
``k``, dtype ``d`` and mode ``m`` runs case ``(d + k + 6 m) mod 12``, so every dtype
meets every case (over the six kernels), every kernel meets every case in some mode and
every (kernel, dtype, mode) is compiled once; with ``dynamic_shape`` the kernel also
runs on a second size.  ``PYASC_DIFF_MATRIX=full`` runs the whole product.  A combination numpy itself rejects with a ``TypeError`` (``-`` on bool)
is skipped after checking that the reference raises; any other error of the reference
(``max`` of an empty axis) must be raised by every runner too (``diff.check``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from diff import DTYPES, EXACT, SUM, Tol, check, in_layout, rand

from pyasc import hybrid

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def binary(x, y):
    return x * y + x, np.maximum(x, y), x == y, x + 1, y * 2.5


def reduce(x):
    if x.ndim == 0:
        return x.sum(), x.max(), x.mean(), x.sum(keepdims=True)
    return (x.sum(axis=-1, keepdims=True), x.max(axis=0), x.sum(), x.mean(axis=-1),
            x.min(axis=0, keepdims=True), np.any(x, axis=-1))


def slices(x):
    out = np.zeros_like(x)
    if x.ndim == 0:
        out[...] = x
        return out
    out[1:] = x[:-1]
    out[::2] = x[::-2]
    return out, x[1::3], x[::-1].copy()


def accumulate(x):
    if x.ndim == 0:
        return x * 3
    acc = np.zeros(x.shape[1:], x.dtype)
    count = 0
    for i in range(x.shape[0]):
        if i % 3 == 1:
            continue
        acc += x[i]
        count += 1
    return acc, count


def select(x, y):
    return np.where(x > y, x, y), np.where(x != 0, x, 1), np.where(y == 0, 2.0, x)


def cast(x):
    return (x.astype(np.float64), x.astype(np.float32), x.astype(np.int16),
            x.astype(bool), x.astype(np.float16), np.abs(x).astype(np.uint8))


def _row(x: np.ndarray) -> np.ndarray:
    """A second operand broadcasting against ``x`` along its last axis."""
    return rand(x.shape[-1:], x.dtype.name, seed=7)


def _reduce_tol(x: np.ndarray) -> Tol:
    return SUM(max(x.shape[-1:] + (1,)), scale=9.0) + SUM(x.size, scale=9.0)


KERNELS: dict[str, tuple[Callable, Callable[[np.ndarray], tuple], Callable[[Any], Tol]]] = {
    "binary": (binary, lambda x: (x, _row(x)), lambda x: EXACT),
    "reduce": (reduce, lambda x: (x,), _reduce_tol),
    "slices": (slices, lambda x: (x,), lambda x: EXACT),
    "accumulate": (accumulate, lambda x: (x,), lambda x: EXACT),  # same order as numpy
    "select": (select, lambda x: (x, _row(x)), lambda x: EXACT),
    "cast": (cast, lambda x: (x,), lambda x: EXACT),
}
"""name: (function, arguments from the main input, error budget)."""

COMPILED = {(name, dyn): hybrid(dynamic_shape=dyn)(fn)
            for name, (fn, _, _) in KERNELS.items() for dyn in (False, True)}

CASES: list[tuple[tuple[int, ...], str]] = [
    ((), "C"),                  # 0-d
    ((0, 5), "C"),              # size 0
    ((1, 1), "C"),              # size 1
    ((1, 7), "reversed-inner"),  # x[:, ::-1] with one row
    ((7,), "reversed"),          # x[::-1]
    ((13, 7), "F"),
    ((257,), "step2"),           # x[::2]
    ((3, 257), "transposed"),
    ((7, 13), "step2"),          # x[::2, ::2]
    ((13, 7), "reversed"),       # x[::-1] of a matrix
    ((13, 5), "reversed-inner"),  # x[:, ::-1]
    ((1, 13), "F"),
]
"""(shape, layout) of the main input; layouts are ``diff.LAYOUTS`` keys."""


def _combinations() -> list[tuple[str, str, int, bool]]:
    names = list(KERNELS)
    if os.environ.get("PYASC_DIFF_MATRIX") == "full":
        return [(k, d, c, dyn) for k in names for d in DTYPES for c in range(len(CASES))
                for dyn in (False, True)]
    return [(k, d, (di + ki + 6 * dyn) % len(CASES), bool(dyn))
            for ki, k in enumerate(names) for di, d in enumerate(DTYPES) for dyn in (0, 1)]


def _id(combo: tuple[str, str, int, bool]) -> str:
    k, d, c, dyn = combo
    shape, layout = CASES[c]
    return f"{k}-{d}-{'x'.join(map(str, shape)) or '0d'}-{layout}-{'dyn' if dyn else 'static'}"


def _input(shape: tuple[int, ...], dtype: str, layout: str) -> np.ndarray:
    if np.dtype(dtype).kind == "f":  # multiples of 1/4 in [-9, 9]: exact in float16 too
        x = (rand(shape, "int16", seed=3, low=-36, high=37) / 4).astype(dtype)
    else:
        x = rand(shape, dtype, seed=3, low=-9, high=10)
    return in_layout(x, layout)


@pytest.mark.parametrize("combo", _combinations(), ids=_id)
def test_kernel_dtype_layout(combo):
    name, dtype, case, dynamic = combo
    shape, layout = CASES[case]
    _check(name, dynamic, _input(shape, dtype, layout))
    if dynamic and shape:  # the same kernel on another size of the same layout
        _check(name, dynamic, _input(tuple(d + 2 for d in shape), dtype, layout))


def _check(name: str, dynamic: bool, x: np.ndarray) -> None:
    fn, make_args, tol = KERNELS[name]
    args = make_args(x)
    try:
        fn(*copy.deepcopy(args))
    except TypeError as exc:
        pytest.skip(f"numpy rejects {name} on {x.dtype}: {exc}")
    except Exception:  # noqa: S110 - an input-dependent error every runner must raise
        pass
    check(COMPILED[name, dynamic], *args, rtol=tol(x))


def test_the_covering_design_meets_every_dtype_and_case():
    combos = _combinations()
    cases_per_dtype = {d: {c for _, dd, c, _ in combos if dd == d} for d in DTYPES}
    assert all(len(cs) == len(CASES) for cs in cases_per_dtype.values())
    for k in KERNELS:
        assert {c for kk, _, c, _ in combos if kk == k} == set(range(len(CASES)))
    layouts = {layout for _, layout in CASES}
    assert layouts == {"C", "F", "step2", "reversed", "reversed-inner", "transposed"}
