"""MIX kernels of run-time shapes (``dynamic_shape=True``): a matmul and its elementwise
epilogue are one ``__mix__(1, 2)`` kernel whose sizes are kernel arguments, one compiled
kernel for every shape of the call's ranks; calls outside its limits run the unfused
pair; Fixpipe's ReLU/cast epilogue stays in the cube kernel.  Against interpret, with
the sim's counters against ``mix_cost`` of the plan the host computed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.mix_cost import mix_cost
from pyasc.backend.ascendc.mix_plan import MixKernel, mix_at
from pyasc.backend.ascendc.soc import get_soc
from pyasc.ops import gelu

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
SOC = get_soc("Ascend910B1")
# the float16 reference's exp of large arguments overflows to inf, as numpy's does
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
GM = ("gm_to_l1_bytes", "l0c_to_gm_bytes", "gm_to_ub_bytes", "ub_to_gm_bytes")


def _bias_gelu(a, b, bias):
    return gelu(a @ b + bias, approximate="tanh")


def _bias_relu_scale(a, b, bias):
    return np.maximum(a @ b + bias, 0) * 0.5


def _silu_residual(a, b, r):
    y = np.matmul(a, b)
    return y / (1 + np.exp(-y)) + r


def _row_scale_cast(a, b, s):
    return (a @ b * s).astype(np.float32)


def _linear_relu_bf16(a, b, bias):
    return np.maximum(a @ b + bias, 0).astype(a.dtype)


def _third(kind: str, batch: tuple, m: int, n: int) -> tuple:
    return {"row": (n,), "col": (*batch, m, 1), "full": (*batch, m, n)}[kind]


# (epilogue, kind of its third operand, dtype, B batched?, shapes (batch, M, N, K)):
# every case is one compiled specialization (one rank per operand)
CASES = [
    (_bias_gelu, "row", np.float16, False,
     [((), 1, 17, 1), ((), 17, 33, 17), ((), 33, 130, 1), ((), 300, 270, 33)]),
    (_bias_relu_scale, "row", np.float32, False,
     [((), 1, 1, 1), ((), 17, 17, 33), ((), 130, 257, 17)]),
    (_linear_relu_bf16, "row", BF16, False, [((), 17, 33, 40), ((), 1, 130, 17)]),
    (_row_scale_cast, "col", np.float16, False, [((), 17, 33, 9), ((), 130, 1, 33)]),
    (_silu_residual, "full", np.float16, False, [((), 17, 20, 33), ((), 1, 1, 17)]),
    # batched: A and B both batched (a batch group per axis), A batched against a
    # matrix (the batch folded into M)
    (_silu_residual, "full", np.float32, True, [((3,), 17, 130, 9), ((2,), 1, 33, 17)]),
    (_bias_gelu, "row", np.float16, False, [((4,), 17, 33, 20), ((2,), 129, 17, 1)]),
]


def _args(kind, dtype, batched, shape, rng):
    batch, m, n, k = shape
    a = rng.standard_normal((*batch, m, k))
    b = rng.standard_normal((*batch, k, n) if batched else (k, n))
    x = rng.standard_normal(_third(kind, batch, m, n))
    return tuple(v.astype(dtype) for v in (a, b, x))


def _check(got, want, a, b) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = {2: 4e-3, 4: 2e-5}[np.dtype(a.dtype).itemsize] if a.dtype != BF16 else 2e-2
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert np.all(err <= tol * (np.abs(want.astype(np.float64)) + scale + 1)), float(err.max())


def _run(sim, fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = sim(*args)
    _check(got, hybrid(fn, target="interpret")(*args), *args[:2])
    return got


@pytest.mark.parametrize(("fn", "kind", "dtype", "batched", "shapes"), CASES,
                         ids=[f"{c[0].__name__}-{np.dtype(c[2]).name}-{i}"
                              for i, c in enumerate(CASES)])
def test_one_mix_kernel_runs_every_shape(fn, kind, dtype, batched, shapes):
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    rng = np.random.default_rng(len(shapes))
    kernel = None
    for shape in shapes:
        args = _args(kind, dtype, batched, shape, rng)
        got = _run(sim, fn, args)
        compiled = sim.kernel(*args)
        assert kernel is None or compiled is kernel   # not recompiled
        kernel = compiled
        mix = compiled.ascend.kernels[0]
        assert isinstance(mix, MixKernel) and mix.dynamic, compiled.ascend.kernels
        batch, m, n, k = shape
        folded = bool(batch) and not batched
        run = mix_at(mix, m * int(np.prod(batch)) if folded else m, n, k,
                     () if folded else batch, SOC.cube.cores)
        cost, counters = mix_cost(run, SOC), compiled.last_counters
        # the MIX kernel ran (not its twin): one cube and two vector cores per block,
        # and the sim moved what the model of this call's plan counts
        assert counters["blocks"] == 3 * run.block_dim
        assert counters["cube_macs"] == got.size * k
        assert tuple(counters[c] for c in GM) == (cost.cube_read, cost.handoff,
                                                  cost.epilogue_read, cost.written)
        assert cost.handoff == got.size * mix.cube.out.itemsize
    assert len(sim.specializations) == 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_fused_moves_no_gm_bytes_beyond_the_hand_off(monkeypatch, dtype):
    """The workspace hand-off is the round trip of C that the unfused pair makes through
    a whole array: the fused kernel's GM bytes are the unfused pair's (the bias is read
    per block and vector core instead of per block of rows: a few bytes more)."""
    rng = np.random.default_rng(3)
    args = _args("row", dtype, False, ((), 200, 300, 64), rng)
    fused = hybrid(_bias_gelu, target="ascend-sim", dynamic_shape=True)
    _run(fused, _bias_gelu, args)
    counts = fused.kernel(*args).last_counters
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fusion")
    unfused = hybrid(_bias_gelu, target="ascend-sim", dynamic_shape=True)
    _run(unfused, _bias_gelu, args)
    kinds = [type(k).__name__ for k in unfused.kernel(*args).ascend.kernels]
    assert kinds[0] == "CubeKernel" and "MixKernel" not in kinds
    ref = unfused.kernel(*args).last_counters
    c_bytes = 200 * 300 * np.dtype(dtype).itemsize
    assert counts["l0c_to_gm_bytes"] == ref["l0c_to_gm_bytes"] == c_bytes
    assert counts["gm_to_l1_bytes"] == ref["gm_to_l1_bytes"]
    assert counts["ub_to_gm_bytes"] == ref["ub_to_gm_bytes"] == c_bytes
    bias_reads = counts["gm_to_ub_bytes"] - c_bytes
    assert 0 < bias_reads <= 3 * 2 * 300 * np.dtype(dtype).itemsize  # per block and half
    assert counts["gm_to_ub_bytes"] - ref["gm_to_ub_bytes"] <= bias_reads


TWIN_CASES = [
    # K = 0: an empty K loop would leave L0C unset (the cube kernel's limit)
    (_bias_gelu, ((5, 0), (0, 7), (7,))),
    # a row of 70000 elements: beyond Nd2NzParams.srcDValue (uint16)
    (_bias_gelu, ((2, 70000), (70000, 3), (3,))),
    # the epilogue broadcasts C (1 x 5 against a 4 x 5 residual): not C's shape
    (_silu_residual, ((1, 9), (9, 5), (4, 5))),
]


@pytest.mark.parametrize(("fn", "shapes"), TWIN_CASES)
def test_shapes_outside_the_kernel_run_the_unfused_pair(fn, shapes):
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    rng = np.random.default_rng(7)
    args = tuple(rng.standard_normal(s).astype(np.float16) for s in shapes)
    got = sim(*args)
    _check(got, hybrid(fn, target="interpret")(*args), *args[:2])
    compiled = sim.kernel(*args)
    kinds = [type(k).__name__ for k in compiled.ascend.kernels]
    assert kinds[0] == "MixKernel" and "CubeKernel" in kinds and "VectorKernel" in kinds
    counters = compiled.last_counters
    if shapes[0][1] in (0, 70000):  # the scalar matmul, then the vector kernel
        assert counters["cube_macs"] == 0 and counters["gm_scalar_write_bytes"] > 0
    else:  # the cube kernel writes C (1 x 5) to GM, one vector block reads it
        assert counters["l0c_to_gm_bytes"] == 10 and counters["blocks"] == 2
    third = (17, 20)[-len(shapes[2]):]
    args = tuple(rng.standard_normal(s).astype(np.float16) for s in ((17, 33), (33, 20), third))
    _run(sim, fn, args)   # the same compiled code, the MIX kernel
    assert sim.kernel(*args).last_counters["blocks"] == 3
    assert len(sim.specializations) == 1


@pytest.mark.parametrize(("shapes", "message"), [
    (((17, 33), (32, 20), (20,)), "mismatch in its core dimension 0"),
    (((17, 33), (33, 20), (19,)), "could not be broadcast together")])
def test_shape_errors_are_numpys(shapes, message):
    sim = hybrid(_bias_gelu, target="ascend-sim", dynamic_shape=True)
    args = [np.ones(s, np.float16) for s in shapes]
    with pytest.raises(ValueError, match=message):
        sim(*args)
    with pytest.raises(ValueError):
        _bias_gelu(*args)


def _relu(a, b):
    return np.maximum(a @ b, 0)


def _relu_cast_f16(a, b):
    return np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0).astype(np.float16)


@pytest.mark.parametrize("fn", [_relu, _relu_cast_f16])
def test_relu_and_cast_are_fixpipes_with_run_time_shapes(fn):
    """``max(C, 0)`` and/or the cast back to float16: Fixpipe's, in the dynamic cube
    kernel (no vector core); its twin (K = 0) computes the epilogue too."""
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    rng = np.random.default_rng(9)
    for sa, sb in (((17, 33), (33, 20)), ((1, 1), (1, 17)), ((130, 17), (17, 129)),
                   ((5, 0), (0, 7))):
        args = tuple(rng.standard_normal(s).astype(np.float16) for s in (sa, sb))
        got, want = sim(*args), hybrid(fn, target="interpret")(*args)
        _check(got, want, *args)
        compiled = sim.kernel(*args)
        cube = compiled.ascend.kernels[0]
        assert isinstance(cube, CubeKernel) and cube.dynamic and cube.relu
        assert cube.quant == "F322F16"
        counters = compiled.last_counters
        if sa[1]:   # the cube kernel alone: Fixpipe wrote the result
            assert counters["gm_to_ub_bytes"] == 0 and counters["l0c_to_gm_bytes"] == got.nbytes
        else:       # the twin: the scalar matmul, then the epilogue's vector kernel
            assert counters["cube_macs"] == 0 and counters["gm_scalar_write_bytes"] > 0
    assert len(sim.specializations) == 1


def _gemv_bias(a, b, bias):
    return np.tanh(a @ b + bias)


def _matvec_scale(a, b, s):
    return (a @ b) * s + 1


def _transposed_bias(a, b, bias):
    return np.maximum(a.T @ b + bias, 0) - 0.25


def _int8_bias_relu(a, b, bias):
    return np.maximum(a.astype(np.int32) @ b.astype(np.int32) + bias, 0)


OTHER = [
    (_gemv_bias, np.float16, [((33,), (33, 20), (20,)), ((1,), (1, 130), (130,))]),
    (_matvec_scale, np.float32, [((130, 17), (17,), (130,)), ((1, 5), (5,), (1,))]),
    (_transposed_bias, np.float16, [((33, 17), (33, 130), (130,)), ((1, 1), (1, 1), (1,))]),
    (_int8_bias_relu, np.int8, [((17, 33), (33, 130), (130,)), ((1, 300), (300, 17), (17,))]),
]


@pytest.mark.parametrize(("fn", "dtype", "shapes"), OTHER)
def test_other_operand_forms(fn, dtype, shapes):
    """1-D A (a GEMV), 1-D B (C is M x 1 for the cube), A given as A^T, int8 (exact)."""
    sim = hybrid(fn, target="ascend-sim", dynamic_shape=True)
    rng = np.random.default_rng(11)
    for sa, sb, sx in shapes:
        if dtype == np.int8:
            a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in (sa, sb))
            x = rng.integers(-1000, 1000, sx).astype(np.int32)
        else:
            a, b, x = (rng.standard_normal(s).astype(dtype) for s in (sa, sb, sx))
        got, want = sim(a, b, x), hybrid(fn, target="interpret")(a, b, x)
        if dtype == np.int8:
            assert got.dtype == want.dtype and np.array_equal(got, want)
        else:
            _check(got, want, a.T if fn is _transposed_bias else a, b)
        compiled = sim.kernel(a, b, x)
        assert isinstance(compiled.ascend.kernels[0], MixKernel)
        # the MIX kernel ran, not its twin: three cores per block of C
        m = 1 if len(sa) == 1 else sa[-1] if fn is _transposed_bias else sa[-2]
        n = sb[-1] if len(sb) == 2 else 1
        assert compiled.last_counters["blocks"] == 3 * -(-m // 128) * -(-n // 128)
    assert len(sim.specializations) == 1
