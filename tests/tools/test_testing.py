"""``pyasc.testing``: compiled vs reference on a passing and a failing operator, the
mismatch summary, exceptions that must match, input layouts, and the pytest helper
that skips unavailable targets with doctor's reason."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid, testing


@hybrid
def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


@hybrid
def pair(x):
    return x.sum(axis=0), x.max()


@testing.parametrize_targets()
def test_gelu_matches_on_every_available_target(target):
    for shape in [(7, 33), (1, 130)]:
        for x in testing.inputs(shape, np.float32, seed=3):
            testing.assert_matches_reference(gelu, x, targets=(target,))


def test_tuples_and_dtypes_are_compared():
    x = next(testing.inputs((5, 9), np.float64))
    testing.assert_matches_reference(pair, x, targets=("cpu",))


def test_a_failing_operator_reports_where_and_how_much(monkeypatch):
    x = next(testing.inputs((4, 8), np.float32, seed=1, low=0, high=2))
    real_hybrid = testing.hybrid

    def miscompiled(fn, **options):  # a compiler bug: 1e-3 too much where x > 1.5
        compiled = real_hybrid(fn, **options)
        return lambda *a: compiled(*a) + np.float32(1e-3) * (a[0] > 1.5)

    monkeypatch.setattr(testing, "hybrid", miscompiled)
    with pytest.raises(AssertionError) as info:
        testing.assert_matches_reference(gelu, x, targets=("cpu",))
    text = str(info.value)
    n_bad = int((x > 1.5).sum())
    assert text.startswith("gelu: compiled results differ from the Python reference")
    assert f"[cpu] result: {n_bad} of 32 elements differ (rtol=1e-05, atol=1e-06)" in text
    assert "largest at (" in text and "abs 0.001" in text


def test_dtype_or_shape_differences_are_reported():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    (line,) = testing.compare(x, x.astype(np.float64), "cpu")
    assert line == "[cpu] result: expected float32[3], got float64[3]"
    (line,) = testing.compare((x, x), (x,), "ascend-sim")
    assert line.startswith("[ascend-sim] result: expected 2 results")


def test_exceptions_must_match():
    @hybrid
    def picky(x):
        return x.reshape(5, -1)

    testing.assert_matches_reference(picky, np.ones(12), targets=("cpu",))  # both raise


def test_inputs_layouts():
    c, s, t = testing.inputs((3, 5), np.int16, seed=0)
    assert c.flags.c_contiguous and not s.flags.c_contiguous and t.flags.f_contiguous
    assert c.shape == s.shape == t.shape == (3, 5) and c.dtype == np.int16
    with pytest.raises(ValueError, match="unknown layout"):
        list(testing.inputs((2,), np.float32, layouts=("diagonal",)))


def test_unavailable_targets_are_skipped_with_the_reason():
    mark = testing.parametrize_targets(("cpu", "ascend"))
    params = mark.args[1]
    assert params[0] == "cpu"
    skip = params[1].marks[0]
    assert skip.name == "skip" and skip.kwargs["reason"].startswith("ascend: ")
    assert testing.available_targets(("cpu",)) == ["cpu"]
