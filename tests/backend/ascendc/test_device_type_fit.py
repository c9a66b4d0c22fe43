"""``device_type=[...]``: the function must fit every SoC listed (Unified Buffer, element
types, vector APIs); one variant is lowered per SoC; a SoC that does not fit is a coded
error naming the SoC, the operation and the user's line."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import NPUBackend, PyascPerformanceWarning, SimBackend, lower_program
from pyasc.backend.ascendc.codegen import lower_variants
from pyasc.backend.ascendc.fit import SocFitError
from pyasc.backend.ascendc.soc import get_soc, socs_for
from pyasc.ir.parser import parse_module


def _line_of(fn, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    return first + next(i for i, text in enumerate(lines) if needle in text)


@hybrid(device_type=["Ascend310P3", "Ascend910B1"])
def wide_rows(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


# 10000 float32 per row: fits the 248 KB InitBuffer budget of a 310P3 as whole rows, not
# the 184 KB of a 910B1, whose variant streams each row in column tiles instead
ROWS = np.zeros((2, 10000), np.float32)


def test_a_row_that_fits_one_soc_only_is_streamed_on_the_other():
    program = wide_rows.specialize(ROWS)
    variants = lower_variants(program, socs_for(program.options["device_type"]))
    assert [ap.soc.name for ap in variants] == ["Ascend310P3", "Ascend910B1"]
    assert [[k.schedule for k in ap.kernels] for ap in variants] == [["rows"], ["longrows"]]


def test_the_run_time_row_check_names_the_soc_of_its_variant():
    @hybrid(dynamic_shape=True, device_type=["Ascend910B1", "Ascend310P3"])
    def dyn_rows(x):
        return x / np.sum(x, axis=-1, keepdims=True)

    program = dyn_rows.specialize(ROWS)
    variants = lower_variants(program, socs_for(program.options["device_type"]))
    assert [ap.soc.name for ap in variants] == ["Ascend910B1", "Ascend310P3"]
    for ap in variants:
        checks = [op for op in ap.host.walk() if op.name == "ascend.ub_check"]
        assert checks and all(op.attributes["soc"] == ap.soc.name for op in checks)


@hybrid
def half_square(x):
    y = x * x
    return y + 1


def _bf16_program(device_type=None):
    """``half_square`` on bfloat16 (built from its float16 IR: bf16 arrays need ml_dtypes
    to cross the call boundary, the backend does not)."""
    program = half_square.specialize(np.zeros(64, np.float16))
    module = parse_module(str(program.module).replace("f16", "bf16"))
    options = {**program.options, "device_type": device_type}
    return dataclasses.replace(program, module=module, options=options)


def _quiet_lower(program, soc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        return lower_program(program, soc)


def test_bf16_fits_a_910b_but_not_a_soc_without_bf16():
    assert _quiet_lower(_bf16_program(), "Ascend910B1").kernels
    for soc in ("Ascend310P3", "Ascend910A"):
        with pytest.raises(SocFitError) as info:
            _quiet_lower(_bf16_program(), soc)
        err = info.value
        assert err.code == "E50041"
        assert f"does not fit {soc}" in err.message and "bfloat16" in err.message
        assert "'arith.mul'" in err.message
        assert err.lineno == _line_of(half_square, "y = x * x")
        assert soc in err.hint and "device_type" in err.hint


@pytest.mark.parametrize("backend", [SimBackend, lambda: NPUBackend(require_device=False)],
                         ids=["ascend-sim", "ascend"])
def test_a_later_soc_without_bf16_is_refused_by_both_targets(backend):
    program = _bf16_program(("Ascend910B1", "Ascend310P3"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        with pytest.raises(SocFitError, match="does not fit Ascend310P3"):
            backend().compile(program)


@hybrid(device_type=["Ascend910B1", "Ascend910B4"])
def scaled(x):
    return x * 3


def _soc_without_f32_arith(name: str):
    base = get_soc("Ascend910B1")
    dtypes = {**base.dtypes, "arith": base.dtypes["arith"] - {"f32"}}
    return dataclasses.replace(base, name=name, dtypes=dtypes)


def test_code_scalar_only_on_a_later_soc_warns_naming_that_soc():
    program = scaled.specialize(np.zeros(64, np.float32))
    socs = [get_soc("Ascend910B1"), _soc_without_f32_arith("TestSoC")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        variants = lower_variants(program, socs)
    assert [type(k).__name__ for k in variants[0].kernels] == ["VectorKernel"]
    assert [type(k).__name__ for k in variants[1].kernels] == ["ScalarKernel"]
    perf = [w for w in caught if issubclass(w.category, PyascPerformanceWarning)]
    assert len(perf) == 1 and "on TestSoC" in str(perf[0].message)
    assert perf[0].lineno == _line_of(scaled, "return x * 3")


def test_code_scalar_on_every_soc_warns_once():
    program = scaled.specialize(np.zeros(64, np.float32))
    socs = [_soc_without_f32_arith("SocA"), _soc_without_f32_arith("SocB")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lower_variants(program, socs)
    perf = [str(w.message) for w in caught if issubclass(w.category, PyascPerformanceWarning)]
    assert len(perf) == 1 and "on SocA" in perf[0]


def test_every_listed_soc_gets_its_own_variant():
    program = scaled.specialize(np.zeros(64, np.float32))
    variants = lower_variants(program, socs_for(program.options["device_type"]))
    assert [ap.soc.name for ap in variants] == ["Ascend910B1", "Ascend910B4"]
    assert all("for " + ap.soc.name in ap.source for ap in variants)


def test_ascend_sim_keeps_every_variant_and_runs_the_first():
    @hybrid(device_type=["Ascend310P3", "Ascend910B1"])
    def scalar_sum(x):
        return x[0] + x[1]  # host code only: no kernel to build

    kernel = SimBackend().compile(scalar_sum.specialize(np.zeros(4, np.float32)))
    assert list(kernel.variants) == ["Ascend310P3", "Ascend910B1"]
    assert kernel.ascend is kernel.variants["Ascend310P3"]
