"""Seeded property tests of the ``cols`` schedule, the split leading/trailing
reductions and the conv MIX kernel on ``ascend-sim`` (forms in ``cols_conv_forms``),
against the Python function.  The default run draws a few seeds; the long sweep is
``slow`` (README, "Differential fuzzing at scale")::

    PYTHONPATH=. python -m pytest -m slow -n 0 tests/differential/test_cols_conv_properties.py
"""

from __future__ import annotations

import warnings

import cols_conv_forms as ccf
import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError
from pyasc.testing import compare


def check_case(case: ccf.Case) -> None:
    """ascend-sim equals the Python function; float16 against the float32 computation
    rounded to float16 (numpy sums float16 columns in float16: its ``var(axis=0)`` of
    4097 rows is off by 8%, the device accumulates in float32)."""
    want = case.fn(*case.args)
    if any(a.dtype == np.float16 for a in case.args):
        wide = case.fn(*(a.astype(np.float32) if a.dtype == np.float16 else a
                         for a in case.args))
        want = np.asarray(wide).astype(np.asarray(want).dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # performance notes
        try:
            got = hybrid(case.fn, target="ascend-sim")(*case.args)
        except DeviceUnsupportedError as exc:  # a documented device limit (E50010)
            pytest.skip(str(exc).splitlines()[0])
    shapes = [(a.shape, a.dtype.name, a.strides) for a in case.args]
    atol = case.rtol * float(np.max(np.abs(np.asarray(want, np.float64)), initial=1.0))
    problems = compare(want, got, "ascend-sim", case.rtol, atol)
    assert not problems, f"{getattr(case.fn, '__name__', case.fn)} {shapes}: {problems}"


@pytest.mark.parametrize("seed", range(3))
def test_column_reductions_keep_numpys_values(seed):
    check_case(ccf.draw_cols(seed))


@pytest.mark.parametrize("seed", range(2))
def test_conv2d_epilogues_keep_numpys_values(seed):
    check_case(ccf.draw_conv(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 60))
def test_column_reductions_sweep(seed):
    check_case(ccf.draw_cols(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 40))
def test_conv2d_epilogues_sweep(seed):
    check_case(ccf.draw_conv(seed))
