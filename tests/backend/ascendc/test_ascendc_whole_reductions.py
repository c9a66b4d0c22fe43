"""Whole-array reductions of a 1-D array followed by arithmetic, on ascend-sim.

In 1-D, a reduction over axis 0 is both a row reduction (of the one row) and a
whole-array one.  It is a row reduction only when an array in the same kernel uses it
(``x - x.sum()``: the one row is broadcast back); ``x.sum() * 2``, ``np.mean(x)``,
``np.sum(x) / x.size`` are whole-array reductions split across blocks, as in 2-D (they
used to end in a bare ``AssertionError`` in ``fn.ascendc()`` and on ascend-sim).  A sum
used both ways (``x - x.sum()`` and ``x.sum()`` returned) comes back from its one-row
column as a scalar.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[2]
if str(TESTS / "frontend") not in sys.path:
    sys.path.insert(0, str(TESTS / "frontend"))

from diff import SUM, Tol, check, rand  # noqa: E402

from pyasc import hybrid  # noqa: E402
from pyasc.backend.ascendc import PyascPerformanceWarning, lower_program  # noqa: E402
from pyasc.backend.ascendc.vec_kernel import VectorKernel  # noqa: E402


def times_two(x):
    return x.sum() * 2


def mean(x):
    return np.mean(x)


def var(x):
    return x.var()


def std(x):
    return x.std()


def per_element(x):
    return np.sum(x) / x.size


def centred_and_total(x):
    return x - x.sum(), x.sum()


ISSUE = [times_two, mean, var, std, per_element]


def suite(x):
    return (x.sum() * 2, np.mean(x), x.var(), x.std(), np.sum(x) / x.size, x - x.sum(),
            x.sum(), x.max() - 1)


SUITE = {dyn: hybrid(dynamic_shape=dyn)(suite) for dyn in (False, True)}


@pytest.mark.parametrize("fn", ISSUE + [centred_and_total], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_ascendc_source_of_a_1d_reduction_then_arithmetic(fn, dtype):
    compiled = hybrid(fn)
    source = compiled.ascendc(rand((100,), dtype))
    assert f"{fn.__name__}_0" in source


@pytest.mark.parametrize("n", [100, 1 << 16])
@pytest.mark.parametrize("fn", [times_two, mean, per_element], ids=lambda f: f.__name__)
def test_a_1d_whole_array_reduction_is_split_across_blocks(fn, n):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar fallback
        ap = lower_program(hybrid(fn).specialize(rand((n,))))
    vector = [k for k in ap.kernels if isinstance(k, VectorKernel)]
    assert len(vector) == 1 and vector[0].schedule == "reduce"


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_1d_reductions_then_arithmetic_on_ascend_sim(dyn):
    sizes = [(1000,), (7,), (1 << 15,)] if dyn else [(1000,)]
    for shape in sizes:
        n = shape[0]
        check(SUITE[dyn], rand(shape), runners=("ascend-sim",), rtol=Tol(math=1) + SUM(n))
