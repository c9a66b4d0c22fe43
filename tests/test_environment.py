"""What pyasc reads from the environment: a bad ``PYASC_NUM_THREADS`` or
``PYASC_DISABLE_PASSES`` value is reported with a coded warning listing the valid values
(and ignored), never silently accepted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import InvalidEnvironmentWarning
from pyasc.ir.passes import PASS_REGISTRY, disabled_passes, parse_disabled
from pyasc.runtime import threads


@pytest.fixture(autouse=True)
def _fresh_reports():
    """Each distinct bad value is reported once per process: forget earlier reports."""
    threads._warn_bad_threads.cache_clear()
    parse_disabled.cache_clear()
    yield
    threads._warn_bad_threads.cache_clear()
    parse_disabled.cache_clear()


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "2x", "2 ", "0x10", "-" + "9" * 25])
def test_bad_num_threads_warns_with_valid_values(monkeypatch, value):
    monkeypatch.setenv("PYASC_NUM_THREADS", value)
    with pytest.warns(InvalidEnvironmentWarning) as record:
        assert threads.requested_threads(value) is None  # ignored: the default applies
    text = str(record[0].message)
    assert text.startswith("W50041: PYASC_NUM_THREADS=") and repr(value) in text
    assert "valid values: a positive integer" in text and "0 / empty / unset" in text


@pytest.mark.parametrize("value, wanted", [("4", 4), (" 2", 2), ("+3", 3), ("08", 8),
                                           ("0", None), ("", None), ("  ", None),
                                           ("300", threads.MAX_THREADS), (None, None)])
def test_valid_num_threads_do_not_warn(value, wanted):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        assert threads.requested_threads(value) == wanted


@hybrid(cache=False)
def _scale(x):
    return x * 3.0


def test_bad_num_threads_is_reported_when_a_kernel_is_built_and_the_call_runs(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "four")
    x = np.arange(5, dtype=np.float32)
    with pytest.warns(InvalidEnvironmentWarning, match="PYASC_NUM_THREADS='four'"):
        assert np.array_equal(_scale(x), x * 3)
    with warnings.catch_warnings():  # once per value, not at every kernel
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        _scale(x[:3])


def test_unknown_disabled_pass_warns_with_the_pass_names(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fuson, cse")
    with pytest.warns(InvalidEnvironmentWarning) as record:
        assert disabled_passes() == {"cse"}  # the valid part still applies
    text = str(record[0].message)
    assert text.startswith("W50041: PYASC_DISABLE_PASSES='fuson, cse': 'fuson' is not a pass")
    valid = sorted(set(PASS_REGISTRY) - {"lower-to-loops"})
    assert f"valid names (comma separated): {', '.join(valid)}" in text


def test_unknown_disabled_pass_during_a_call(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "nosuchpass")
    x = np.arange(7, dtype=np.float32)
    with pytest.warns(InvalidEnvironmentWarning, match="'nosuchpass' is not a pass"):
        assert np.array_equal(_scale(x), x * 3)


def test_valid_disabled_passes_do_not_warn(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", " fusion,memplan ,")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        assert disabled_passes() == {"fusion", "memplan"}
