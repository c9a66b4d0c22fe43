"""The ascend-sim cube model: Nd2Nz, LoadData, Mmad and Fixpipe numerics against numpy,
and each pipe-order and memory rule of the cube path firing at the offending line."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library, marked_line

from pyasc.backend.ascendc.sim import SimViolationError

FILE = "sim_cube.cpp"
SHAPES = [(16, 16, 16), (17, 5, 33), (1, 17, 40), (30, 40, 70), (1, 1, 1), (64, 48, 17)]
BF16 = np.dtype([("bits", np.uint16)])


def _f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (numpy has no bfloat16)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def _run(kernel: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, k_mmad: int | None = None) -> dict:
    m, k = a.shape
    n = c.shape[1]
    return library(FILE).launch(kernel, 1, a, b, c, m, n, k, k if k_mmad is None else k_mmad)


@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_f16_matmul_accumulates_in_float(m, n, k):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    exact = a.astype(np.float32) @ b.astype(np.float32)
    c16, c32 = np.zeros((m, n), np.float16), np.zeros((m, n), np.float32)
    counters = _run("mm_f16", a, b, c16)
    _run("mm_f16_f32", a, b, c32)
    np.testing.assert_allclose(c32, exact, rtol=1e-5, atol=1e-5)
    assert np.array_equal(c16, c32.astype(np.float16))  # F322F16 rounds to nearest even
    assert counters["cube_macs"] == m * n * k
    assert counters["gm_to_l1_bytes"] == 2 * (m * k + k * n)
    assert counters["l0c_to_gm_bytes"] == 2 * m * n


@pytest.mark.parametrize(("m", "n", "k"), SHAPES[:4])
def test_transposed_b_paths(m, n, k):
    """B given as (n, k): one contiguous LoadData into L0B (f16, f32 and int8 -> int32)."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    bt = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    _run("mm_f16_bt", a, bt, c)
    exact = a.astype(np.float32) @ bt.T.astype(np.float32)  # numpy's sum order differs
    np.testing.assert_allclose(c.astype(np.float32), exact, rtol=1e-3, atol=1e-3)
    a32, b32 = a.astype(np.float32), bt.astype(np.float32)
    c32 = np.zeros((m, n), np.float32)
    _run("mm_f32_bt", a32, b32, c32)
    np.testing.assert_allclose(c32, a32 @ b32.T, rtol=1e-5, atol=1e-5)
    a8 = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b8 = rng.integers(-128, 128, (n, k), dtype=np.int8)
    c8 = np.zeros((m, n), np.int32)
    _run("mm_i8_bt", a8, b8, c8)
    assert np.array_equal(c8, a8.astype(np.int32) @ b8.T.astype(np.int32))


def test_bf16_matmul():
    rng = np.random.default_rng(3)
    a = _f32_to_bf16_bits(rng.standard_normal((17, 33)))
    b = _f32_to_bf16_bits(rng.standard_normal((33, 20)))
    c = np.zeros((17, 20), np.uint16)
    library(FILE).launch("mm_bf16", 1, a.view(BF16), b.view(BF16), c.view(BF16), 17, 20, 33, 33)
    exact = _bf16_bits_to_f32(a) @ _bf16_bits_to_f32(b)
    np.testing.assert_allclose(_bf16_bits_to_f32(c), exact, rtol=8e-3, atol=1e-2)


def test_nd2nz_zero_fills_the_d_padding():
    """Mmad over the padded K (24 instead of 19) equals the true product only if the
    columns Nd2Nz added to A and B^T are zeros (fresh L1 holds NaN bytes)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 19)).astype(np.float32)
    bt = rng.standard_normal((7, 19)).astype(np.float32)
    c = np.zeros((9, 7), np.float32)
    _run("mm_f32_bt", a, bt, c, k_mmad=24)
    np.testing.assert_allclose(c, a @ bt.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("m", "n", "k", "ks"), [(17, 20, 70, 16), (1, 33, 50, 32), (40, 16, 64, 64)])
def test_k_loop_accumulates_in_l0c(m, n, k, ks):
    rng = np.random.default_rng(k + ks)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    library(FILE).launch("mm_kloop", 1, a, b, c, m, n, k, ks)
    exact = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), exact.astype(np.float32), rtol=2e-3, atol=2e-3)


# kernel -> (API named in the report, words of the explanation)
CASES = {
    "no_mte2_mte1": ("LoadData", "SetFlag/WaitFlag<HardEvent::MTE2_MTE1>"),
    "no_mte1_m": ("Mmad", "SetFlag/WaitFlag<HardEvent::MTE1_M>"),
    "no_m_fix": ("Fixpipe", "SetFlag/WaitFlag<HardEvent::M_FIX>"),
    "misplaced_flag": ("LoadData", "reads L1 byte 512 that DataCopy(Nd2Nz)"),
    "l1_overwrite": ("DataCopy(Nd2Nz)", "SetFlag/WaitFlag<HardEvent::MTE1_MTE2>"),
    "no_m_barrier": ("Mmad", "without PipeBarrier<PIPE_M>()"),
    "wait_unset": ("WaitFlag", "would wait forever"),
    "set_twice": ("SetFlag", "again before its WaitFlag"),
    "l1_overflow": ("LocalTensor", "L1 overflow"),
    "l0c_overflow": ("LocalTensor", "L0C overflow"),
    "l0a_overflow": ("LoadData", "beyond its tensor"),
    "transpose_b32": ("LoadData", "b16 types only"),
    "fixpipe_quant": ("Fixpipe", "float -> half needs quantPre F322F16"),
    "vector_on_l1": ("Adds", "is a L1 tensor"),
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_cube_violation_names_api_and_line(kernel):
    api, words = CASES[kernel]
    x = np.zeros(256, np.float16)
    with pytest.raises(SimViolationError) as err:
        library(FILE).launch(kernel, 1, x, x.copy(), x.copy())
    line = marked_line(FILE, f"// VIOLATION: {kernel}")
    assert (err.value.api, err.value.line) == (api, line), str(err.value)
    assert words in err.value.detail, err.value.detail
