"""Cube matmuls of run-time shapes (``dynamic_shape=True``): one compiled kernel runs
every shape, its tiling computed by the host per call; calls outside the kernel's
limits run the scalar twin; numpy's shape errors are raised as on the scalar path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_plan import CubeKernel


def _mm(a, b):
    return a @ b


def _at_b(a, b):
    return a.T @ b


def _a_bt(a, b):
    return np.matmul(a, np.swapaxes(b, -1, -2))


def _widened(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


FORMS = {f.__name__: f for f in (_mm, _at_b, _a_bt, _widened)}
TOL = {np.float16: 2e-3, np.float32: 1e-5}


def _operands(sa, sb, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.int8:
        return (rng.integers(-128, 128, sa).astype(dtype), rng.integers(-128, 128, sb).astype(dtype))
    return rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)


def _logical(form, a, b):
    if form == "_at_b":
        return a.T, b
    return (a, np.swapaxes(b, -1, -2)) if form == "_a_bt" else (a, b)


def _check(form, sim, a, b, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(a, b)
    want = hybrid(FORMS[form], target="interpret")(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    if dtype == np.int8:
        assert np.array_equal(got, want)
    else:
        la, lb = _logical(form, a, b)
        scale = np.abs(la.astype(np.float64)) @ np.abs(lb.astype(np.float64))
        assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))
    return got


def _reads(batch, m, n, k, itemsize):
    """GM -> L1 bytes of 128 x 128 blocks without L1 residency (cube_tiling.read_elems)."""
    return batch * k * (-(-n // 128) * m + -(-m // 128) * n) * itemsize


# (form, dtype, shapes of one rank): all on one compiled kernel
CASES = [
    ("_mm", np.float16, [((17, 33), (33, 20)), ((300, 130), (130, 257)), ((1, 600), (600, 300)),
                         ((129, 1), (1, 1)), ((64, 4096), (4096, 16))]),
    ("_mm", np.float32, [((17, 33), (33, 20)), ((130, 300), (300, 129))]),
    ("_at_b", np.float16, [((33, 17), (33, 20)), ((130, 129), (130, 1))]),
    ("_at_b", np.float32, [((33, 17), (33, 20)), ((5, 200), (5, 130))]),
    ("_a_bt", np.float16, [((3, 17, 33), (3, 20, 33)), ((2, 130, 64), (2, 257, 64))]),
    ("_widened", np.int8, [((17, 300), (300, 20)), ((1, 33), (33, 130))]),
    ("_mm", np.float16, [((3, 17, 33), (3, 33, 20)), ((3, 17, 33), (1, 33, 20)),
                         ((1, 5, 40), (4, 40, 7)), ((30, 1, 17), (30, 17, 130))]),
    ("_mm", np.float16, [((2, 1, 17, 33), (1, 3, 33, 20)), ((2, 2, 5, 8), (2, 1, 8, 9))]),
    ("_mm", np.float32, [((4, 17, 33), (33, 20)), ((2, 100, 64), (64, 130))]),   # folded into M
    ("_mm", np.float16, [((33,), (33, 20)), ((300,), (300, 1))]),
    ("_mm", np.float16, [((2, 17, 33), (33,)), ((5, 1, 9), (9,))]),
]


@pytest.mark.parametrize(("form", "dtype", "shapes"), CASES)
def test_one_kernel_runs_every_shape(form, dtype, shapes):
    sim = hybrid(FORMS[form], target="ascend-sim", dynamic_shape=True)
    kernel = None
    for i, (sa, sb) in enumerate(shapes):
        a, b = _operands(sa, sb, dtype, i)
        got = _check(form, sim, a, b, dtype)
        k = sim.kernel(a, b)
        assert kernel is None or k is kernel   # not recompiled
        kernel = k
        (cube,) = [x for x in k.ascend.kernels if isinstance(x, CubeKernel)]
        assert cube.dynamic and (cube.tile.base_m, cube.tile.base_n) == (128, 128)
        counters = k.last_counters
        la, lb = _logical(form, a, b)
        kk = la.shape[-1]
        # a one-row tile of A^T is computed as two rows (cube_plan: no GEMV from A^T)
        extra = got.size // la.shape[0] * kk if form == "_at_b" and la.shape[0] % 128 == 1 else 0
        assert counters["cube_macs"] == got.size * kk + extra
        assert counters["l0c_to_gm_bytes"] == got.nbytes
        if form == "_mm" and dtype == np.float16 and la.ndim == lb.ndim == 2:
            m, n = la.shape[0], lb.shape[1]
            assert counters["gm_to_l1_bytes"] == _reads(1, m, n, kk, 2)
            units = -(-m // 128) * -(-n // 128)
            assert counters["blocks"] == min(units, 24)
    assert len(sim.specializations) == 1


def test_a_batch_against_a_matrix_is_folded_into_m():
    sim = hybrid(_mm, target="ascend-sim", dynamic_shape=True)
    a, b = _operands((8, 100, 64), (64, 130), np.float16, 0)
    _check("_mm", sim, a, b, np.float16)
    (cube,) = [k for k in sim.kernel(a, b).ascend.kernels if isinstance(k, CubeKernel)]
    assert cube.fold_m and not cube.groups
    # B read once per 128-row block of the 800 rows, not once per batch index
    assert sim.kernel(a, b).last_counters["gm_to_l1_bytes"] == _reads(1, 800, 130, 64, 2)


@pytest.mark.parametrize(("sa", "sb"), [((5, 0), (0, 7)), ((2, 70000), (70000, 3))])
def test_shapes_outside_the_kernel_limits_run_the_scalar_twin(sa, sb):
    # K = 0 (an empty K loop would leave L0C unset); a row of 70000 elements (beyond
    # Nd2NzParams.srcDValue, uint16)
    sim = hybrid(_mm, target="ascend-sim", dynamic_shape=True)
    a, b = _operands(sa, sb, np.float16, 1)
    _check("_mm", sim, a, b, np.float16)
    counters = sim.kernel(a, b).last_counters
    assert counters["cube_macs"] == 0 and counters["gm_scalar_write_bytes"] > 0
    a, b = _operands((17, 33), (33, 20), np.float16, 2)    # the same compiled code
    _check("_mm", sim, a, b, np.float16)
    assert sim.kernel(a, b).last_counters["cube_macs"] == 17 * 20 * 33
    assert len(sim.specializations) == 1


@pytest.mark.parametrize(("sa", "sb", "message"), [
    ((17, 33), (32, 20), "mismatch in its core dimension 0"),
    ((3, 17, 33), (2, 33, 20), "could not be broadcast together")])
def test_shape_errors_are_numpys(sa, sb, message):
    sim = hybrid(_mm, target="ascend-sim", dynamic_shape=True)
    a, b = _operands(sa, sb, np.float16, 3)
    with pytest.raises(ValueError, match=message):
        sim(a, b)
    with pytest.raises(ValueError):
        np.matmul(a, b)
