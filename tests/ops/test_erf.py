"""``pyasc.ops.erf``: numpy has no array erf; pyasc's runs in plain Python (``math.erf``
per element, numpy's ufunc dtype rules) and compiles to the IR's vectorized ``math.erf``
inside ``@hybrid`` functions, so exact ``gelu`` is a vector kernel on the device."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import pyasc
from pyasc import hybrid, ops
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.ops import erf, gelu


def _reference(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in np.asarray(x, np.float64).ravel()]
                    ).reshape(np.shape(x))


@pytest.mark.parametrize("dtype, want", [(np.float16, np.float16), (np.float32, np.float32),
                                         (np.float64, np.float64), (np.int32, np.float64),
                                         (np.int8, np.float16), (np.bool_, np.float16)])
def test_plain_python_follows_ufunc_dtype_rules(dtype, want):
    x = np.array([[0, 1], [1, 0]]).astype(dtype)
    got = erf(x)
    assert got.dtype == want and got.shape == x.shape
    np.testing.assert_allclose(got.astype(np.float64), _reference(x), rtol=1e-3)


def test_plain_python_scalars_and_errors():
    assert isinstance(erf(0.5), np.float64) and erf(0.5) == math.erf(0.5)
    assert erf(np.float32(2.0)).dtype == np.float32
    with pytest.raises(TypeError, match="complex"):
        erf(np.ones(2, np.complex64))
    assert erf(np.arange(3), dtype=np.float32).dtype == np.float32
    out = np.zeros(3, np.float32)
    assert erf(np.arange(3.0), out=out) is out and out[1] == np.float32(math.erf(1.0))


@hybrid
def _erf_into(x, y):
    erf(x, out=y)
    return erf(x, dtype=np.float32)


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_out_and_dtype_keywords_agree_with_plain_python(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    x, y = np.linspace(-2, 2, 9), np.zeros(9)
    got = _erf_into(x, y)
    assert got.dtype == np.float32
    np.testing.assert_allclose(y, _reference(x), rtol=0, atol=1e-15)
    np.testing.assert_allclose(got, _reference(x), rtol=0, atol=1e-6)


@hybrid
def _erf_mix(x):
    return erf(x) * 2 + ops.erf(x[::-1]) + pyasc.ops.erf(x[3])


@pytest.mark.parametrize("target", ["interpret", "cpu", "ascend-sim"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_compiled_erf_matches_plain_python(target, dtype, monkeypatch):
    if target == "ascend-sim" and dtype == np.float64:
        pytest.skip("float64 device code is refused (docs/ascendc-backend.md#float64)")
    monkeypatch.setenv("PYASC_TARGET", target)
    x = np.linspace(-5, 5, 203).astype(dtype)
    got = _erf_mix(x)
    want = 2 * _reference(x) + _reference(x[::-1]) + math.erf(float(x[3]))
    assert got.dtype == dtype
    # the AI Core's erf is A&S 7.1.26 (absolute error < 1.5e-7); the CPU's <= 2 ulp
    atol = {np.float16: 8e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)


def test_exact_gelu_is_a_vector_kernel_on_the_device(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "ascend-sim")
    x = np.linspace(-6, 6, 1000).astype(np.float32).reshape(8, 125)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = gelu(x)
        source = gelu.ascendc(x)
    assert "double" not in source and "GetValue" not in source
    want = 0.5 * x.astype(np.float64) * (1 + _reference(x / np.sqrt(2.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


def test_erf_is_listed_as_pyasc_function_not_numpy():
    listing = pyasc.supported_numpy()
    assert "pyasc.ops.erf" in listing and "np.erf" not in listing
