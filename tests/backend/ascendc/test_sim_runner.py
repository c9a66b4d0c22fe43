"""The ascend-sim runner: signatures, argument marshalling, configuration and errors."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library

from pyasc.backend.ascendc.sim import SimCompileError, SimConfig, SimViolationError, compile_kernels
from pyasc.backend.ascendc.sim.runner import compile_command, wrapper_source
from pyasc.errors import ArgumentError, InternalCompilerError, ToolchainMissingError


def test_signatures_report_pointer_and_scalar_kinds():
    sigs = library("sim_elementwise.cpp").signatures
    assert sigs["add_custom"] == ("ptr", "ptr", "ptr", "i32", "i32")
    assert sigs["fill_f16"] == ("ptr", "i32", "f16")
    assert sigs["fill_bf16"] == ("ptr", "i32", "bf16")
    assert sigs["axpy_bf16"] == ("ptr", "ptr", "ptr", "i32", "f32")
    assert library("sim_cmp_reduce.cpp").signatures["where_gt"] == ("ptr",) * 4 + ("i32", "f32")


def test_numpy_scalars_are_accepted():
    out = np.zeros(8, np.float32)
    library("sim_elementwise.cpp").launch("fill_f32", 1, out, np.int32(8), np.float32(1.25))
    np.testing.assert_array_equal(out, 1.25)


@pytest.mark.parametrize(
    "args, words",
    [
        ((np.zeros(8, np.float32),), "takes 3 arguments"),
        ((np.zeros(16, np.float32)[::2], 8, 1.0), "C-contiguous numpy array"),
        ((np.zeros(8, np.float32), np.zeros(1), 1.0), "is a i32 scalar"),
    ],
)
def test_bad_arguments(args, words):
    with pytest.raises(ArgumentError, match=words):
        library("sim_elementwise.cpp").launch("fill_f32", 1, *args)


def test_unknown_kernel_and_bad_block_dim():
    lib = library("sim_elementwise.cpp")
    with pytest.raises(ArgumentError, match="no kernel 'nope'"):
        lib.launch("nope", 1)
    with pytest.raises(InternalCompilerError, match="block_dim 0") as err:
        lib.launch("fill_f32", 0, np.zeros(8, np.float32), 8, 1.0)
    assert not isinstance(err.value, SimViolationError)


def test_counters_and_header_config_are_exposed():
    lib = library("sim_violations.cpp")
    for name in (
        "gm_to_ub_bytes",
        "ub_to_gm_bytes",
        "ub_peak_bytes",
        "copy_in_single_buffered_calls",
        "Add_calls",
        "Compare_calls",
        "ReduceSum_calls",
    ):
        assert name in lib.counter_names
    assert lib.header_config == {"ub_bytes": 196608, "ub_reserved_bytes": 8192, "max_buffers": 64}


def test_missing_compiler_is_a_toolchain_error(monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(ToolchainMissingError) as err:
        compile_kernels("", ["k"])
    assert err.value.code == "E50030" and "CXX" in str(err.value)


def test_compile_error_points_at_the_generated_line(tmp_path):
    source = '#include "kernel_operator.h"\nextern "C" void k(GM_ADDR x) {\n  int y = ;\n}\n'
    with pytest.raises(SimCompileError) as err:
        compile_kernels(
            source, ["k"], filename="gen.cpp", config=SimConfig(opt_level="-O0"), keep_dir=tmp_path
        )
    assert err.value.lineno == 3 and err.value.code == "E50050"
    assert "int y = ;" in str(err.value) and "expected primary-expression" in str(err.value)
    assert (tmp_path / "gen.cpp").read_text() == source  # keep_dir keeps the build files
    assert "PYASC_SIM_EXPORT(k)" in (tmp_path / "pyasc_sim_main.cpp").read_text()


def test_kernel_names_must_be_identifiers():
    with pytest.raises(ArgumentError):
        compile_kernels("", ["a-b"])


def test_wrapper_and_command_line():
    assert wrapper_source("k.cpp", ["a", "b"]) == (
        '#include "k.cpp"\n#include "sim_launch.h"\nPYASC_SIM_EXPORT(a)\nPYASC_SIM_EXPORT(b)\n'
    )
    cmd = compile_command("g++", SimConfig(ub_bytes=256 * 1024, opt_level="-O1"), "out.so")
    assert cmd[:3] == ["g++", "-std=c++17", "-O1"]
    assert "-DPYASC_SIM_UB_BYTES=262144" in cmd and "-shared" in cmd and "-fPIC" in cmd


SMALL_UB_SOURCE = """\
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void fits(GM_ADDR x, int32_t bytes) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> b;
  pipe.InitBuffer(b, bytes);
}
"""


def test_soc_ub_size_is_configurable():
    lib = compile_kernels(
        SMALL_UB_SOURCE, ["fits"], config=SimConfig(ub_bytes=64 * 1024, opt_level="-O0")
    )
    assert lib.header_config["ub_bytes"] == 64 * 1024
    counters = lib.launch("fits", 1, np.zeros(1, np.uint8), 56 * 1024)
    assert counters["ub_peak_bytes"] == 56 * 1024
    with pytest.raises(SimViolationError, match="budget 57344 bytes"):
        lib.launch("fits", 1, np.zeros(1, np.uint8), 56 * 1024 + 1)
