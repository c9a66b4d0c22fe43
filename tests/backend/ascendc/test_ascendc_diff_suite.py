"""A representative part of the differential suite, run on ascend-sim in every test run.

``PYASC_DIFF_RUNNERS=ascend-sim pytest tests/frontend/test_diff_*.py tests/differential``
runs the whole differential suite on the device model (one C++ build per kernel: far
too slow for every run).  This module re-runs selected ``check()`` calls of
``tests/frontend/test_diff_kernels.py``, ``tests/differential/test_seed_examples.py``
(and a few of ``test_diff_control.py`` and ``test_dtype_layout_matrix.py``) with
``runners=("ascend-sim",)``, adding float16 inputs, through the same harness
(``tests/frontend/diff.py``: device budgets ``DEVICE_ULPS``, documented limitations
skip); the same cases run with ``target="ascend"`` through the stand-in AscendCL
library (tests/acl_standin).  Every library is built up front, two at a time, into a private disk cache that
the ``ascend-sim`` runner then reads; ``-O0`` builds (the same code, faster to build).

Sums without a stated budget in the original tests (``x.sum(axis=1)`` of 4 terms is
exact on the CPU, which adds in numpy's order) get ``SUM(n)`` here: the vector unit's
``ReduceSum`` adds in a tree.
"""

from __future__ import annotations

import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[2]
for _sub in ("frontend", "differential"):
    if str(TESTS / _sub) not in sys.path:
        sys.path.insert(0, str(TESTS / _sub))

import test_diff_control as control  # noqa: E402
import test_diff_kernels as kernels  # noqa: E402
import test_dtype_layout_matrix as matrix  # noqa: E402
import test_seed_examples as seed  # noqa: E402
from diff import EXACT, MATH, SUM, Tol, check, on_device, rand, views  # noqa: E402
from test_ascendc_errors import write_chosen  # noqa: E402

from pyasc import hybrid  # noqa: E402
from pyasc.backend.ascendc import PyascPerformanceWarning, lower_program  # noqa: E402
from pyasc.backend.ascendc.sim_backend import build_library  # noqa: E402
from pyasc.backend.ascendc.soc import socs_for  # noqa: E402
from pyasc.runtime.disk_cache import DiskCache  # noqa: E402

RUNNERS = ("ascend-sim",)


@hybrid
def signs_in_a_loop(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):  # scalar code: half operands of ?: with int literals
        out[i] = np.sign(x[i]) + np.abs(x[i])
    return out


def _norm_cases(dtype: str, shape: tuple[int, ...]) -> list[tuple]:
    x, n = rand(shape, dtype), shape[-1]
    gamma, beta = rand(shape[-1:], dtype, 1), rand(shape[-1:], dtype, 2)
    return [(kernels.softmax, (x,), Tol(math=1, terms=n)),
            (kernels.layer_norm, (x, gamma, beta), SUM(2 * n)),
            (kernels.gelu, (x,), Tol(math=2))]


def _cases() -> dict[str, list[tuple]]:
    img = seed.image((9, 11), "float32")
    return {
        "norm-f32": _norm_cases("float32", (3, 7)),
        "norm-f32-3d": _norm_cases("float32", (2, 4, 5)),
        "norm-f16": _norm_cases("float16", (4, 33)),
        "relu": [(seed.relu, (rand((257,), dt),), None) for dt in ("float32", "float16")]
        + [(seed.relu_dyn, (rand((13, 7), "float16"),), None)],
        "linear-view": [(kernels.linear, (views(rand((6, 4)))[1], rand((3, 4), seed=1),
                                          rand((3,), seed=2)), SUM(4))],
        "conv-pool": [(kernels.conv1d, (rand((10,)), rand((3,), seed=4)), SUM(3)),
                      (kernels.max_pool2d, (rand((10, 11), "float16"), 2), None)],
        "cumsum": [(kernels.cumsum, (rand((5,), "int32"),), None),
                   (kernels.cumsum, (rand((4, 3), "float16"),), None)],
        "nms": [(kernels.greedy_suppress, (rand((9,), "float64"), t), None)
                for t in (-5.0, 0.8)],
        "bilateral": [(seed.bilateral, (img,), seed.FILTER_TOL)],
        "matrix-f16": [(matrix.COMPILED["cast", False], (rand((1, 1), "float16"),), None),
                       (matrix.COMPILED["select", True],
                        (rand((3, 5), "float16"), rand((5,), "float16", 7)), None)],
        "scalar-f16": [(signs_in_a_loop, (rand((6,), "float16") * (np.arange(6) > 0),), None)],
        "branches": [(control.row_loop, (rand((4, 3)),), None),
                     (control.ping_pong, (rand((5,), "float16"), 3), None),
                     (control.static_branches, (rand((3, 4)),), SUM(4))],
    }


CASES = _cases()


@pytest.fixture(scope="module", autouse=True)
def _private_cache(run_tmp_path, worker_order):
    """A disk cache of this module shared by the run's workers and -O0 builds; every
    library is built here, in parallel, once per run (the workers take turns)."""
    root = run_tmp_path / "ascend-sim-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYASC_CACHE_DIR", str(root))
        mp.setenv("PYASC_SIM_OPT", "-O0")
        cache = DiskCache(root, backend="ascend-sim")
        with ThreadPoolExecutor(max_workers=2) as pool:
            for fn, args, _ in worker_order([c for cases in CASES.values() for c in cases]):
                pool.submit(_build, fn, args, cache)
        yield


def _build(fn, args, cache: DiskCache) -> None:  # noqa: ANN001
    program = fn.specialize(*args)
    soc = socs_for(program.options.get("device_type"))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        try:
            ap = lower_program(program, soc)
        except Exception:  # noqa: BLE001 - the test itself reports it
            return
    if ap.kernels:
        build_library(ap, True, cache, "-O0")


@pytest.mark.parametrize("group", sorted(CASES))
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_differential_on_ascend_sim(group: str) -> None:
    for fn, args, tol in CASES[group]:
        check(fn, *args, runners=RUNNERS, rtol=tol)


@pytest.mark.parametrize("group", sorted(CASES))
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_differential_on_ascend_through_the_acl_standin(group: str, ascend_standin) -> None:
    """The same subset with ``target="ascend"``: the ascend-sim objects loaded and
    launched through pyasc's AscendCL runtime and the stand-in library."""
    for fn, args, tol in CASES[group]:
        check(fn, *args, runners=("ascend",), rtol=tol)
    assert ascend_standin.stats().device_blocks == 0  # every launch freed its buffers


def test_float16_inputs_are_covered() -> None:
    dtypes = {a.dtype for cases in CASES.values() for _, args, _ in cases
              for a in args if isinstance(a, np.ndarray)}
    assert np.dtype("float16") in dtypes and np.dtype("float32") in dtypes


def test_device_budgets_keep_exact_comparisons_exact() -> None:
    f16, f32 = np.dtype("float16"), np.dtype("float32")
    assert on_device(None) is None and on_device(EXACT).rtol(f32) == 0.0
    assert on_device(MATH).rtol(f32) >= MATH.rtol(f32) > 0
    assert on_device(SUM(8) + MATH).rtol(f16) >= (SUM(8) + MATH).rtol(f16)
    assert on_device(1e-3) == 1e-3  # a stated number is used as it is


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_documented_limitations_skip_the_device_runner_only() -> None:
    x = np.array([1, -1, 2, -3], np.float32)  # write_chosen: lowering fails, no build
    expected = check(write_chosen, x, x + 1, 4, runners=("ir", "ascend-sim"))
    assert expected[0] == 1.0
    with pytest.raises(pytest.skip.Exception, match="not supported on ascend-sim/device"):
        check(write_chosen, x, x + 1, 4, runners=RUNNERS)
