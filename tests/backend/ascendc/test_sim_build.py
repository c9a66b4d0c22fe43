"""Cheaper ascend-sim builds: the precompiled sim headers (``sim.pch``) and several
programs built as one library (``sim.batch``, ``sim_backend.prebuild``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import lower_program, sim_backend
from pyasc.backend.ascendc.sim import SimConfig, compile_kernels, pch
from pyasc.backend.ascendc.sim.batch import Unit, batch_source, compile_batch
from pyasc.backend.ascendc.sim.runner import compile_flags, find_compiler
from pyasc.runtime.disk_cache import DiskCache

FILL = """\
#include "kernel_operator.h"
using namespace AscendC;
static float value() {{ return {value}.0f; }}  // one helper name in every program
extern "C" __global__ __aicore__ void k(GM_ADDR out, int32_t n) {{
  GlobalTensor<float> g;
  g.SetGlobalBuffer((__gm__ float*)out, n);
  for (int32_t i = 0; i < n; ++i) g.SetValue(i, value());
  DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(g);
}}
"""
CONFIG = SimConfig(opt_level="-O0")

gcc_only = pytest.mark.skipif(not pch.is_gcc(find_compiler()), reason="PCH needs GCC")


def _fill(lib, kernel: str = "k") -> np.ndarray:
    out = np.zeros(4, np.float32)
    lib.launch(kernel, 1, out, 4)
    return out


@gcc_only
def test_the_precompiled_header_is_built_once_and_used(tmp_path):
    flags = pch.include_flags(find_compiler(), compile_flags(CONFIG), tmp_path)
    assert flags[0] == "-include" and flags[1].endswith(pch.HEADER)
    gch = next(tmp_path.glob("*/" + pch.HEADER + ".gch"))
    built = gch.stat().st_mtime_ns
    lib = compile_kernels(FILL.format(value=2), ["k"], config=CONFIG, pch_root=tmp_path)
    np.testing.assert_array_equal(_fill(lib), 2.0)
    assert gch.stat().st_mtime_ns == built  # reused, not rebuilt
    other = SimConfig(opt_level="-O1")  # other flags: another PCH (GCC would refuse this one)
    assert pch.include_flags(find_compiler(), compile_flags(other), tmp_path) != flags


@gcc_only
def test_a_damaged_precompiled_header_costs_time_not_correctness(tmp_path):
    pch.include_flags(find_compiler(), compile_flags(CONFIG), tmp_path)
    next(tmp_path.glob("*/" + pch.HEADER + ".gch")).write_bytes(b"not a pch")
    lib = compile_kernels(FILL.format(value=3), ["k"], config=CONFIG, pch_root=tmp_path)
    np.testing.assert_array_equal(_fill(lib), 3.0)


def test_precompiled_headers_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_SIM_PCH", "0")
    assert pch.include_flags(find_compiler(), compile_flags(CONFIG), tmp_path) == []
    assert pch.include_flags(find_compiler(), compile_flags(CONFIG), None) == []


def test_the_pch_folder_can_serve_several_caches(tmp_path, monkeypatch):
    # a private kernel cache (tests/conftest.py gives each test run one) still finds the
    # precompiled header and launch object of PYASC_SIM_PCH_DIR instead of building its own
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYASC_SIM_PCH_DIR", raising=False)
    assert sim_backend.pch_root() == tmp_path / "cache" / "ascend-sim-pch"
    monkeypatch.setenv("PYASC_SIM_PCH_DIR", str(tmp_path / "pch"))
    assert sim_backend.pch_root() == tmp_path / "pch"
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "other"))
    assert sim_backend.pch_root() == tmp_path / "pch"


def test_a_batch_keeps_each_programs_kernels_apart():
    # every program names its kernel `k` and its helper `value`: the batch renames them
    units = [Unit(FILL.format(value=v), ("k",), "prog.cpp") for v in (1, 2, 3)]
    assert "#define k k__b2" in batch_source(units)
    libs = compile_batch(units, CONFIG)
    assert libs is not None and len(libs) == 3
    for v, lib in zip((1, 2, 3), libs, strict=True):
        np.testing.assert_array_equal(_fill(lib), float(v))
        assert lib.signatures["k"] == ("ptr", "i32")


def test_a_batch_that_does_not_compile_is_refused():
    bad = Unit("this is not C++", ("k",), "prog.cpp")
    assert compile_batch([Unit(FILL.format(value=1), ("k",), "prog.cpp"), bad], CONFIG) is None


@hybrid
def scale(x, s):
    return x * s + 1


@hybrid
def shift(x, s):
    return np.maximum(x - s, 0)


def test_prebuilt_libraries_are_used_before_any_build(monkeypatch):
    x = np.arange(40, dtype=np.float32)
    specs = [f.specialize(x, 2.0) for f in (scale, shift)]
    prebuilt = sim_backend.prebuild(specs)
    assert len(prebuilt) == 2

    def no_build(*args, **kwargs):
        raise AssertionError("a prebuilt program was compiled again")

    monkeypatch.setattr(sim_backend, "build_library", no_build)
    backend = sim_backend.SimBackend(prebuilt=prebuilt)
    np.testing.assert_array_equal(scale.run_with(backend.compile, x, 2.0), x * 2 + 1)
    np.testing.assert_array_equal(shift.run_with(backend.compile, x, 2.0),
                                  np.maximum(x - 2, 0))


def test_a_library_another_process_is_building_is_waited_for(tmp_path, monkeypatch):
    # processes sharing a cache (pytest-xdist workers, a user's pool) build a library
    # once: the second waits on the first's build lock, then loads the first's entry
    x = np.arange(40, dtype=np.float32)
    ap = lower_program(scale.specialize(x, 3.0))
    build, config = sim_backend._Build.of(ap), sim_backend.sim_config(ap.soc)
    key, store = build.key(config), sim_backend._compile_into
    compiled: list[str] = []
    monkeypatch.setattr(sim_backend, "_compile_into",
                        lambda *a: compiled.append(a[1]) or store(*a))
    cache, other = (DiskCache(tmp_path, backend="ascend-sim") for _ in range(2))
    libs: list = []
    with other.building(key):  # the other process's lock (flock: per open file)
        waiter = threading.Thread(target=lambda: libs.append(
            sim_backend.build_library(ap, cache=cache)))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not compiled  # waiting, not building
        store(other, key, build, config)  # the other process's build
    waiter.join(120)
    assert libs and not compiled  # loaded what the other one stored
    backend = sim_backend.SimBackend(prebuilt={key: libs[0]})
    np.testing.assert_array_equal(scale.run_with(backend.compile, x, 3.0), x * 3 + 1)
