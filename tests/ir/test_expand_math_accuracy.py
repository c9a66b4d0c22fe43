"""Accuracy of ``expand-math`` over the whole float32 range (through the interpreter).

Every ``STRIDE``-th float32 bit pattern (about 4 million values per function, all
binades, both signs, denormals, infinities and NaNs) plus the special values of
``accuracy.SPECIAL_VALUES`` must stay within the stated bounds of ``SPECS`` against
float64 references; docs/math-accuracy.md (denser sweep, ``benchmarks/math_accuracy.py``)
must state the same bounds and report measurements within them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from pyasc.ir.passes.mathlib.accuracy import (
    OPS,
    POW_BOUND,
    POW_EXPONENTS,
    SPECS,
    expanded,
    measure,
    unary,
)

STRIDE = 1031  # prime, so the low mantissa bits vary too
DOC = Path(__file__).resolve().parents[2] / "docs" / "math-accuracy.md"


@pytest.mark.parametrize("fma", [False, True], ids=["mul-add", "fma"])
@pytest.mark.parametrize("name", list(SPECS))
def test_sweep_within_stated_bound(name, fma):
    stats = measure(name, STRIDE, fma=fma)
    assert stats.count > 4_000_000
    assert stats.max_ulp <= SPECS[name].bound, (stats.max_ulp, stats.worst_input)
    assert stats.max_steps_vs_numpy <= (1 << 24 if name == "sigmoid" else 4)


@pytest.mark.parametrize("fma", [False, True], ids=["mul-add", "fma"])
@pytest.mark.parametrize("name", list(SPECS))
def test_fastmath_sweep_within_bound_on_ordinary_inputs(name, fma):
    stats = measure(name, 8191, fastmath=True, fma=fma)
    assert stats.max_ulp <= SPECS[name].bound, (stats.max_ulp, stats.worst_input)


@pytest.mark.parametrize("n", POW_EXPONENTS)
def test_pow_sweep_correctly_rounded(n):
    stats = measure(f"pow{n}", 8191)
    assert stats.max_ulp <= POW_BOUND, (stats.max_ulp, stats.worst_input)
    assert stats.max_steps_vs_numpy <= 1


def test_sin_cos_beyond_stated_domain_stay_bounded():
    for name in ("sin", "cos"):
        stats = measure(name, 65537)
        assert 0 < stats.beyond_domain_max_abs <= 2.0  # inaccurate but within [-1, 1]


INF, NAN = math.inf, math.nan
EXACT = [
    ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", INF, INF), ("exp", -INF, 0.0),
    ("exp", 89.0, INF), ("exp", -104.0, 0.0), ("exp", 1.0, float(np.float32(math.e))),
    ("exp2", 0.0, 1.0), ("exp2", 10.0, 1024.0), ("exp2", -149.0, 2.0 ** -149),
    ("exp2", -150.0, 0.0), ("exp2", 128.0, INF), ("exp2", -INF, 0.0), ("exp2", INF, INF),
    ("exp2", -126.5, float(np.float32(2.0 ** -126.5))),
    ("expm1", 0.0, 0.0), ("expm1", -0.0, -0.0), ("expm1", -INF, -1.0), ("expm1", INF, INF),
    ("expm1", 1e-40, 1e-40), ("expm1", -50.0, -1.0), ("expm1", 89.0, INF),
    ("log", 1.0, 0.0), ("log", 0.0, -INF), ("log", -0.0, -INF), ("log", -1.0, NAN),
    ("log", INF, INF), ("log", -INF, NAN), ("log", 2.0 ** -149, float(np.float32(-149 * math.log(2)))),
    ("log2", 1.0, 0.0), ("log2", 8.0, 3.0), ("log2", 2.0 ** -149, -149.0),
    ("log2", 2.0 ** -130, -130.0), ("log2", 0.0, -INF), ("log2", -2.0, NAN),
    ("log10", 1.0, 0.0), ("log10", 1000.0, 3.0), ("log10", 0.0, -INF),
    ("log10", INF, INF), ("log10", -1.0, NAN),
    ("log1p", 0.0, 0.0), ("log1p", -0.0, -0.0), ("log1p", -1.0, -INF), ("log1p", -2.0, NAN),
    ("log1p", INF, INF), ("log1p", 1e-40, 1e-40), ("log1p", -1e-40, -1e-40),
    ("tanh", 0.0, 0.0), ("tanh", -0.0, -0.0), ("tanh", INF, 1.0), ("tanh", -INF, -1.0),
    ("tanh", 10.0, 1.0), ("tanh", -10.0, -1.0), ("tanh", 1e-40, 1e-40),
    ("sigmoid", 0.0, 0.5), ("sigmoid", INF, 1.0), ("sigmoid", -INF, 0.0),
    ("sigmoid", 20.0, 1.0), ("sigmoid", -103.0, float(np.float32(math.exp(-103.0)))),
    ("erf", 0.0, 0.0), ("erf", -0.0, -0.0), ("erf", INF, 1.0), ("erf", -INF, -1.0),
    ("erf", 4.0, 1.0), ("erf", -5.0, -1.0),
    ("sin", 0.0, 0.0), ("sin", -0.0, -0.0), ("sin", INF, NAN), ("sin", -INF, NAN),
    ("sin", 1e-40, 1e-40), ("cos", 0.0, 1.0), ("cos", -0.0, 1.0), ("cos", INF, NAN),
]
EXACT += [(name, NAN, NAN) for name in SPECS]


@pytest.mark.parametrize("name, x, want", EXACT, ids=lambda v: repr(v))
def test_special_values_are_exact(name, x, want):
    y = expanded(unary(OPS[name]))(np.array([x], np.float32))[0]
    if math.isnan(want):
        assert np.isnan(y)
    else:
        assert y == np.float32(want), y
        assert bool(np.signbit(y)) == (math.copysign(1.0, want) < 0), y


def _doc_rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in SPECS:
            rows[cells[0]] = cells
    return rows


def test_doc_states_the_tested_bounds_and_measurements_within_them():
    rows = _doc_rows()
    assert set(rows) == set(SPECS)
    for name, cells in rows.items():
        bound, measured = float(cells[1]), float(cells[2])
        assert bound == SPECS[name].bound, name
        assert measured <= bound, name
        assert float(cells[7]) <= bound, name  # the "no FMA" column
    assert re.search(r"stride \d+", DOC.read_text())
