"""Batched, broadcast, 1-D, transposed and integer matmuls on the cube unit: ascend-sim
against interpret, with the counters and the host program showing what ran where."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_cost import cube_cost
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.soc import get_soc


def _mm(a, b):
    return a @ b


def _np_matmul(a, b):
    return np.matmul(a, b)


def _at_b(a, b):
    return a.T @ b


def _a_bt(a, b):
    return a @ b.T


def _at_bt(a, b):
    return a.T @ b.T


def _swapped(a, b):
    return np.swapaxes(a, -1, -2) @ np.swapaxes(b, -1, -2)


def _widened_f32(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def _widened_i32(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


FORMS = {f.__name__: f for f in (_mm, _np_matmul, _at_b, _a_bt, _at_bt, _swapped,
                                 _widened_f32, _widened_i32)}
SIM = {name: hybrid(fn, target="ascend-sim") for name, fn in FORMS.items()}
REF = {name: hybrid(fn, target="interpret") for name, fn in FORMS.items()}
TOL = {np.float16: 2e-3, np.float32: 1e-5}


def _operands(sa, sb, dtype):
    rng = np.random.default_rng(sum(sa) * 131 + sum(sb))
    if dtype == np.int8:
        return (rng.integers(-128, 128, sa).astype(dtype), rng.integers(-128, 128, sb).astype(dtype))
    return rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)


def _run(form: str, a: np.ndarray, b: np.ndarray, scalar_ok: bool = False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if scalar_ok else "error", PyascPerformanceWarning)
        got = SIM[form](a, b)
    kernel = SIM[form].kernel(a, b)
    return got, REF[form](a, b), kernel


def _close(got, want, a, b, dtype, form=_mm):
    assert got.shape == want.shape and got.dtype == want.dtype
    # float32 accumulation in another order than numpy's: relative to the sum of |terms|
    scale = form(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))


def _cube_kernels(kernel) -> list[CubeKernel]:
    return [k for k in kernel.ascend.kernels if isinstance(k, CubeKernel)]


# (A shape, B shape): batches with and without broadcasting, size-1 batch axes, 2-D and
# 1-D operands against batches, a batch of more units than cube cores, odd M/N/K
BATCHED = [((3, 17, 33), (3, 33, 20)), ((2, 1, 17, 33), (1, 3, 33, 20)),
           ((4, 17, 33), (33, 20)), ((17, 33), (4, 33, 20)), ((33,), (33, 20)),
           ((17, 33), (33,)), ((33,), (2, 33, 20)), ((2, 17, 33), (33,)),
           ((30, 1, 17), (30, 17, 130)), ((2, 3, 130, 1), (3, 1, 1)), ((1, 1, 1), (1, 1, 1))]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("sa", "sb"), BATCHED)
def test_batched_and_broadcast_matmul(sa, sb, dtype):
    a, b = _operands(sa, sb, dtype)
    form = "_mm" if len(sa) % 2 else "_np_matmul"
    got, want, kernel = _run(form, a, b)
    _close(got, want, a, b, dtype)
    (cube,) = _cube_kernels(kernel)   # one cube kernel, and for b32 the operands
    # LoadData cannot transpose (B given as K x N) transposed by transpose kernels, each
    # reading and writing its operand once
    xposed = [x for x, flag in ((a, cube.host_trans_a), (b, cube.host_trans_b)) if flag]
    assert bool(xposed) == (dtype == np.float32 and len(sb) >= 2)
    assert [type(x).__name__ for x in kernel.ascend.kernels] == \
        ["CubeKernel"] + ["TransposeKernel"] * len(xposed)
    counters = kernel.last_counters
    assert counters.get("gm_to_ub_bytes", 0) == counters.get("ub_to_gm_bytes", 0) == \
        sum(x.nbytes for x in xposed)
    k = sa[-1]
    assert counters["cube_macs"] == want.size * k
    assert counters["l0c_to_gm_bytes"] == want.size * want.itemsize
    assert kernel.last_launches[-1]["blocks"] == cube.block_dim <= 24   # the cube's launch


def test_a_2d_operand_against_a_batch_is_folded_into_m():
    a, b = _operands((8, 100, 64), (64, 130), np.float16)
    got, want, kernel = _run("_mm", a, b)
    _close(got, want, a, b, np.float16)
    (cube,) = _cube_kernels(kernel)
    assert (cube.m, cube.groups) == (800, [])
    # B is read once per 128-row block of the 800 rows, not once per batch; A once (one
    # 256-column block)
    counters = kernel.last_counters
    assert counters["gm_to_l1_bytes"] == 2 * (800 * 64 + 7 * 64 * 130)


def test_units_beyond_the_cores_loop_in_each_block():
    a, b = _operands((30, 17, 33), (30, 33, 20), np.float16)
    got, want, kernel = _run("_mm", a, b)
    _close(got, want, a, b, np.float16)
    (cube,) = _cube_kernels(kernel)
    assert cube.units == 30 and cube.block_dim == 24
    assert "u += GetBlockNum()" in kernel.ascend.source


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("form", "sa", "sb"), [
    ("_at_b", (33, 17), (33, 20)), ("_at_b", (130, 129), (130, 1)), ("_at_b", (33, 1), (33, 20)),
    ("_a_bt", (17, 33), (20, 33)), ("_a_bt", (1, 300), (130, 300)),
    ("_at_bt", (33, 17), (20, 33)), ("_swapped", (2, 33, 17), (2, 20, 33)),
    ("_swapped", (3, 1, 33, 17), (2, 20, 33)), ("_swapped", (5, 33, 17), (20, 33))])
def test_transposed_operands_are_read_as_views(form, sa, sb, dtype):
    a, b = _operands(sa, sb, dtype)
    got, want, kernel = _run(form, a, b)
    _close(got, want, a, b, dtype, FORMS[form])
    (cube,) = _cube_kernels(kernel)
    host = str(kernel.ascend.host)
    trans_a = form in ("_at_b", "_at_bt", "_swapped")
    if dtype == np.float16:
        # b16: LoadData transposes per fractal, so the kernel reads the arrays as given
        assert "transpose" not in host
        assert (cube.trans_a, cube.trans_b) == (trans_a, form != "_at_b")
        assert ("A^T (K x M)" in kernel.ascend.source) == trans_a
    else:
        # b32: no LoadData transpose: A^T and B (K x N) go through a transpose kernel
        # (the vector cores; was a host transpose), B^T does not
        assert (cube.trans_a, cube.trans_b, cube.host_trans_a) == (False, True, trans_a)
        kinds = [type(x).__name__ for x in kernel.ascend.kernels]
        assert kinds.count("TransposeKernel") == trans_a + (form == "_at_b")
        assert "transpose" not in host


def test_int8_matmul_wraps_like_numpy():
    a, b = _operands((17, 600), (600, 130), np.int8)
    got, want, kernel = _run("_mm", a, b, scalar_ok=True)
    assert got.dtype == np.int8 and np.array_equal(got, want)
    assert np.array_equal(want, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8))
    assert not np.array_equal(want.astype(np.int32), a.astype(np.int32) @ b.astype(np.int32))
    (cube,) = _cube_kernels(kernel)
    assert cube.out.name == "i32" and kernel.last_counters["cube_macs"] == 17 * 130 * 600


@pytest.mark.parametrize(("sa", "sb"), [((17, 300), (300, 20)), ((2, 1, 33), (33, 130)),
                                        ((1, 17), (17,))])
def test_widened_int8_is_one_cube_kernel(sa, sb):
    a, b = _operands(sa, sb, np.int8)
    got, want, kernel = _run("_widened_i32", a, b)
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert len(kernel.ascend.kernels) == 1 and _cube_kernels(kernel)[0].dtype.name == "i8"


def test_widened_float16_is_one_cube_kernel_with_a_float32_result():
    a, b = _operands((17, 300), (300, 130), np.float16)
    got, want, kernel = _run("_widened_f32", a, b)
    _close(got, want, a, b, np.float32)
    (cube,) = _cube_kernels(kernel)
    assert len(kernel.ascend.kernels) == 1
    assert (cube.dtype.name, cube.out.name, cube.quant) == ("f16", "f32", "NoQuant")


@pytest.mark.parametrize(("form", "sa", "sb"), [
    ("_mm", (300, 130), (130, 257)), ("_mm", (1, 600), (600, 300)),
    ("_np_matmul", (2, 1, 17, 33), (1, 3, 33, 20)), ("_mm", (4, 17, 33), (33, 20)),
    ("_at_b", (33, 130), (33, 20)), ("_swapped", (3, 33, 17), (20, 33))])
def test_cost_model_counts_what_the_sim_counts(form, sa, sb):
    a, b = _operands(sa, sb, np.float16)
    _run(form, a, b)
    kernel = SIM[form].kernel(a, b)
    (k,) = _cube_kernels(kernel)
    soc = get_soc("Ascend910B1")
    cost = cube_cost(k, soc)
    counters = kernel.last_counters
    assert (cost.macs, cost.gm_read_bytes, cost.gm_write_bytes) == \
        (counters["cube_macs"], counters["gm_to_l1_bytes"], counters["l0c_to_gm_bytes"])
    assert cost.min_read_bytes == (a.size + b.size) * 2 <= cost.gm_read_bytes
    assert cost.estimate_s == max(cost.compute_s, cost.memory_s) >= cost.peak_s > 0


def test_cost_model_numbers():
    cube = get_soc("Ascend910B1").cube
    # 24 cores x 4096 fp16 MACs x 2 flops x 1.8 GHz: 910B's published 354 TFLOPS
    assert cube.macs_per_cycle("f16") * 2 * cube.clock_hz * cube.cores == pytest.approx(353.9e12,
                                                                                       rel=1e-3)
    assert (cube.macs_per_cycle("i8"), cube.macs_per_cycle("f32")) == (8192, 2048)


def _widened_transposed(a, b):
    return a.T.astype(np.float32) @ b.astype(np.float32).T


def test_widened_and_transposed_operands_are_one_cube_kernel():
    a, b = _operands((33, 17), (20, 33), np.float16)
    sim = hybrid(_widened_transposed, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(a, b)
    want = hybrid(_widened_transposed, target="interpret")(a, b)
    _close(got, want, a.T, b.T, np.float32)
    kernel = sim.kernel(a, b)
    (cube,) = _cube_kernels(kernel)
    assert len(kernel.ascend.kernels) == 1 and (cube.trans_a, cube.trans_b) == (True, True)


def test_a_float32_k_beyond_the_row_pitch_limit_stays_off_the_cube():
    # A^T and B (rows of 2 and 3) would reach the kernel transposed on the host, as rows
    # of K = 70000 elements: Nd2NzParams.srcDValue is 16 bits
    a, b = _operands((70000, 2), (70000, 3), np.float32)
    got, want, kernel = _run("_at_b", a, b, scalar_ok=True)
    assert not _cube_kernels(kernel)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_cube_matmul_op_reference_semantics():
    from pyasc.backend.ascendc.cube_match import CubeMatmulOp
    from pyasc.ir.core import Block
    from pyasc.ir.semantics import eval_op
    from pyasc.ir.types import TensorType, f16, f32

    block = Block([TensorType((2, 5, 3), f16), TensorType((4, 5), f16)], ["a", "b"])
    op = CubeMatmulOp(list(block.args), [TensorType((2, 3, 4), f32)],
                      {"trans_a": True, "trans_b": True})
    op.verify_op()
    a, b = _operands((2, 5, 3), (4, 5), np.float16)
    (got,) = eval_op(op, [a, b])
    want = np.swapaxes(a, -1, -2).astype(np.float32) @ b.T.astype(np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, want)
