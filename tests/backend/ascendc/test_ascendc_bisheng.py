"""The bisheng driver without CANN: fake toolkit directories in ``tmp_path`` and fake
``bisheng``/``ld.lld`` scripts that record their argv.  Checks discovery, the exact
command lines of the reference (section 3), the retry flag, error mapping through
``#line``, the object cache and the ``ascend`` backend's per-SoC objects."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from ascendc_cases import relu

from pyasc.backend.ascendc import NPUBackend, lower_program
from pyasc.backend.ascendc.bisheng import (
    COMMON_FLAGS,
    BishengError,
    compile_cached,
    find_toolchain,
)
from pyasc.errors import ToolchainMissingError
from pyasc.runtime.disk_cache import DiskCache

FAKE_BISHENG = """\
import json, os, sys
log = os.environ["FAKE_LOG"]
with open(log, "a") as f:
    f.write(json.dumps(sys.argv) + "\\n")
mode = os.environ.get("FAKE_MODE", "ok")
if mode == "fail-once" and "-disable-machine-licm" not in sys.argv:
    sys.exit(1)
if mode == "error":
    sys.stderr.write("relu.py:7:12: error: no matching function for call to 'Adds'\\n")
    sys.exit(1)
out = sys.argv[sys.argv.index("-o") + 1]
with open(out, "wb") as f:
    f.write(b"\\x7fELF fake kernel object")
"""

FAKE_LLD = """\
import json, os, shutil, sys
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(sys.argv) + "\\n")
"""


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def fake_cann(tmp_path, monkeypatch):
    home = tmp_path / "ascend-toolkit" / "latest"
    tikcfw = home / "compiler" / "tikcpp" / "tikcfw"
    for d in (tikcfw / "impl", tikcfw / "interface", home / "include" / "version"):
        d.mkdir(parents=True)
    (home / "include" / "version" / "cann_version.h").write_text("#define CANN 8\n")
    (home / "version.cfg").write_text("version=8.0.0\n")
    bindir = home / "compiler" / "ccec_compiler" / "bin"
    bindir.mkdir(parents=True)
    _script(bindir / "bisheng", FAKE_BISHENG)
    _script(bindir / "ld.lld", FAKE_LLD)
    log = tmp_path / "argv.log"
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.delenv("PYASC_COMPILER", raising=False)
    monkeypatch.delenv("PYASC_LINKER", raising=False)
    return home, log


def _calls(log: Path) -> list[list[str]]:
    """The compile and link invocations (not the ``--version`` queries)."""
    if not log.exists():
        return []
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in calls if c[1:] != ["--version"]]


def _program():
    return lower_program(relu.specialize(np.zeros((4, 8), np.float32)))


def test_discovery_and_exact_command_line(fake_cann):
    home, _ = fake_cann
    tc = find_toolchain()
    tikcfw = str((home / "compiler" / "tikcpp" / "tikcfw").resolve())
    header = str((home / "include" / "version" / "cann_version.h").resolve())
    assert tc.compile_command("relu.cpp", "kernel.o", "dav-c220-vec") == [
        tc.compiler, "-c", "-x", "cce", "-O3", "relu.cpp", "--cce-aicore-arch=dav-c220-vec",
        "--cce-aicore-only", "-o", "kernel.o", "-include", header,
        "-I", tikcfw, "-I", f"{tikcfw}/impl", "-I", f"{tikcfw}/interface",
        "-std=c++17", "--cce-disable-kernel-global-attr-check",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
        "-DASCENDC_DUMP=0", "--cce-auto-sync", "-mllvm", "-api-deps-filter",
        "-D__NPU_TILING__", "-DTILING_KEY_VAR=0"]
    assert tc.link_command("kernel.o", "kernel.o") == [
        tc.linker, "-m", "aicorelinux", "-Ttext=0", "kernel.o", "-static", "-o", "kernel.o"]
    retry = tc.compile_command("relu.cpp", "kernel.o", "dav-c220-vec", retry=True)
    assert retry[4:6] == ["-mllvm", "-disable-machine-licm"] and retry[6] == "-O3"


def test_overrides_and_the_newer_header_layout(fake_cann, tmp_path, monkeypatch):
    home, _ = fake_cann
    import shutil

    shutil.rmtree(home / "compiler" / "tikcpp")
    (home / "asc" / "include").mkdir(parents=True)
    (home / "asc" / "impl").mkdir(parents=True)
    monkeypatch.setenv("PYASC_COMPILER", "/opt/my/bisheng")
    monkeypatch.setenv("PYASC_LINKER", "/opt/my/ld.lld")
    tc = find_toolchain()
    assert (tc.compiler, tc.linker) == ("/opt/my/bisheng", "/opt/my/ld.lld")
    assert tc.include_dirs == (str(home / "asc" / "include"), str(home / "asc" / "impl"))


@pytest.mark.parametrize("missing", ["home", "bisheng", "headers"])
def test_missing_pieces_are_e50030(fake_cann, monkeypatch, missing):
    home, _ = fake_cann
    if missing == "home":
        monkeypatch.delenv("ASCEND_HOME_PATH")
        monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    elif missing == "bisheng":
        (home / "compiler" / "ccec_compiler" / "bin" / "bisheng").unlink()
        monkeypatch.setenv("PATH", "/nonexistent")
    else:
        import shutil

        shutil.rmtree(home / "compiler" / "tikcpp")
    with pytest.raises(ToolchainMissingError) as info:
        find_toolchain()
    assert info.value.code == "E50030"
    assert "set_env.sh" in str(info.value)
    assert {"home": "ASCEND_HOME_PATH", "bisheng": "bisheng",
            "headers": "headers"}[missing] in info.value.message


def test_compile_link_and_cache(fake_cann, tmp_path):
    _, log = fake_cann
    tc = find_toolchain()
    ap = _program()
    cache = DiskCache(tmp_path / "cache", backend="ascend")
    obj = compile_cached(tc, ap.source, ap.filename, "Ascend910B1", "dav-c220-vec", ap.files,
                         cache)
    assert obj.startswith(b"\x7fELF")
    calls = _calls(log)
    assert len(calls) == 2 and calls[0][5] == ap.filename
    assert calls[1][1:3] == ["-m", "aicorelinux"]
    again = compile_cached(tc, ap.source, ap.filename, "Ascend910B1", "dav-c220-vec", ap.files,
                           cache)
    assert again == obj and len(_calls(log)) == 2  # served from the cache
    compile_cached(tc, ap.source, ap.filename, "Ascend910B4", "dav-c220-vec", ap.files, cache)
    assert len(_calls(log)) == 4  # the SoC is part of the key


def test_retry_with_disable_machine_licm(fake_cann, monkeypatch, tmp_path):
    _, log = fake_cann
    monkeypatch.setenv("FAKE_MODE", "fail-once")
    ap = _program()
    compile_cached(find_toolchain(), ap.source, ap.filename, "Ascend910B1", "dav-c220-vec",
                   ap.files, DiskCache(tmp_path / "c", backend="ascend"))
    first, second = _calls(log)[:2]
    assert "-disable-machine-licm" not in first
    assert second[4:6] == ["-mllvm", "-disable-machine-licm"]


def test_errors_point_at_the_python_line(fake_cann, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_MODE", "error")
    ap = _program()
    with pytest.raises(BishengError) as info:
        compile_cached(find_toolchain(), ap.source, ap.filename, "Ascend910B1",
                       "dav-c220-vec", {"relu.py": "/src/relu.py"},
                       DiskCache(tmp_path / "c", backend="ascend"))
    err = info.value
    assert (err.code, err.filename, err.lineno) == ("E50050", "/src/relu.py", 7)
    assert "no matching function" in err.message


def test_npu_backend_builds_one_object_per_soc(fake_cann, tmp_path):
    _, log = fake_cann
    from pyasc import hybrid

    @hybrid(device_type=["Ascend910B1", "Ascend310P3"])
    def double(x):
        return x * 2

    program = double.specialize(np.zeros(8, np.float32))
    kernel = NPUBackend(cache=DiskCache(tmp_path / "c", backend="ascend"),
                        require_device=False).compile(program)
    assert sorted(kernel.objects) == ["Ascend310P3", "Ascend910B1"]
    archs = {a for call in _calls(log) for a in call if a.startswith("--cce-aicore-arch=")}
    assert archs == {"--cce-aicore-arch=dav-c220-vec", "--cce-aicore-arch=dav-m200-vec"}
    with pytest.raises(ToolchainMissingError, match="AscendCL library is missing"):
        kernel([np.zeros(8, np.float32)])  # the fake toolkit has no lib64/libascendcl.so


def test_npu_backend_builds_one_object_per_core_type(fake_cann, tmp_path):
    """A matmul (cube kernel) and an elementwise kernel of another array (vector
    kernel): bisheng compiles two sources, each holding only its own kind, for its own
    arch.  (An epilogue of the matmul itself would be one MIX kernel: below.)"""
    _, log = fake_cann
    from pyasc import hybrid

    @hybrid
    def mm_relu(a, b, x):
        return a @ b, np.maximum(x, 0)

    program = mm_relu.specialize(np.zeros((16, 32), np.float16), np.zeros((32, 8), np.float16),
                                 np.zeros(8, np.float16))
    kernel = NPUBackend(cache=DiskCache(tmp_path / "c", backend="ascend"),
                        require_device=False).compile(program)
    assert sorted(kernel.objects["Ascend910B1"]) == ["cube", "vector"]
    sources = {}
    for call in _calls(log):  # compile commands (the link commands name no arch)
        arch = [a.split("=")[1] for a in call if a.startswith("--cce-aicore-arch=")]
        if arch:
            sources[arch[0]] = next(a for a in call if a.endswith(".cpp"))
    assert sources == {"dav-c220-cube": "mm_relu_cube.cpp", "dav-c220-vec": "mm_relu_vector.cpp"}


def test_a_mix_kernel_is_one_object_for_both_core_types(fake_cann, tmp_path):
    """matmul + bias + relu * 2: one MIX kernel, its object built for dav-c220 (both
    core types' code in one source; inferred, cores.py) and loaded as AICORE."""
    _, log = fake_cann
    from pyasc import hybrid

    @hybrid
    def linear(a, b, bias):
        return np.maximum(a @ b + bias, 0) * 2

    program = linear.specialize(np.zeros((16, 32), np.float16), np.zeros((32, 8), np.float16),
                                np.zeros(8, np.float16))
    kernel = NPUBackend(cache=DiskCache(tmp_path / "c", backend="ascend"),
                        require_device=False).compile(program)
    assert sorted(kernel.objects["Ascend910B1"]) == ["mix"]
    archs = {a for call in _calls(log) for a in call if a.startswith("--cce-aicore-arch=")}
    assert archs == {"--cce-aicore-arch=dav-c220"}


def test_npu_backend_needs_a_device(fake_cann, tmp_path):
    with pytest.raises(ToolchainMissingError, match="davinci"):
        NPUBackend(cache=DiskCache(tmp_path / "c", backend="ascend")).compile(
            relu.specialize(np.zeros(4, np.float32)))


def test_common_flags_are_the_references():
    assert "--cce-auto-sync" in COMMON_FLAGS and "-std=c++17" in COMMON_FLAGS


def test_dump_path_writes_the_bisheng_commands(fake_cann, tmp_path, monkeypatch):
    import shlex

    from pyasc import hybrid
    from pyasc.backend.ascendc.bisheng import find_toolchain as toolchain

    monkeypatch.setenv("PYASC_DUMP_PATH", str(tmp_path / "dumps"))

    @hybrid(device_type=["Ascend910B1"])
    def triple(x):
        return x * 3

    program = triple.specialize(np.zeros(8, np.float32))
    cache = DiskCache(tmp_path / "c", backend="ascend")
    NPUBackend(cache=cache, require_device=False).compile(program)
    (folder,) = (tmp_path / "dumps" / "triple").iterdir()
    soc = folder / "ascend" / "Ascend910B1"
    text = (soc / "bisheng.sh").read_text()
    commands = [shlex.split(line) for line in text.splitlines() if not line.startswith("#")]
    tc = toolchain()
    assert commands == [tc.compile_command("triple.cpp", "kernel.o", "dav-c220-vec"),
                        tc.link_command("kernel.o", "kernel.o")]
    assert commands == _calls(fake_cann[1])  # what ran, exactly
    assert "(ran in this process)" in text and (soc / "triple.cpp").exists()
    assert (soc / "host.ir").exists()
    NPUBackend(cache=cache, require_device=False).compile(program)  # the object is cached
    assert "NOT run in this process: the object came from the disk cache" in \
        (soc / "bisheng.sh").read_text()
    assert len(_calls(fake_cann[1])) == 2
