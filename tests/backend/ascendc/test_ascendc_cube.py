"""2-D matmuls on the cube unit (dav-c220): ascend-sim against interpret, the tiling, the
counters, and the scalar path kept on SoCs without verified cube facts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_tiling import BASE, splits
from pyasc.backend.ascendc.soc import SOCS, get_soc


def _matmul(a, b):
    return a @ b


def _np_matmul(a, b):
    return np.matmul(a, b)


def _np_dot(a, b):
    return np.dot(a, b)


FORMS = {"at": _matmul, "matmul": _np_matmul, "dot": _np_dot}
SIM = {name: hybrid(fn, target="ascend-sim") for name, fn in FORMS.items()}
REF = {name: hybrid(fn, target="interpret") for name, fn in FORMS.items()}
# (M, N, K): ones, 17s, K loops of several steps, several blocks, tails everywhere
SHAPES = [(1, 1, 1), (17, 17, 17), (1, 300, 17), (17, 1, 260), (129, 257, 300), (300, 130, 5)]
TOL = {np.float16: 2e-3, np.float32: 1e-5}


def _operands(m: int, n: int, k: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_cube_matmul_matches_interpret(m, n, k, dtype):
    a, b = _operands(m, n, k, dtype)
    form = ("at", "matmul", "dot")[(m + n + k) % 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = SIM[form](a, b)
    want = REF[form](a, b)
    assert got.dtype == want.dtype == dtype and got.shape == (m, n)
    # float32 accumulation in another order than numpy's: relative to the sum of |terms|
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))
    counters = SIM[form].kernel(a, b).last_counters
    assert counters["cube_macs"] == m * n * k
    assert counters["gm_scalar_read_bytes"] == 0 and counters["gm_scalar_write_bytes"] == 0
    assert counters["l0c_to_gm_bytes"] == m * n * a.itemsize


def test_work_is_split_over_the_cube_cores():
    a, b = _operands(300, 400, 64, np.float16)
    kernel = SIM["at"].kernel(a, b)
    np.testing.assert_allclose(SIM["at"](a, b).astype(np.float32),
                               (a.astype(np.float32) @ b.astype(np.float32)), rtol=2e-3, atol=2e-2)
    (cube,) = kernel.ascend.kernels
    # 128 x 256 blocks filling L0C: a third less re-reading than 128 x 128 ones
    assert (cube.tile.base_m, cube.tile.base_n, cube.tile.c_bufs) == (128, 256, 1)
    counters = kernel.last_counters
    assert counters["blocks"] == 3 * 2  # one block per core
    assert counters["gm_to_l1_bytes"] == 2 * 64 * (300 * 2 + 400 * 3)  # A per N block, B per M
    assert counters["l1_peak_bytes"] <= get_soc("Ascend910B1").cube.l1_usable_bytes


@pytest.mark.parametrize(("m", "n", "batch"), [(4096, 4096, 1), (1, 4096, 1), (17, 17, 1),
                                                (5000, 40, 1), (128 * 25, 128, 1),
                                                (1024, 1024, 8), (128, 128, 30), (300, 17, 5)])
@pytest.mark.parametrize("cores", [24, 20, 1])
def test_split_covers_every_tile_within_the_cores(m, n, batch, cores):
    mt, nt = -(-m // BASE), -(-n // BASE)
    candidates = splits(mt, nt, cores, batch)
    for s in candidates:
        assert s.bm == -(-mt // s.sm) and s.bn == -(-nt // s.sn)
        assert s.block_dim == min(cores, batch * s.bm * s.bn)
    # the candidates include a split that puts the fewest blocks on the busiest core
    busiest = min(-(-(batch * s.bm * s.bn) // cores) * s.sm * s.sn for s in candidates)
    assert busiest == min(-(-(batch * -(-mt // a) * -(-nt // b)) // cores) * a * b
                          for a in range(1, mt + 1) for b in range(1, nt + 1))


def test_cube_numbers_only_on_dav_c220():
    for soc in SOCS.values():
        assert (soc.cube is not None) == (soc.npu_arch == 2201), soc.name
    cube = get_soc("Ascend910B1").cube
    assert (cube.cores, cube.l0a_bytes, cube.l0b_bytes, cube.l0c_bytes) == (24, 65536, 65536, 131072)
    assert cube.l1_usable_bytes == 512 * 1024 - 256
    assert {d: cube.fractal(d) for d in ("f16", "f32", "i8")} == {"f16": (16, 16), "f32": (16, 8),
                                                                  "i8": (16, 32)}


def test_other_socs_keep_the_scalar_path():
    a, b = _operands(17, 5, 33, np.float16)
    fn = hybrid(_matmul)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        scalar = fn.ascendc(a, b, soc="Ascend310P3")
    cube = fn.ascendc(a, b, soc="Ascend910B1")
    assert "Mmad(" not in scalar and "GetValue" in scalar
    assert "Mmad(" in cube and "GetValue" not in cube and "dav-c220-cube" in cube
    sim = hybrid(_matmul, target="ascend-sim", device_type=["Ascend310P"])
    with pytest.warns(PyascPerformanceWarning):
        got = sim(a, b)
    np.testing.assert_allclose(got.astype(np.float32), (a.astype(np.float32) @ b.astype(np.float32)),
                               rtol=2e-3, atol=2e-3)
    assert sim.kernel(a, b).last_counters["cube_macs"] == 0


def test_float32_b_reaches_the_kernel_transposed():
    a, b = _operands(17, 33, 20, np.float32)
    text = hybrid(_matmul).ascendc(a, b)
    assert "B^T (N x K)" in text and "true, 0));" not in text  # no LoadData transpose of b32
