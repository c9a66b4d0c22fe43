"""bfloat16 arrays (ml_dtypes) as arguments and results, on every target.

numpy has no bfloat16; ml_dtypes registers one, which pyasc takes like any numeric
dtype.  Result dtypes are numpy's own (with ml_dtypes): ``a @ b`` of two bfloat16 arrays
is float32, ``np.dot`` of them bfloat16.  One stated difference: bfloat16 reductions
accumulate in float32 and round once, where numpy with ml_dtypes rounds every partial
sum to bfloat16 (docs/numpy-support.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.codegen import PyascPerformanceWarning
from pyasc.errors import ArgumentError

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
TARGETS = ("interpret", "cpu", "ascend-sim")


def _bf(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-2, 2, shape)).astype(BF16)


def _run(fn, target: str, *args):
    return hybrid(target=target)(fn)(*args)


def elementwise(x, y):
    return np.maximum(x * y + x, 0) - np.exp(y)


def writes_into(x, y):
    y[1:3] = x[1:3] * 2
    return y


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [elementwise, writes_into])
def test_bfloat16_arguments_and_results_equal_numpy(fn, target: str) -> None:
    x, y = _bf((6, 37), 1), _bf((6, 37), 2)
    want = fn(x, y.copy())
    got = _run(fn, target, x, y.copy())
    assert got.dtype == BF16 == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def matmul(x, y):
    return x @ y.T


def dot(x, y):
    return np.dot(x, y.T)


@pytest.mark.parametrize("target", TARGETS)
def test_products_take_numpys_dtypes(target: str) -> None:
    """ml_dtypes makes ``@`` of bfloat16 arrays float32 and ``np.dot`` bfloat16: pyasc
    gave bfloat16 for both, silently rounding the matmul (found by hand, this test)."""
    x, y = _bf((17, 40), 3), _bf((33, 40), 4)
    for fn in (matmul, dot):
        want, got = fn(x, y), _run(fn, target, x, y)
        assert got.dtype == want.dtype, fn.__name__
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=1e-2 if want.dtype == BF16 else 1e-5, atol=1e-5)


def reductions(x):
    return x.sum(axis=1), x.mean(axis=1), x.max(axis=1), np.prod(x[:, :6], axis=1)


@pytest.mark.parametrize("target", ("cpu", "ascend-sim"))
def test_reductions_accumulate_in_float32(target: str) -> None:
    """Compiled bfloat16 reductions are float32 accumulations rounded once (numpy with
    ml_dtypes rounds every partial sum: on these 300 values its sums are up to 1.0 off)."""
    x = _bf((6, 300), 5)
    got = _run(reductions, target, x)
    want = [r.astype(BF16) for r in reductions(x.astype(np.float32))]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == BF16
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=8e-3)


def test_other_ml_dtypes_types_are_refused() -> None:
    x = np.zeros(4, dtype=ml_dtypes.float8_e4m3fn)
    with pytest.raises(ArgumentError, match="structured dtype|cannot compute"):
        _run(elementwise, "cpu", x, x)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def select(x, y):
    return np.where(x > y, x, y * 2)


def row_stats(x):
    return x.sum(axis=1), x.mean(axis=1), x.max(axis=1), x.min(axis=1)


@pytest.mark.parametrize("fn", [elementwise, select, row_stats, softmax])
def test_bfloat16_work_is_vector_kernels_on_the_device(fn) -> None:
    """No bfloat16 arithmetic on the vector unit: each op is computed in float32 and
    rounded (vec_bf16.py), so these are vector kernels (they were scalar code), with
    numpy's results bit for bit where numpy rounds every op (elementwise, select) and
    float32-accumulated reductions."""
    x, y = _bf((6, 300), 6), _bf((6, 300), 7)
    args = (x,) if fn in (row_stats, softmax) else (x, y)
    compiled = hybrid(target="ascend-sim")(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = compiled(*args)
    src = compiled.ascendc(*args)
    assert "RoundMode::CAST_RINT" in src  # (UB row statistics are read with GetValue)
    cpu = hybrid(target="cpu")(fn)(*args)
    for g, c in zip(got if isinstance(got, tuple) else (got,),
                    cpu if isinstance(cpu, tuple) else (cpu,), strict=True):
        assert g.dtype == c.dtype == BF16
        np.testing.assert_array_equal(g.astype(np.float32), c.astype(np.float32))


def linear(a, b, bias):
    return np.maximum(a @ b + bias, 0).astype(a.dtype)


def test_bfloat16_linear_bias_relu_is_one_mix_kernel() -> None:
    """bfloat16 operands on the cube (float32 accumulation), the bias add and relu on the
    vector cores of the same MIX kernel, equal to numpy with ml_dtypes."""
    a, b, bias = _bf((17, 40), 8), _bf((40, 33), 9), _bf((33,), 10)
    compiled = hybrid(target="ascend-sim")(linear)
    src = compiled.ascendc(a, b, bias)
    assert "KERNEL_TYPE_MIX_AIC_1_2" in src and "Mmad" in src and "bfloat16_t" in src
    got, want = compiled(a, b, bias), linear(a, b, bias)
    assert got.dtype == want.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def window_accumulator(x):
    # the usual generic accumulator: a scalar of the array's own type (a.dtype.type is
    # ml_dtypes' bfloat16 here), each partial sum rounded to bfloat16 as numpy does
    out = np.zeros_like(x)
    for j in range(x.shape[0] - 40):
        r = x.dtype.type(0)
        for k in range(40):
            r += x[j + k] * x[k]
        out[j] = r
    return out


def module_scalar(x):
    return x * ml_dtypes.bfloat16(0.1) + ml_dtypes.bfloat16(x[0] * 3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [window_accumulator, module_scalar])
def test_bfloat16_scalar_type_calls(fn, target: str) -> None:
    # was E50011 "np.bfloat16 is not supported" (found by the fuzz session's loops)
    x = _bf((200,), 3)
    want = fn(x)
    got = _run(fn, target, x)
    assert got.dtype == BF16 == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
