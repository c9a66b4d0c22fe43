"""Errors and guarantees of the AscendC backend: E50003, toolchain missing, scalar-code
warnings, run-time checks, and no ``Subs``/``Divs``/``Neg`` in any generated source."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from ascendc_cases import cumulative_rows, layernorm, softmax, zoo
from ascendc_kit import STORE, run_sim

from pyasc import hybrid
from pyasc.backend.ascendc import (
    NPUBackend,
    PyascPerformanceWarning,
    generate_ascendc,
    lower_program,
)
from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError
from pyasc.backend.base import get_backend
from pyasc.errors import OutOfMemoryError, ToolchainMissingError, UnsupportedSyntaxError


@hybrid
def wide_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _line_of(fn, needle: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn.__wrapped__)
    return first + next(i for i, text in enumerate(lines) if needle in text)


def test_static_row_too_long_for_one_tile_streams_in_column_tiles():
    # was E50003 (the row had to stay whole in the UB): now the long-rows schedule
    x = np.zeros((2, 60000), np.float32)
    ap = lower_program(wide_softmax.specialize(x))
    assert [k.schedule for k in ap.kernels] == ["longrows"]
    assert "longrows schedule: each row streamed 2 time(s)" in ap.source


def test_dynamic_row_too_long_for_one_tile_runs_the_long_rows_twin():
    x = np.random.default_rng(3).standard_normal((2, 60000)).astype(np.float32)
    got, k = run_sim(softmax, x)
    np.testing.assert_allclose(got, softmax.__wrapped__(x), rtol=1e-5, atol=1e-9)
    # one launch, x streamed twice (online max and sum, then the output): the long twin
    assert len(k.last_launches) == 1 and k.last_counters["gm_to_ub_bytes"] == 2 * x.nbytes


def test_e50003_when_one_column_tile_does_not_fit():
    from pyasc.backend.ascendc.vec_alloc import PhysBuf, choose_tile
    from pyasc.ir.core import Location

    # 100 double-buffered float32 results: 256 columns of each take 200 KB
    phys = [PhysBuf(f"o{i}Que_", "tile", 4, "out", 2) for i in range(100)]
    with pytest.raises(OutOfMemoryError) as info:
        choose_tile(phys, 188416, 8, 256, None, Location("a.py", 3, 1), "k", "Ascend910B1",
                    max_rows=1)
    assert info.value.code == "E50003"
    assert "fusion_scope" in str(info.value) and "shorten" not in str(info.value)


def test_every_soc_of_device_type_is_checked():
    @hybrid(device_type=["Ascend910B1", "Ascend310P3"])
    def shift(x):
        return x + 1

    x = np.zeros(10, np.float32)
    with pytest.raises(ToolchainMissingError):
        NPUBackend(require_device=False).compile(shift.specialize(x))
    src = shift.ascendc(x)
    assert "Ascend910B1" in src and shift.ascendc(x, soc="Ascend310P3") != src


def test_npu_target_without_cann_is_e50030(monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    with pytest.raises(ToolchainMissingError) as info:
        get_backend("ascend").compile(layernorm.specialize(
            np.zeros((2, 4), np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32)))
    assert info.value.code == "E50030"
    assert "ASCEND_HOME_PATH" in info.value.message
    assert "set_env.sh" in str(info.value)


def test_scalar_code_warns_with_the_python_line():
    x = np.zeros((6, 6), np.float32)
    with pytest.warns(PyascPerformanceWarning) as record:
        lower_program(cumulative_rows.specialize(x))
    w = record[0]
    assert w.filename.endswith("ascendc_cases.py")
    assert w.lineno == _line_of(cumulative_rows, "for i in range(x.shape[0])")
    assert "scalar" in str(w.message)


def test_vector_code_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        lower_program(softmax.specialize(np.zeros((3, 5), np.float32)))


@hybrid(dynamic_shape=True)
def asserting(x, limit):
    total = 0.0
    for i in range(x.shape[0]):
        assert x[i] < limit, "value over the limit"
        total += x[i] * 2
    return total


def test_user_assert_in_a_scalar_kernel_raises_assertion_error():
    x = np.arange(5, dtype=np.float32)  # float64 data is not device code (E50041)
    out, _ = run_sim(asserting, x, 10.0)
    assert out == pytest.approx(20.0)
    with pytest.raises(AssertionError, match="value over the limit"):
        run_sim(asserting, x, 3.0)


@hybrid
def carried_array(x):
    acc = np.zeros_like(x)
    for _ in range(3):
        acc = acc + np.sin(x)
    return acc


carried_dynamic = hybrid(dynamic_shape=True)(carried_array.__wrapped__)


@hybrid
def swapped_in_place(x, y, steps):
    a, b = x, y  # the caller's arrays: numpy writes into them, copies would not
    for _ in range(steps):
        b[0] = a[1]
        a, b = b, a
    return a


@hybrid
def write_chosen(x, y, n):
    for i in range(n):
        if x[i] > 0:
            out = x
        else:
            out = y
        out[i] = 1.0  # numpy writes into x or y
    return x


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_unsupported_carried_arrays_are_coded_errors_at_the_loop():
    # static carried arrays live in carrier arrays (test_ascendc_diff_suite runs them);
    # run-time sizes, and writes into a carried buffer that may alias, cannot
    x = np.zeros(4, np.float32)
    lower_program(carried_array.specialize(x))
    for fn, args, what in [(carried_dynamic, (x,), "run-time size"),
                           (swapped_in_place, (x, x + 1, 3), "may alias"),
                           (write_chosen, (x, x + 1, 4), "chosen by a branch")]:
        with pytest.raises(DeviceUnsupportedError, match=what) as info:
            lower_program(fn.specialize(*args))
        err = info.value
        assert err.code == "E50010" and isinstance(err, UnsupportedSyntaxError)
        assert "not supported on ascend-sim/device" in str(err)
        assert err.lineno is not None and err.filename == __file__


_FORBIDDEN = re.compile(r"\b(Subs|Divs|Neg)\s*\(")


def test_no_subs_divs_or_neg_in_generated_sources():
    extra = [(zoo, (np.ones((4, 8), np.float16), np.ones((4, 8), np.float16),
                    np.float16(2))),
             (softmax, (np.ones((4, 8), np.float16),))]
    sources = [b.ascend.source for b in STORE.builds.values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        sources += [generate_ascendc(fn.specialize(*args)) for fn, args in extra]
    assert len(sources) >= 3
    for text in sources:
        assert not _FORBIDDEN.search(text)
    assert any("Adds(" in t and "-" in t for t in sources)  # x - s became Adds(x, -s)
