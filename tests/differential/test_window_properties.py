"""Seeded property tests of the newest loop lowerings (``window_forms``): each seed draws
a form (window loops of a run-time size, window-slice convolutions, edge windows,
device transposes, ``pyasc.ops.conv2d``), a dtype, views and sizes, static or run-time
shapes, and runs 2-3 calls through one compiled function on ``cpu`` and ``ascend-sim``
against the Python function.  The default run draws a few seeds per form; the long
sweep is ``slow`` (README, "Differential fuzzing at scale")::

    PYTHONPATH=. python -m pytest -m slow -n 0 tests/differential/test_window_properties.py
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import window_forms as wf

from pyasc import hybrid, ops
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError
from pyasc.errors import WindowSizeCapWarning
from pyasc.testing import compare, parametrize_targets

TARGETS = ("cpu", "ascend-sim")


def check_case(case: wf.Case, target: str) -> None:
    """Every call of ``case`` through one compiled function equals the Python result."""
    compiled = hybrid(case.fn, target=target, dynamic_shape=case.dynamic)
    for args in case.calls:
        want = case.fn(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # performance notes, the window-size cap
            try:
                got = compiled(*args)
            except DeviceUnsupportedError as exc:  # a documented device limit (E50010)
                pytest.skip(f"{target}: {str(exc).splitlines()[0]}")
        shapes = [(a.shape, a.dtype.name, a.strides) if hasattr(a, "shape") else a
                  for a in args]
        problems = compare(want, got, target, *case.tol)
        assert not problems, f"{case.fn.__name__} dynamic={case.dynamic} {shapes}: {problems}"


# one seed per form in the default run: seed = 1000 * form index + k
QUICK = [(form, 1000 * i) for i, form in enumerate(wf.FORMS)]


@parametrize_targets(TARGETS)
@pytest.mark.parametrize("form,seed", QUICK, ids=[f.__name__ for f, _ in QUICK])
def test_window_forms_keep_numpys_values(form, seed, target):
    check_case(wf.draw(seed, form), target)


@pytest.mark.slow
@parametrize_targets(TARGETS)
def test_more_window_sizes_than_the_cap_through_one_function(target):
    # window sizes 1-10 and then 3 again through one dynamic_shape function: the first
    # 8 sizes get their own kernels, 9 and 10 the generic one (one warning), 3 its own
    rng = np.random.default_rng(11)
    compiled = hybrid(wf.depthwise_loops, target=target, dynamic_shape=True)
    with pytest.warns(WindowSizeCapWarning) as record:
        for k in [*range(1, 11), 3]:
            dtype = wf.DTYPES[k % 3]
            x, w = wf._window_calls(rng, dtype, False, [k])[0]
            assert not compare(wf.depthwise_loops(x, w), compiled(x, w), target), (k, dtype)
    assert sum(r.category is WindowSizeCapWarning for r in record) == 1


@pytest.mark.slow
@parametrize_targets(TARGETS)
@pytest.mark.parametrize("seed", range(1, 61))
def test_window_forms_sweep(seed, target):
    check_case(wf.draw(seed), target)


def one_column_conv(x, w, pad):
    return ops.conv2d(x, w, padding=pad)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_conv2d_output_of_one_column_on_ascend_sim(dtype):
    """One-row bands give M tiles of one pixel; Mmad with m == 1 is a GEMV reading L0A
    as ND, which LoadData 3D wrote Zz: NaN before (found by the slow sweep, seeds 18, 52)."""
    rng = np.random.default_rng(3)
    for xs, pad in (((1, 4, 5, 3), 0), ((1, 4, 5, 1), 1), ((2, 3, 7, 3), 0)):
        x = rng.integers(-2, 3, xs).astype(dtype)
        w = rng.integers(-2, 3, (2, xs[1], 3, 3)).astype(dtype)
        got = hybrid(one_column_conv, target="ascend-sim")(x, w, pad)
        assert not compare(one_column_conv(x, w, pad), got, "ascend-sim", 0.0, 0.0)
