"""MIX kernels (``mix_plan``): a matmul and its elementwise epilogue as one
``__mix__(1, 2)`` kernel on ascend-sim, against interpret, fused and not."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.mix_cost import mix_cost
from pyasc.backend.ascendc.mix_plan import MixKernel
from pyasc.backend.ascendc.soc import get_soc
from pyasc.ops import gelu

# the float16 reference's exp of large arguments overflows to inf, as numpy's does
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _bias_gelu(a, b, bias):
    return gelu(a @ b + bias, approximate="tanh")


def _bias_relu_scale(a, b, bias):
    return np.maximum(a @ b + bias, 0) * 0.5


def _silu_residual(a, b, r):
    y = np.matmul(a, b)
    return y / (1 + np.exp(-y)) + r


def _row_scale_cast(a, b, s):
    return (a @ b * s).astype(np.float32)


def _sigmoid_gelu(a, b, bias):
    y = a @ b + bias
    return y / (1 + np.exp(-1.702 * y))


EPILOGUES = {
    "bias_gelu": (_bias_gelu, "row"),
    "bias_relu_scale": (_bias_relu_scale, "row"),
    "silu_residual": (_silu_residual, "full"),
    "row_scale_cast": (_row_scale_cast, "col"),
    "sigmoid_gelu": (_sigmoid_gelu, "row"),
}
TOL = {np.float16: 4e-3, np.float32: 2e-5}
# (batch, M, N, K): ones, 17s, 130s, several blocks per core (slot reuse), batches
SHAPES = [((), 1, 17, 1), ((), 17, 17, 17), ((), 130, 17, 1), ((), 300, 270, 33),
          ((3,), 17, 130, 9), ((2, 3), 5, 20, 17)]


def _third(kind: str, batch: tuple, m: int, n: int, dtype, rng) -> np.ndarray:
    shape = {"row": (n,), "col": (*batch, m, 1), "full": (*batch, m, n)}[kind]
    return rng.standard_normal(shape).astype(dtype)


def _kernels(fn, *args) -> list:
    return list(fn.kernel(*args).ascend.kernels)


def _check(got, want, a, b, dtype) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert np.all(err <= TOL[dtype] * (np.abs(want) + scale + 1)), float(err.max())


CASES = [(name, shape, (np.float16, np.float32)[(i + j) % 2])
         for i, name in enumerate(sorted(EPILOGUES)) for j, shape in enumerate(SHAPES)]


@pytest.mark.parametrize(("name", "shape", "dtype"), CASES)
def test_fused_epilogue_is_one_mix_kernel_equal_to_interpret(name, shape, dtype):
    """Every epilogue form, each shape, float16 and float32 in turn (bfloat16 arrays
    need ml_dtypes, not installed here)."""
    fn, kind = EPILOGUES[name]
    batch, m, n, k = shape
    rng = np.random.default_rng(m * 31 + n * 7 + k)
    a = rng.standard_normal((*batch, m, k)).astype(dtype)
    b = rng.standard_normal((k, n) if len(batch) == 1 else (*batch, k, n)).astype(dtype)
    x = _third(kind, batch, m, n, dtype, rng)
    sim = hybrid(fn, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = sim(a, b, x)
    _check(got, hybrid(fn, target="interpret")(a, b, x), a, b, dtype)
    kernels = _kernels(sim, a, b, x)
    # float32: B (K x N) transposed first by a transpose kernel (no b32 LoadData transpose)
    b32 = dtype == np.float32
    assert len(kernels) == 1 + b32 and isinstance(kernels[0], MixKernel), kernels
    assert [type(k).__name__ for k in kernels[1:]] == ["TransposeKernel"] * b32
    launches = sim.kernel(a, b, x).last_launches
    counters = launches[-1]   # the MIX kernel's (the transpose's launch comes first)
    if b32:
        assert launches[0]["gm_to_ub_bytes"] == launches[0]["ub_to_gm_bytes"] == b.nbytes
    # one cube core and two vector cores per block; the output written once
    assert counters["blocks"] == 3 * kernels[0].block_dim
    assert counters["ub_to_gm_bytes"] == got.nbytes
    cost = mix_cost(kernels[0], get_soc("Ascend910B1"))   # the model counts what the sim does
    assert (counters["gm_to_l1_bytes"], counters["l0c_to_gm_bytes"], counters["gm_to_ub_bytes"],
            counters["ub_to_gm_bytes"]) == (cost.cube_read, cost.handoff, cost.epilogue_read,
                                            cost.written)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_without_fusion_the_epilogue_is_a_separate_vector_kernel(monkeypatch, dtype):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fusion")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((17, 33)).astype(dtype), rng.standard_normal((33, 130)).astype(dtype)
    bias = rng.standard_normal(130).astype(dtype)
    sim = hybrid(_bias_gelu, target="ascend-sim")
    got = sim(a, b, bias)
    _check(got, hybrid(_bias_gelu, target="interpret")(a, b, bias), a, b, dtype)
    kinds = [type(k).__name__ for k in _kernels(sim, a, b, bias)]
    assert kinds == ["CubeKernel"] + ["TransposeKernel"] * (dtype == np.float32) + ["VectorKernel"]


def _relu(a, b):
    return np.maximum(a @ b, 0)


@pytest.mark.parametrize(("dtype", "m", "n", "k"), [(np.float16, 17, 130, 33),
                                                    (np.float32, 1, 17, 130),
                                                    (np.int8, 130, 17, 17)])
def test_relu_alone_is_fixpipes(dtype, m, n, k):
    """``max(C, 0)`` and nothing else: Fixpipe's ReLU in the cube kernel, no vector core."""
    rng = np.random.default_rng(m + n + k)
    if dtype == np.int8:
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (k, n)))
        a, b = a.astype(np.int32), b.astype(np.int32)  # widened: an int8 cube kernel
        fn = _relu_widened
        args = (a.astype(np.int8), b.astype(np.int8))
    else:
        args = (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))
        fn = _relu
    sim = hybrid(fn, target="ascend-sim")
    got, want = sim(*args), hybrid(fn, target="interpret")(*args)
    if dtype == np.int8:
        assert np.array_equal(got, want)
    else:
        _check(got, want, *args, dtype)
    kc, *xposes = _kernels(sim, *args)   # float32: B^T by a transpose kernel
    assert [type(k).__name__ for k in xposes] == ["TransposeKernel"] * (dtype == np.float32)
    assert isinstance(kc, CubeKernel) and kc.relu
    assert "FixpipeParamsV220(curN, curM, (curM + 15) / 16 * 16, N, true," in \
        sim.kernel(*args).ascend.source


def _relu_widened(a, b):
    return np.maximum(a.astype(np.int32) @ b.astype(np.int32), 0)


def _softmax_rows(a, b):
    y = a @ b
    return y - y.max(axis=-1, keepdims=True)


def test_a_row_reduction_is_not_an_epilogue():
    """A block holds part of a row: a group reducing rows stays its own kernel."""
    a, b = np.ones((17, 9), np.float32), np.ones((9, 130), np.float32)
    sim = hybrid(_softmax_rows, target="ascend-sim")
    np.testing.assert_allclose(sim(a, b), hybrid(_softmax_rows, target="interpret")(a, b))
    assert not any(isinstance(k, MixKernel) for k in _kernels(sim, a, b))


def _cast_f16(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)


def _relu_cast_f16(a, b):
    return np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0).astype(np.float16)


@pytest.mark.parametrize("fn", [_cast_f16, _relu_cast_f16])
def test_a_cast_to_float16_is_fixpipes_conversion(fn):
    """A float32 result of float16 operands cast back to float16 (with or without ReLU):
    Fixpipe converts with F322F16 (RINT, like numpy) instead of a vector kernel."""
    rng = np.random.default_rng(11)
    args = (rng.standard_normal((130, 17)).astype(np.float16),
            rng.standard_normal((17, 33)).astype(np.float16))
    sim = hybrid(fn, target="ascend-sim")
    got, want = sim(*args), hybrid(fn, target="interpret")(*args)
    _check(got, want, *args, np.float16)
    (kc,) = _kernels(sim, *args)
    assert isinstance(kc, CubeKernel) and kc.quant == "F322F16"
    assert kc.relu == (fn is _relu_cast_f16)


def _int8_bias_relu(a, b, bias):
    return np.maximum(a.astype(np.int32) @ b.astype(np.int32) + bias, 0)


def _gemv_bias(a, b, bias):
    return np.tanh(a @ b + bias)


def _matvec_scale(a, b, s):
    return (a @ b) * s + 1


def _transposed_bias(a, b, bias):
    return np.maximum(a.T @ b + bias, 0) - 0.25


def _alpha_beta(a, b, c, alpha):
    return alpha * (a @ b) + 0.5 * c


OTHER = [
    # int8 operands, int32 epilogue: exact
    (_int8_bias_relu, ((17, 33), (33, 130), (130,)), np.int8),
    # 1-D A (a GEMV) + bias
    (_gemv_bias, ((33,), (33, 130), (130,)), np.float16),
    # 1-D B: C is M x 1 for the cube; a same-shape scale
    (_matvec_scale, ((130, 17), (17,), (130,)), np.float32),
    # A given as A^T (a view the cube reads as stored)
    (_transposed_bias, ((33, 17), (33, 130), (130,)), np.float16),
]


@pytest.mark.parametrize(("fn", "shapes", "dtype"), OTHER)
def test_other_operand_forms(fn, shapes, dtype):
    rng = np.random.default_rng(len(shapes[0]) + shapes[0][0])
    if dtype == np.int8:
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in shapes[:2])
        x = rng.integers(-1000, 1000, shapes[2]).astype(np.int32)
    else:
        a, b, x = (rng.standard_normal(s).astype(dtype) for s in shapes)
    sim = hybrid(fn, target="ascend-sim")
    got, want = sim(a, b, x), hybrid(fn, target="interpret")(a, b, x)
    if dtype == np.int8:
        assert np.array_equal(got, want)
    else:
        la = a.T if fn is _transposed_bias else a
        _check(got, want, la, b, dtype)
    kernels = _kernels(sim, a, b, x)
    assert [type(k).__name__ for k in kernels] == ["MixKernel"]


def test_a_run_time_scalar_reaches_the_vector_cores():
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((17, 9), (9, 20), (17, 20)))
    sim = hybrid(_alpha_beta, target="ascend-sim")
    for alpha in (2.0, -0.5):
        got, want = sim(a, b, c, alpha), hybrid(_alpha_beta, target="interpret")(a, b, c, alpha)
        _check(got, want, a, b, np.float32)
    # and B (K x N, float32) transposed first by a transpose kernel
    assert [type(k).__name__ for k in _kernels(sim, a, b, c, 2.0)] == ["MixKernel",
                                                                      "TransposeKernel"]


def _write_between(a, b, bias):
    y = a @ b
    a[:] = 100  # after the matmul read a, before its epilogue
    return y + bias


def test_a_write_between_the_matmul_and_its_epilogue_keeps_them_apart():
    """The MIX kernel would run where the epilogue is, after the write: not fused."""
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((17, 9), (9, 20), (20,))]
    sim = hybrid(_write_between, target="ascend-sim")
    got = sim(*[x.copy() for x in args])
    want = hybrid(_write_between, target="interpret")(*[x.copy() for x in args])
    _check(got, want, args[0], args[1], np.float32)
    assert not any(isinstance(k, MixKernel) for k in _kernels(sim, *args))
