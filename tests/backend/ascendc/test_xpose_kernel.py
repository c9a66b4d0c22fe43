"""The device transpose (``xpose_kernel``, ``host_xpose``): the kernel alone on ascend-sim
against numpy for odd shapes, tails and every dtype it takes, its GM counters (each
element read once and written once), which permutations it does, and its use by the
float32 cube matmul whose B (K x N) LoadData cannot transpose."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.host_xpose import batched_swap
from pyasc.backend.ascendc.sim import SimConfig, SimLibrary, compile_kernels
from pyasc.backend.ascendc.soc import get_soc
from pyasc.backend.ascendc.xpose_kernel import (
    ROW_CAP,
    TILE_ELEMS,
    TransposeKernel,
    plan_transpose,
    transposable,
    transpose_source,
)
from pyasc.ir.core import UNKNOWN_LOC
from pyasc.ir.types import SCALAR_TYPES

SOC = get_soc("Ascend910B1")
# bfloat16 moves as its bits: uint16 arrays stand for it (no ml_dtypes needed)
NP = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "i32": np.int32,
      "i16": np.int16}


@functools.cache
def _library(source: str, name: str) -> SimLibrary:
    return compile_kernels(source, [name], filename=f"{name}.cpp",
                           config=SimConfig(opt_level="-O1"))


def _run(k: TransposeKernel, x: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    y = np.zeros((k.batch, k.cols, k.rows), x.dtype)
    counters = _library(transpose_source(k), k.name).launch(k.name, k.block_dim, x, y)
    return y, counters


CASES = [
    ("f32", (2, 33, 17)),      # whole rows both ways: one DMA run per tile side
    ("f16", (3, 3, 1000)),     # NCHW -> NHWC of an RGB image: C = 3 rows
    ("f16", (2, 1000, 3)),     # and back
    ("f32", (1, 200, 130)),    # 64 x 128 tiles with tails both ways
    ("bf16", (2, 70, 9000)),   # tails, many tiles over all 48 blocks
    ("i32", (1, 17, 3)),
    ("i16", (4, 129, 65)),
    ("f16", (2, 15876, 16)),   # CustomConv's (N, OH*OW, O) result back to NCHW
    ("f32", (1, 1, 1)),
    ("f32", (1, 5, 9000)),     # rows longer than a tile: column tiles of whole rows
]


@pytest.mark.parametrize(("dt", "shape"), CASES, ids=lambda c: str(c))
def test_transpose_kernel_equals_numpy_and_moves_each_element_once(dt, shape):
    k = plan_transpose(*shape, SCALAR_TYPES[dt], SOC, f"xp_{dt}_{'x'.join(map(str, shape))}",
                       UNKNOWN_LOC)
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-30000, 30000, shape).astype(NP[dt])
    y, counters = _run(k, x)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 1))
    nbytes = x.nbytes
    assert counters["gm_to_ub_bytes"] == counters["ub_to_gm_bytes"] == nbytes == k.gm_bytes // 2
    assert counters["ub_peak_bytes"] <= SOC.init_buffer_bytes
    assert k.tr * k.tc <= TILE_ELEMS and k.block_dim == min(k.items, SOC.vector_blocks)


def test_tiles_take_whole_rows_when_they_fit():
    f16 = SCALAR_TYPES["f16"]
    k = plan_transpose(8, 8, 16384, f16, SOC, "a", UNKNOWN_LOC)   # NCHW -> NHWC, C = 8
    assert (k.tr, k.out_pitch) == (8, 8)                        # one output run per tile
    k = plan_transpose(8, 15876, 16, f16, SOC, "b", UNKNOWN_LOC)  # and back
    assert (k.tc, k.in_pitch) == (16, 16) and k.tr == TILE_ELEMS // 16
    k = plan_transpose(1, 1000, 1000, f16, SOC, "c", UNKNOWN_LOC)
    assert k.tr == ROW_CAP and k.tc % 16 == 0 and k.tr * k.tc == TILE_ELEMS


def test_dtypes_without_gather_keep_the_host_transpose():
    assert all(transposable(SCALAR_TYPES[d], SOC) for d in NP)
    assert not any(transposable(SCALAR_TYPES[d], SOC) for d in ("i8", "f64", "i64", "i1"))


@pytest.mark.parametrize(("shape", "perm", "want"), [
    ((4, 5), (1, 0), (1, 4, 5)),
    ((2, 3, 5, 7), (0, 2, 3, 1), (2, 3, 35)),   # NCHW -> NHWC
    ((2, 5, 7, 3), (0, 3, 1, 2), (2, 35, 3)),   # NHWC -> NCHW
    ((2, 3, 4), (0, 2, 1), (2, 3, 4)),
    ((2, 3, 4, 5), (2, 3, 0, 1), (1, 6, 20)),
    ((2, 3, 4), (0, 1, 2), None),               # the identity
    ((2, 3, 4), (1, 0, 2), None),               # the trailing axis stays: not a 2-D swap
    ((2, 3, 4), (2, 1, 0), None),
])
def test_which_permutations_are_batched_transposes(shape, perm, want):
    assert batched_swap(shape, perm) == want


def _matmul(a, b):
    return a @ b


@pytest.mark.parametrize(("m", "k", "n"), [(17, 33, 19), (5, 3, 200)])
def test_float32_matmul_transposes_b_on_the_device(m, k, n):
    # b32 has no LoadData transpose: B (K x N) reaches the cube as B^T (N x K), made by a
    # transpose kernel (was a host numpy transpose outside the counters)
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    sim = hybrid(_matmul, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(a, b)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    kernel = sim.kernel(a, b)
    assert [type(x).__name__ for x in kernel.ascend.kernels] == ["CubeKernel", "TransposeKernel"]
    c = kernel.last_counters
    assert c["gm_to_ub_bytes"] == c["ub_to_gm_bytes"] == b.nbytes


def _contiguous_t(x):
    return np.ascontiguousarray(x.T)


def _copy_swapped(x):
    return x.transpose(0, 2, 1).copy()


def _nhwc_plus_one(x):
    return np.transpose(x, (0, 2, 3, 1)) + 1


def _copy_then_write(x):
    y = np.ascontiguousarray(x.T)
    x[0, 0] = 5   # the copy was taken before: y keeps the old value
    return y, x


@pytest.mark.parametrize(("fn", "shape", "dtype", "kinds", "xposed"), [
    (_contiguous_t, (33, 17), np.float32, ["TransposeKernel"], 1),
    (_copy_swapped, (2, 33, 17), np.float16, ["TransposeKernel"], 1),
    (_nhwc_plus_one, (2, 3, 5, 7), np.float32, ["TransposeKernel", "VectorKernel"], 1),
    (_copy_then_write, (3, 4), np.int32, ["TransposeKernel"], 1),
    (_contiguous_t, (3, 4), np.int8, [], 0),   # no Gather for b8: the host's copy
], ids=lambda v: getattr(v, "__name__", None))
def test_user_copies_of_transposed_arrays_are_transpose_kernels(fn, shape, dtype, kinds, xposed):
    # these were host numpy copies (the launcher's, for the snapshot a kernel reads)
    x = (np.arange(np.prod(shape)) % 101).reshape(shape).astype(dtype)
    sim, ref = hybrid(fn, target="ascend-sim"), hybrid(fn, target="interpret")
    got, want = sim(x.copy()), ref(x.copy())
    for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
        np.testing.assert_array_equal(g, w)
    kernel = sim.kernel(x)
    assert [type(k).__name__ for k in kernel.ascend.kernels] == kinds
    assert kernel.last_counters.get("ub_to_gm_bytes", 0) >= x.nbytes * xposed
