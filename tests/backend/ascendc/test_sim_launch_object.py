"""The prebuilt launch object (``sim.launch_object``): libraries built with a root link
the sim's launch code compiled once there instead of compiling it again, and run the same:
results, violations and block_dim checks all go through the object's ``launch``."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from pyasc.backend.ascendc.sim import SimConfig, compile_kernels, launch_object
from pyasc.backend.ascendc.sim.runner import (
    SimViolationError,
    build_command,
    compile_flags,
    find_compiler,
)
from pyasc.errors import InternalCompilerError

CONFIG = SimConfig(opt_level="-O0")
FILL = """\
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR out, int32_t n) {
  GlobalTensor<float> g;
  g.SetGlobalBuffer((__gm__ float*)out, n);
  for (int32_t i = 0; i < n; ++i) g.SetValue(i, 2.0f + GetBlockIdx());
  DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(g);
}
"""


def test_a_library_links_the_launch_object_built_once(tmp_path):
    cmd = build_command(find_compiler(), CONFIG, "kernel.so", tmp_path)
    objects = list(tmp_path.glob("*/" + launch_object.OBJECT))
    assert len(objects) == 1 and str(objects[0]) in cmd and launch_object.DEFINE in cmd
    built = objects[0].stat().st_mtime_ns
    for _ in range(2):
        lib = compile_kernels(FILL, ["k"], config=CONFIG, pch_root=tmp_path)
        out = np.zeros(4, np.float32)
        lib.launch("k", 1, out, 4)
        np.testing.assert_array_equal(out, 2.0)
    assert list(tmp_path.glob("*/" + launch_object.OBJECT)) == objects
    assert objects[0].stat().st_mtime_ns == built  # reused, not rebuilt


def test_the_objects_launch_reports_races_and_bad_block_dims(tmp_path):
    lib = compile_kernels(FILL, ["k"], config=CONFIG, pch_root=tmp_path)
    assert list(tmp_path.glob("*/" + launch_object.OBJECT))
    out = np.zeros(4, np.float32)
    with pytest.raises(SimViolationError, match="GM write race"):
        lib.launch("k", 2, out, 4)  # both blocks write every element
    with pytest.raises(InternalCompilerError, match="block_dim 0 is not in"):
        lib.launch("k", 0, out, 4)


def test_without_a_root_or_with_a_failed_object_the_build_is_plain(tmp_path, monkeypatch):
    flags = compile_flags(CONFIG)
    assert launch_object.build_flags(find_compiler(), flags, None) == ([], [])
    monkeypatch.setattr(launch_object, "_build", lambda *args: False)
    assert launch_object.build_flags(find_compiler(), flags, tmp_path) == ([], [])
    lib = compile_kernels(FILL, ["k"], config=CONFIG, pch_root=tmp_path)
    out = np.zeros(4, np.float32)
    lib.launch("k", 1, out, 4)
    np.testing.assert_array_equal(out, 2.0)
    monkeypatch.undo()  # the real build again, but turned off with the precompiled header
    monkeypatch.setenv("PYASC_SIM_PCH", "0")
    assert launch_object.build_flags(find_compiler(), flags, tmp_path) == ([], [])


def test_a_library_does_not_parse_the_launch_machinery(tmp_path):
    # Parsing launch()'s helpers (even unused) queued the std templates they use, which GCC
    # instantiates in every translation unit: a library with the object must not see them.
    (tmp_path / "w.cpp").write_text('#include "sim_launch.h"\n')

    def preprocessed(*defines: str) -> str:
        cmd = [find_compiler(), *compile_flags(CONFIG), *defines, "-E", "w.cpp"]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True,
                              check=True).stdout

    library = preprocessed(launch_object.DEFINE)
    assert "int launch(" in library and "find_write_race" not in library
    assert "run_block" not in library
    for defines in ([], [launch_object.DEFINE, "-DPYASC_SIM_LAUNCH_OBJECT"]):
        assert "find_write_race" in preprocessed(*defines)  # the plain build, the object


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_a_library_leaves_the_models_containers_to_the_object(tmp_path):
    # the model's std containers are explicit instantiations of the launch object: a
    # library references their members (U) instead of compiling its own copies (W)
    (tmp_path / "k.cpp").write_text(FILL)
    (tmp_path / "w.cpp").write_text('#include "k.cpp"\n#include "sim_launch.h"\n'
                                    "PYASC_SIM_EXPORT(k)\n")
    flags = [*compile_flags(CONFIG), launch_object.DEFINE]
    subprocess.run([find_compiler(), *flags, "-c", "w.cpp", "-o", "w.o"], cwd=tmp_path,
                   check=True, capture_output=True)
    symbols = subprocess.run(["nm", "-C", "w.o"], cwd=tmp_path, check=True,
                             capture_output=True, text=True).stdout.splitlines()
    push = [line for line in symbols if "std::vector<pyasc_sim::GmWrite" in line
            and "::push_back(" in line]
    assert push and all(line.split()[0] == "U" for line in push), push
