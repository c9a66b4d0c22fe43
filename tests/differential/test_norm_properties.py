"""Seeded property tests of reductions over random axes (``keepdims``, views) and of
NCHW batch-norm on ``ascend-sim`` (forms in ``norm_forms``), against the Python
function: float16 draws against the float32 computation rounded to float16 (numpy sums
float16 in float16, the device in float32).  The default run draws a few seeds; the
long sweep is ``slow`` (README, "Differential fuzzing at scale")::

    PYTHONPATH=. python -m pytest -m slow -n 0 tests/differential/test_norm_properties.py
"""

from __future__ import annotations

import warnings

import norm_forms as nf
import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError
from pyasc.testing import compare


def reference(case: nf.Case, args: tuple) -> np.ndarray:
    """The Python result; float16 inputs: computed in float32, rounded to float16."""
    want = np.asarray(case.fn(*args))
    if any(a.dtype == np.float16 for a in args):
        wide = case.fn(*(a.astype(np.float32) for a in args))
        want = np.asarray(wide).astype(want.dtype)
    return want


def check_case(case: nf.Case, target: str = "ascend-sim") -> None:
    """Every call through one compiled function equals the reference within rtol
    (relative to the result's largest magnitude)."""
    compiled = hybrid(case.fn, target=target, dynamic_shape=case.dynamic)
    for args in case.calls:
        want = reference(case, args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # performance notes
            try:
                got = compiled(*args)
            except DeviceUnsupportedError as exc:  # a documented device limit (E50010)
                pytest.skip(f"{target}: {str(exc).splitlines()[0]}")
        finite = np.abs(np.asarray(want, np.float64))
        atol = case.rtol * float(np.max(finite[np.isfinite(finite)], initial=1.0))
        problems = compare(want, got, target, case.rtol, atol)
        shapes = [(a.shape, a.dtype.name, a.strides) for a in args]
        assert not problems, f"dynamic={case.dynamic} {shapes}: {problems}\n{case.source}"


@pytest.mark.parametrize("seed", range(3))
def test_reductions_over_random_axes_keep_numpys_values(seed):
    check_case(nf.draw_reduction(seed))


@pytest.mark.parametrize("seed", range(2))
def test_batchnorms_keep_numpys_values(seed):
    check_case(nf.draw_batchnorm(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 80))
def test_reductions_sweep(seed):
    check_case(nf.draw_reduction(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 50))
def test_batchnorms_sweep(seed):
    check_case(nf.draw_batchnorm(seed))
