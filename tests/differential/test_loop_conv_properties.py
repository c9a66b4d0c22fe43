"""Seeded property tests of convolutions written with loops on ``ascend-sim`` (forms in
``loop_conv_forms``: the cube's im2col route ``loop-conv-cube``, the run-time channel
stencil behind ``channel-interchange``, or the stencil/scalar kernels), against the
Python function.  Small-integer draws must be exact (every order of the sum is exact);
real-valued draws within the bound of an ``n``-term sum in any order.  The default run
draws a few seeds; the long sweep is ``slow`` (README, "Differential fuzzing at scale")::

    PYTHONPATH=. python -m pytest -m slow -n 0 tests/differential/test_loop_conv_properties.py
"""

from __future__ import annotations

import warnings

import loop_conv_forms as lcf
import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError


def sum_bound(case: lcf.Case, args: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The float64 result and the bound of the sum's rounding in any order:
    ``(n + 2) * eps * (sum |x * w| + |b|)`` (ReLU and the final cast only shrink it)."""
    wide = [np.asarray(a, np.float64) for a in args]
    exact = np.asarray(case.fn(*wide))
    magnitude = np.asarray(case.fn(*(np.abs(a) for a in wide)))
    eps = float(np.finfo(args[0].dtype).eps)
    return exact, (lcf.tap_count(case, args) + 2) * eps * magnitude + eps


def check_case(case: lcf.Case, target: str = "ascend-sim") -> None:
    """Every call through one compiled function equals the Python function (exact
    draws) or the float64 result within the sum's bound."""
    compiled = hybrid(case.fn, target=target, dynamic_shape=case.dynamic)
    for args in case.calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # performance notes
            try:
                got = np.asarray(compiled(*args))
            except DeviceUnsupportedError as exc:  # a documented device limit (E50010)
                pytest.skip(f"{target}: {str(exc).splitlines()[0]}")
        shapes = [a.shape for a in args]
        where = f"dynamic={case.dynamic} {shapes} {args[0].dtype}\n{case.source}"
        if case.exact:
            want = np.asarray(case.fn(*args))
            assert got.dtype == want.dtype and got.shape == want.shape, where
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, f"{bad.size} wrong, first {got.flat[bad[0]]} " \
                                  f"!= {want.flat[bad[0]]}: {where}"
        else:
            exact, bound = sum_bound(case, args)
            err = np.abs(got.astype(np.float64) - exact)
            assert got.shape == exact.shape, where
            assert np.all(err <= bound), f"max error {err.max()} over {where}"


@pytest.mark.parametrize("seed", range(4))
def test_loop_convs_keep_numpys_values(seed):
    check_case(lcf.draw(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4, 80))
def test_loop_convs_sweep(seed):
    check_case(lcf.draw(seed))
