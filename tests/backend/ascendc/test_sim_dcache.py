"""The scalar unit's data cache on ascend-sim, and how scalar kernels respect it.

``GlobalTensor::SetValue`` writes GM through a per-core data cache that writes whole
64-byte lines back only when ``DataCacheCleanAndInvalid`` cleans them (asc-devkit docs).
The sim keeps each block's dirty lines: a block ending with one, two blocks writing one
line, or a DMA touching a dirty line of its own block is a violation.  Scalar kernels
flush once per block before every exit and split their loops at line boundaries.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from ascendc_kit import STORE, check, float64_device

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning, SimKernel, lower_program, scalar_plan
from pyasc.backend.ascendc.sim import SimCompileError, SimConfig, SimViolationError, compile_kernels
from pyasc.backend.ascendc.sim_backend import build_library

SOURCE = """\
#include "kernel_operator.h"
using namespace AscendC;
// block b writes `n` floats from element b * n, then flushes as `mode` says
extern "C" __global__ __aicore__ void scalar_rows(GM_ADDR x, int32_t n, int32_t mode) {
  GlobalTensor<float> g;
  g.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n, n);
  for (int32_t i = 0; i < n; ++i) g.SetValue(i, float(GetBlockIdx() * n + i));  // STORE
  if (mode == 1) DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(g);
  if (mode == 2) DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g);
  if (mode == 3) {  // the docs' example 2: a line in two parts needs two calls
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g);
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g[8]);
  }
}
// scalar writes, then a DMA of the same bytes before (mode 0) or after (mode 1) a flush
extern "C" __global__ __aicore__ void scalar_then_dma(GM_ADDR x, int32_t n, int32_t mode) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> b;
  pipe.InitBuffer(b, 256);
  LocalTensor<float> u = b.Get<float>();
  GlobalTensor<float> g;
  g.SetGlobalBuffer((__gm__ float*)x, n);
  g.SetValue(3, 1.0f);  // DIRTY
  if (mode == 1) DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(g);
  DataCopy(u, g, 16);  // DMA READ
  DataCopy(g[16], u, 16);
  g.SetValue(40, 2.0f);
  DataCopy(g[32], u, 16);  // DMA WRITE
  DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(g);
}
"""


def _line(marker: str) -> int:
    return next(i for i, t in enumerate(SOURCE.splitlines(), 1) if t.rstrip().endswith(marker))


@pytest.fixture(scope="module")
def lib():
    return compile_kernels(SOURCE, ["scalar_rows", "scalar_then_dma"], filename="dcache.cpp",
                           config=SimConfig(opt_level="-O0"))


def test_a_flushed_block_leaves_its_writes_in_gm(lib):
    x = np.zeros(64, np.float32)
    counters = lib.launch("scalar_rows", 4, x, 16, 1)  # 64-byte rows: one line per block
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32))
    assert counters["dcache_flush_calls"] == 4


def test_a_missing_flush_is_a_violation_at_the_last_write(lib):
    with pytest.raises(SimViolationError) as err:
        lib.launch("scalar_rows", 1, np.zeros(64, np.float32), 16, 0)
    assert (err.value.api, err.value.line) == ("GlobalTensor::SetValue", _line("// STORE"))
    assert "still in the data cache at kernel end" in err.value.detail
    assert "no DataCacheCleanAndInvalid" in err.value.detail


def test_two_blocks_writing_one_line_is_a_violation_even_when_flushed(lib):
    with pytest.raises(SimViolationError) as err:  # 40-byte rows: blocks share lines
        lib.launch("scalar_rows", 4, np.zeros(64, np.float32), 10, 1)
    assert "cache-line sharing" in err.value.detail
    assert "line at byte 0 of argument 0" in err.value.detail or "line at byte 64" in \
        err.value.detail


def test_single_line_flush_cleans_from_its_address_to_the_line_end(lib):
    x = np.zeros(64, np.float32)
    lib.launch("scalar_rows", 1, x, 16, 2)  # the row is exactly one aligned line
    with pytest.raises(SimViolationError):  # two lines: the second stays dirty
        lib.launch("scalar_rows", 1, np.zeros(64, np.float32), 32, 2)
    with pytest.raises(SimViolationError):  # bytes 32..63 flushed, 0..31 of line 2 not
        lib.launch("scalar_rows", 2, np.zeros(64, np.float32), 24, 3)
    lib.launch("scalar_rows", 1, np.zeros(64, np.float32), 16, 3)


def test_a_dma_of_a_dirty_line_is_a_violation(lib):
    with pytest.raises(SimViolationError) as err:
        lib.launch("scalar_then_dma", 1, np.zeros(64, np.float32), 64, 0)
    assert (err.value.api, err.value.line) == ("DataCopy", _line("// DMA READ"))
    assert "reads stale GM" in err.value.detail
    with pytest.raises(SimViolationError) as err:
        lib.launch("scalar_then_dma", 1, np.zeros(64, np.float32), 64, 1)
    assert (err.value.api, err.value.line) == ("DataCopy", _line("// DMA WRITE"))
    assert "overwrites what the DMA wrote" in err.value.detail


@pytest.mark.parametrize(("arch", "form", "ok"), [
    (2002, "<float, CacheLine::ENTIRE_DATA_CACHE>", True),
    (2002, "<float, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>", False),
    (1001, "<float, CacheLine::ENTIRE_DATA_CACHE>", False),
])
def test_the_forms_each_arch_declares(arch, form, ok):
    src = ("#include \"kernel_operator.h\"\nusing namespace AscendC;\n"
           "extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {\n"
           "  GlobalTensor<float> g;\n  g.SetGlobalBuffer((__gm__ float*)x, 16);\n"
           f"  DataCacheCleanAndInvalid{form}(g);\n}}\n")
    config = SimConfig(opt_level="-O0", npu_arch=arch)
    if ok:
        compile_kernels(src, ["k"], filename="forms.cpp", config=config)
    else:
        with pytest.raises(SimCompileError, match="not declared"):
            compile_kernels(src, ["k"], filename="forms.cpp", config=config)


# ---------------------------------------------------------------- generated kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from bilateral_filter import bilateral_filter  # noqa: E402


@pytest.fixture(autouse=True)
def _scalar_loops(monkeypatch):
    # loops over independent rows are vector kernels by default (batch-loops): these
    # tests are about the scalar kernels' GM writes, so the loops stay scalar
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "batch-loops")


@hybrid
def rows_doubled(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 2.0
    return out


@hybrid
def checked_rows(x, n):
    out = np.zeros_like(x)
    for i in range(n):
        out[i] = x[i] * 2.0
    return out


def _sim(fn, *args, edit=None):
    """``fn(*args)`` on ascend-sim; ``edit(source)`` changes the generated C++ first."""
    program = fn.specialize(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        ap = lower_program(program)
    if edit is not None:
        ap = dataclasses.replace(ap, source=edit(ap.source))
    lib = build_library(ap, True, STORE.cache, "-O0")
    k = SimKernel(program, ap, lib)
    return fn.run_with(lambda p: k, *args), k, ap


def test_every_exit_of_a_scalar_kernel_flushes():
    x = np.ones((4, 5), np.float32)
    _, _, ap = _sim(checked_rows, x, 3)
    body = ap.source.split('extern "C"', 1)[1]
    exits = body.count("return;") + 1  # the bounds check's early return, and the end
    assert body.count("DataCacheCleanAndInvalid<") == exits == 2


@pytest.mark.parametrize("shape", [(40, 70), (33, 17), (9, 3)])
def test_split_rows_start_at_cache_lines(shape):
    x = np.random.default_rng(1).random(shape).astype(np.float32)
    k = check(rows_doubled, x)
    assert k.last_counters["dcache_flush_calls"] == k.last_counters["blocks"] > 1


def test_the_bilateral_filter_split_shares_no_line():
    img = np.random.default_rng(2).random((40, 70)).astype(np.float32)
    with float64_device():  # its float64 weights (test_float64_policy: E50041, demoted)
        k = check(bilateral_filter, img)
    assert k.last_counters["blocks"] == 30 and k.last_counters["dcache_flush_calls"] == 30


def test_removing_the_flush_is_caught():
    x = np.random.default_rng(3).random((40, 70)).astype(np.float32)

    def strip(src):
        return "\n".join(t for t in src.splitlines() if "DataCacheCleanAndInvalid<" not in t)
    with pytest.raises(SimViolationError, match="still in the data cache at kernel end") as err:
        _sim(rows_doubled, x, edit=strip)
    assert err.value.api == "GlobalTensor::SetValue"
    assert err.value.file.endswith("test_sim_dcache.py")  # the Python line of the store


def test_splitting_without_line_boundaries_is_caught(monkeypatch):
    # the chunking before line-aware splits: 40 x 70 float32 rows are 280 bytes, so
    # neighbouring blocks' rows meet inside a line
    monkeypatch.setattr(scalar_plan, "split_rows", lambda k, lp: [])
    x = np.random.default_rng(4).random((40, 70)).astype(np.float32)
    with pytest.raises(SimViolationError, match="cache-line sharing"):
        _sim(rows_doubled, x)
