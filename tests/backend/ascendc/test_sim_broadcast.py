"""Broadcasting on ascend-sim: every pattern, shapes known at compile time or at run time.

With ``dynamic_shape=True`` every dim is ``?`` at compile time, so a size-1 axis that
broadcasts is only known at run time (``x + b`` with ``x`` (5, 8) and ``b`` (1, 8), both
typed ``?x?``).  The kernels must still read each argument within its bounds and index
the size-1 axes as numpy does.  Patterns: size-1 axes in every position of the same rank
(both operand orders: one kernel per rank serves all of them), rank-extending operands,
3-D, 0-d and Python scalars; elementwise ops (exact), fused chains, and reductions after
the broadcast (whole-array, row-wise, ``mean`` whose count is the broadcast size); with
``dynamic_shape`` on and off; float32 and float16 on the vector unit, float64 on the
scalar fallback.  Every result is compared with numpy through ``diff.check``.

The default run compiles one library per (function, dtype, ranks) with run-time shapes
and a few static-shape ones (about 25 builds, all up front, two at a time, ``-O0``).
``PYASC_BROADCAST_SWEEP=full`` runs every pattern in both modes and every dtype
(about 200 builds, some minutes)::

    PYASC_BROADCAST_SWEEP=full .venv/bin/python -m pytest tests/backend/ascendc/test_sim_broadcast.py
"""

from __future__ import annotations

import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[2]
if str(TESTS / "frontend") not in sys.path:
    sys.path.insert(0, str(TESTS / "frontend"))

from ascendc_kit import float64_device  # noqa: E402
from diff import Tol, check, rand  # noqa: E402

from pyasc import hybrid  # noqa: E402
from pyasc.backend.ascendc import PyascPerformanceWarning, lower_program  # noqa: E402
from pyasc.backend.ascendc.sim_backend import build_library  # noqa: E402
from pyasc.runtime.disk_cache import DiskCache  # noqa: E402


@pytest.fixture(autouse=True)
def _float64_on_a_float64_soc(request):
    # float64 cases test the double code paths: on a SoC whose table allowed float64
    # (no real one does: docs/ascendc-backend.md#float64, ascendc_kit.float64_device)
    spec = getattr(request.node, "callspec", None)
    case = spec.params.get("case") if spec is not None else None
    if case is not None and case[1] == "float64":
        with float64_device():
            yield
    else:
        yield


RUNNERS = ("ascend-sim",)
FULL = os.environ.get("PYASC_BROADCAST_SWEEP") == "full"


def elementwise(x, b, s):
    return (x + b, b - x, (x - b) * x + b * s, x / b, np.maximum(x, b), np.minimum(b, x),
            x > b, np.where(x > b, x, b))


def reductions(x, b):
    e = np.exp(x - b)
    return ((x * b).sum(), e / e.sum(axis=-1, keepdims=True), (b - x).max(axis=-1),
            np.mean(x + b, axis=-1, keepdims=True), np.mean(x * b))


FUNCTIONS = {(f.__name__, dyn): hybrid(dynamic_shape=dyn)(f)
             for f in (elementwise, reductions) for dyn in (False, True)}

PATTERNS: dict[tuple[int, int], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {
    (1, 1): [((7,), (1,)), ((1,), (7,)), ((7,), (7,)), ((1,), (1,)), ((1000,), (1,))],
    (2, 2): [((5, 8), (1, 8)), ((5, 8), (5, 1)), ((5, 8), (1, 1)), ((5, 1), (1, 8)),
             ((5, 8), (5, 8)), ((300, 70), (1, 70)), ((300, 70), (300, 1)), ((1, 1), (1, 1))],
    (3, 3): [((2, 3, 4), (2, 1, 4)), ((2, 3, 4), (1, 3, 1)), ((2, 3, 4), (1, 1, 1)),
             ((2, 3, 4), (2, 3, 1)), ((2, 1, 4), (1, 3, 1)), ((1, 3, 4), (2, 1, 1))],
    (2, 1): [((5, 8), (8,)), ((5, 8), (1,)), ((5, 1), (8,)), ((1, 8), (8,))],
    (3, 2): [((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 4)), ((2, 1, 4), (3, 1)), ((2, 3, 4), (3, 4))],
    (3, 1): [((2, 3, 4), (4,)), ((2, 3, 4), (1,)), ((2, 3, 1), (4,))],
    (2, 0): [((5, 8), ()), ((1, 1), ())],
}
"""Shape pairs by operand ranks; every pair also runs with the operands swapped."""

DEFAULT_DYNAMIC = {
    "elementwise": {"float32": [(1, 1), (2, 2), (3, 3), (2, 1), (1, 2), (3, 2), (2, 0)],
                    "float16": [(1, 1), (2, 2), (3, 3), (2, 1), (1, 2), (3, 2)],
                    "float64": [(2, 2), (2, 1)]},
    "reductions": {"float32": [(1, 1), (2, 2), (3, 3), (2, 1)], "float16": [(2, 2)]},
}
"""(function, dtype) -> operand ranks compiled with run-time shapes in the default run."""

DEFAULT_STATIC = [("elementwise", "float32", ((7,), (1,))),
                  ("elementwise", "float32", ((5, 8), (5, 1))),
                  ("elementwise", "float16", ((1, 8), (5, 8))),
                  ("reductions", "float32", ((5, 8), (1, 8)))]
"""(function, dtype, shapes) compiled with static shapes in the default run."""


def _pairs(ranks: tuple[int, int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The shape pairs of ``ranks`` (the swapped rank pair reads them swapped)."""
    if ranks in PATTERNS:
        pairs = PATTERNS[ranks]
        return pairs + [(b, a) for a, b in pairs] if ranks[0] == ranks[1] else pairs
    return [(b, a) for a, b in PATTERNS[ranks[::-1]]]


def _cases() -> list[tuple[str, str, bool, list]]:
    """(function, dtype, dynamic, shape pairs run on one compiled library each)."""
    if FULL:
        ranks = list(PATTERNS) + [r[::-1] for r in PATTERNS if r[0] != r[1]]
        dyn = [(f, d, True, _pairs(r)) for f in ("elementwise", "reductions")
               for d in ("float32", "float16", "float64") for r in ranks]
        static = [(f, d, False, [p]) for f, d, _, pairs in dyn for p in pairs]
        return dyn + static
    dyn = [(f, d, True, _pairs(r)) for f, by_dtype in DEFAULT_DYNAMIC.items()
           for d, ranks in by_dtype.items() for r in ranks]
    return dyn + [(f, d, False, [p]) for f, d, p in DEFAULT_STATIC]


CASES = _cases()


def _args(fn_name: str, shapes: tuple, dtype: str) -> tuple:
    x = rand(shapes[0], dtype, seed=1)
    b = rand(shapes[1], dtype, seed=2)
    if b.ndim:
        b[np.abs(b) < 0.25] = 0.5  # keep x / b moderate
    elif abs(b) < 0.25:
        b = np.asarray(0.5, dtype)
    return (x, b, 1.5) if fn_name == "elementwise" else (x, b)


def _tolerance(fn_name: str, shapes: tuple, dtype: str) -> Tol | None:
    if fn_name == "elementwise":
        return None  # + - * / max min compare where: exact
    size = int(np.prod(np.broadcast_shapes(*shapes)))
    return Tol(math=1, terms=size, dtype=dtype)


def _id(case: tuple[str, str, bool, list]) -> str:
    fn_name, dtype, dyn, pairs = case
    shape = "x".join(map(str, pairs[0][0])) + "+" + "x".join(map(str, pairs[0][1]))
    what = f"ranks{len(pairs[0][0])}{len(pairs[0][1])}" if dyn else shape
    return f"{fn_name}-{dtype}-{'dyn' if dyn else 'static'}-{what}"


@pytest.fixture(scope="module", autouse=True)
def _private_cache(run_tmp_path, worker_order):
    """A disk cache of this module shared by the run's workers and -O0 builds; every
    library is built here, in parallel, once per run (the workers take turns)."""
    root = run_tmp_path / "ascend-sim-broadcast"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYASC_CACHE_DIR", str(root))
        mp.setenv("PYASC_SIM_OPT", "-O0")
        cache = DiskCache(root, backend="ascend-sim")
        with ThreadPoolExecutor(max_workers=2) as pool, float64_device():
            for fn_name, dtype, dyn, pairs in worker_order(CASES):
                fn = FUNCTIONS[fn_name, dyn]
                pool.submit(_build, fn, _args(fn_name, pairs[0], dtype), cache)
        yield


def _build(fn, args: tuple, cache: DiskCache) -> None:  # noqa: ANN001
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        ap = lower_program(fn.specialize(*args))
    if ap.kernels:
        build_library(ap, True, cache, "-O0")


@pytest.mark.parametrize("case", CASES, ids=_id)
@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_broadcast_on_ascend_sim(case: tuple[str, str, bool, list]) -> None:
    fn_name, dtype, dyn, pairs = case
    fn = FUNCTIONS[fn_name, dyn]
    for shapes in pairs:
        check(fn, *_args(fn_name, shapes, dtype), runners=RUNNERS,
              rtol=_tolerance(fn_name, shapes, dtype))


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_one_library_serves_every_pattern_of_a_rank() -> None:
    """The run-time broadcast reuses the dynamic-shape kernel: no rebuild per pattern."""
    fn = FUNCTIONS["elementwise", True]
    kernel = fn.kernel(*_args("elementwise", ((5, 8), (5, 8)), "float32"),
                       target="ascend-sim")
    for shapes in _pairs((2, 2)):
        again = fn.kernel(*_args("elementwise", shapes, "float32"), target="ascend-sim")
        assert again is kernel


def test_the_default_run_covers_the_issue_patterns() -> None:
    """(7,)+(1,), (5,8)+(1,8), (5,8)+(5,1), (5,8)+(1,1), (1,8)+(5,8) with run-time shapes."""
    dynamic = {tuple(p) for f, d, dyn, pairs in CASES if dyn and d == "float32"
               and f == "elementwise" for p in pairs}
    for pair in [((7,), (1,)), ((5, 8), (1, 8)), ((5, 8), (5, 1)), ((5, 8), (1, 1)),
                 ((1, 8), (5, 8))]:
        assert pair in dynamic
