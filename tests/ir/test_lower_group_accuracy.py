"""Fused groups compiled by the CPU backend: the float-sum accumulator scheme against
float64 references and numpy on long adversarial rows, special values, and a few
``@hybrid(target="cpu")`` kernels end to end (softmax, layernorm, gelu-tanh)."""

from __future__ import annotations

import loops_harness as H
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from pyasc import hybrid  # noqa: E402
from pyasc.backend.base import Program  # noqa: E402
from pyasc.backend.llvm import LLVMBackend  # noqa: E402
from pyasc.ir.ops import tensor  # noqa: E402
from pyasc.ir.passes import run_pipeline  # noqa: E402


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def row_sum():
    """``np.sum(x, axis=-1)`` for any float32 matrix, as one fused reduction group."""
    example = np.zeros((2, 5), np.float32)
    module = H.kernel([example], lambda b, x: [b.insert(tensor.SumOp.new(x, [1])).result],
                      dynamic=True)
    run_pipeline(module, ["fusion"])
    assert "fusion.group" in str(module)
    kernel = LLVMBackend().compile(Program(module, "f", "test:row_sum", {"cache": False}))
    return lambda x: kernel([x])[0]


def _rows(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    half = n // 2
    return {
        "uniform": rng.random((2, n), dtype=np.float32),
        "ascending": np.sort(rng.random((2, n), dtype=np.float32)),
        "constant": np.full((2, n), 0.1, np.float32),
        "heavy_tail": rng.lognormal(0.0, 3.0, (2, n)).astype(np.float32),
        "cancelling": np.concatenate([rng.random((2, half), dtype=np.float32) * 1e4,
                                      -rng.random((2, n - half), dtype=np.float32) * 1e4], 1),
    }


@pytest.mark.parametrize("n", [1 << 20 | 3, 300_001])
def test_long_rows_are_summed_at_least_as_accurately_as_numpy(row_sum, n: int) -> None:
    rng = np.random.default_rng(n)
    worst_ours = worst_numpy = 0.0
    for name, x in _rows(n, rng).items():
        exact = np.sum(x.astype(np.float64), axis=1)
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        ours = np.abs(row_sum(x).astype(np.float64) - exact) / ulp
        numpy = np.abs(np.sum(x, axis=1).astype(np.float64) - exact) / ulp
        # Both round to float32 at the end: a tie-break may cost at most one ulp.
        assert np.all(ours <= numpy + 1.0), (name, ours, numpy)
        if name == "cancelling":  # where pairwise summation degrades, we do not
            assert np.all(ours * 2 < numpy), (ours, numpy)
        worst_ours, worst_numpy = max(worst_ours, ours.max()), max(worst_numpy, numpy.max())
    assert worst_ours <= worst_numpy


def test_short_rows_blocks_and_tails(row_sum) -> None:
    rng = np.random.default_rng(7)
    for n in [0, 1, 15, 16, 17, 127, 128, 129, 255, 256, 1000]:
        x = rng.standard_normal((3, n)).astype(np.float32)
        np.testing.assert_allclose(row_sum(x), np.sum(x.astype(np.float64), axis=1),
                                   rtol=1e-6, atol=1e-5)


def test_special_values_propagate(row_sum) -> None:
    x = np.ones((4, 300), np.float32)
    x[0, 7], x[1, 250], x[2, 3], x[2, 299], x[3, 100] = np.inf, np.nan, np.inf, -np.inf, -0.0
    got = row_sum(x)
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == 299.0


def test_results_do_not_depend_on_the_call(row_sum) -> None:
    x = np.random.default_rng(1).random((8, 5000), dtype=np.float32)
    assert row_sum(x).tobytes() == row_sum(x.copy()).tobytes()


@hybrid(target="cpu")
def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@hybrid(target="cpu")
def _layernorm(x, g, b):
    mean = np.mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5) * g + b


@hybrid(target="cpu")
def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def test_end_to_end_cpu_kernels() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((33, 70)).astype(np.float32)
    g, b = rng.standard_normal(70).astype(np.float32), rng.standard_normal(70).astype(np.float32)
    np.testing.assert_allclose(_softmax(x), _softmax.__wrapped__(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_layernorm(x, g, b), _layernorm.__wrapped__(x, g, b),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_gelu(x), _gelu.__wrapped__(x), rtol=1e-5, atol=1e-6)
    view = x[::-2, 3::3]  # negative and non-unit strides through the fused nest
    np.testing.assert_allclose(_softmax(view), _softmax.__wrapped__(view), rtol=1e-5,
                               atol=1e-7)
    for fn in (_softmax, _layernorm, _gelu):
        args = (x, g, b) if fn is _layernorm else (x,)
        assert '"fusion.group"' in fn.ir(*args)
