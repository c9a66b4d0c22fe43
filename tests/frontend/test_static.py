"""``pyasc.static(v)``: a value that must be known at compile time specializes the
arguments it comes from by value, even where a run-time value would compile (sizes)."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import errors, hybrid, static


def make(use_static: bool):
    def padded(x, pad):
        p = static(pad) if use_static else pad
        out = np.zeros((x.shape[0] + 2 * p,), dtype=x.dtype)
        out[p:p + x.shape[0]] = x
        return out
    return hybrid(padded)


@pytest.mark.parametrize("target", ["interpret", "cpu", "ascend-sim"])
def test_static_value_gives_static_shapes(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    f = make(True)
    x = np.arange(3, dtype=np.float32)
    for pad in (1, 2, 1):
        np.testing.assert_array_equal(f(x, pad), np.pad(x, pad))
    if target != "interpret":
        assert sorted(s.types["pad"] for s in f.specializations.values()) == \
            ["const 1", "const 2"]


def test_without_static_the_size_is_a_runtime_value():
    text_dynamic = make(False).ir(np.ones(3, np.float32), 2)
    text_static = make(True).ir(np.ones(3, np.float32), 2)
    assert "%pad" in text_dynamic and "memref<?xf32>" in text_dynamic
    assert "%pad" not in text_static and "memref<7xf32>" in text_static


def test_static_tuples_and_compile_time_values_pass_through():
    @hybrid
    def f(x, shape):
        return np.zeros(static(shape)) + x.sum() * static(2)

    assert f(np.ones(2), (2, 3)).shape == (2, 3)


def test_static_of_array_contents_is_a_coded_error():
    @hybrid
    def f(x):
        return np.zeros(static(int(x[0])))

    with pytest.raises(errors.UnsupportedNumpyError, match="pyasc.static"):
        f(np.ones(2, np.int64))
