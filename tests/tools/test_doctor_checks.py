"""Each check of ``pyasc doctor`` on fake Ascend installs in tmp dirs: the positive and
the negative branch, and the fix it prints.  The AscendCL probe is faked at its one
adapter (``checks_device.acl_facts``)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_ascend import (
    DRIVER_INNER,
    base_env,
    make_driver,
    make_nodes,
    make_toolkit,
    script,
    sourced_env,
)

import pyasc
from pyasc.tools import checks_device
from pyasc.tools.doctor import CHECKS, render_text, run_checks
from pyasc.tools.report import REQUIREMENTS, Context


@dataclass(frozen=True)
class Lookup:
    path: Path | None
    tried: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class Probe:
    library: Path | None
    initialized: bool
    device_count: int
    soc_names: tuple[str, ...]
    error: str | None = None


@pytest.fixture
def root(tmp_path):
    return tmp_path / "Ascend"


def _report(root: Path, env: dict[str, str], dev: Path | None = None):
    ctx = Context(environ=env, ascend_root=root, dev_dir=dev or root / "no-dev",
                  user_home=None)
    return run_checks(ctx)


@pytest.fixture
def acl_ok(monkeypatch):
    def fake(environ):
        return checks_device.AclFacts(
            Lookup(Path("/opt/lib64/libascendcl.so"), ("/opt/lib64/libascendcl.so",)),
            Probe(Path("/opt/lib64/libascendcl.so"), True, 2, ("Ascend910B1", "Ascend910B1")))
    monkeypatch.setattr(checks_device, "acl_facts", fake)


def test_nothing_installed_fails_ascend_only(root):
    report = _report(root, base_env())
    assert report["cann-toolkit"].status == "fail"
    assert "no CANN toolkit" in report["cann-toolkit"].found
    assert "Ascend-cann-toolkit" in report["cann-toolkit"].fix
    assert "set_env.sh" in report["cann-toolkit"].fix
    for name in ("cann-version", "set-env", "ascendc-headers", "driver-toolkit-match"):
        assert report[name].status == "skip", name
    assert report["bisheng"].status == "fail" and "PYASC_COMPILER" in report["bisheng"].fix
    assert report["ld.lld"].status == "fail" and "PYASC_LINKER" in report["ld.lld"].fix
    assert report["driver"].status == "fail" and "driver" in report["driver"].fix
    assert report["device-nodes"].status == "fail"
    assert "--device /dev/davinci0" in report["device-nodes"].fix
    assert report.ready("cpu") and report.ready("ascend-sim") and not report.ready("ascend")
    assert {c.name for c in report.missing("ascend")} >= {"cann-toolkit", "bisheng"}
    assert report.auto == "cpu"


def test_installed_but_not_sourced_names_the_script_to_source(root):
    home = make_toolkit(root)
    report = _report(root, base_env())
    tk = report["cann-toolkit"]
    assert tk.status == "fail" and str(home) in tk.found and "ASCEND_HOME_PATH" in tk.found
    assert tk.fix == f"source {root / 'ascend-toolkit' / 'set_env.sh'}"
    assert report["set-env"].status == "fail" and "not sourced" in report["set-env"].found
    assert report["set-env"].fix == tk.fix
    assert report["cann-version"].status == "ok" and "8.5.0" in report["cann-version"].found
    # the tools are found in the toolkit's bin directory, as bisheng.find_toolchain does
    assert report["bisheng"].status == "ok" and "bisheng version 1.2.3" in \
        report["bisheng"].found


def test_sourced_toolkit_passes_its_checks(root):
    home = make_toolkit(root)
    report = _report(root, sourced_env(home))
    for name in ("cann-toolkit", "cann-version", "set-env", "bisheng", "ld.lld",
                 "ascendc-headers"):
        assert report[name].status == "ok", (name, report[name])
    assert "V100R001C25" in report["cann-version"].found
    assert "LLD 15.0.5" in report["ld.lld"].found
    assert "tikcfw" in report["ascendc-headers"].found


def test_the_cann_layout_keeps_set_env_inside(root):
    home = make_toolkit(root, layout="cann")
    report = _report(root, base_env())
    assert report["cann-toolkit"].fix == f"source {home / 'set_env.sh'}"


def test_a_home_variable_naming_no_directory(root, tmp_path):
    env = {**base_env(), "ASCEND_HOME_PATH": str(tmp_path / "gone")}
    report = _report(root, env)
    assert report["cann-toolkit"].status == "fail"
    assert f"ASCEND_HOME_PATH={tmp_path / 'gone'} is not a directory" in \
        report["cann-toolkit"].found


def test_partly_sourced_environment_warns_with_what_is_missing(root):
    home = make_toolkit(root)
    env = {**base_env(), "ASCEND_HOME_PATH": str(home)}
    report = _report(root, env)
    assert report["cann-toolkit"].status == "ok"
    s = report["set-env"]
    assert s.status == "warn" and "ASCEND_TOOLKIT_HOME" in s.found
    assert "LD_LIBRARY_PATH" in s.found and "ccec_compiler/bin on PATH" in s.found


def test_tool_overrides_are_checked(root, tmp_path):
    home = make_toolkit(root)
    env = {**sourced_env(home), "PYASC_COMPILER": str(tmp_path / "missing-bisheng")}
    bad = _report(root, env)["bisheng"]
    assert bad.status == "fail" and "is not an executable file" in bad.found
    assert "PYASC_COMPILER" in bad.fix
    broken = script(tmp_path / "broken-lld", 'echo "cannot run" >&2; exit 3')
    env = {**sourced_env(home), "PYASC_LINKER": str(broken)}
    lld = _report(root, env)["ld.lld"]
    assert lld.status == "fail" and "cannot run" in lld.found
    good = script(tmp_path / "my-bisheng", 'echo "bisheng custom"')
    ok = _report(root, {**sourced_env(home), "PYASC_COMPILER": str(good)})["bisheng"]
    assert ok.status == "ok" and "(PYASC_COMPILER)" in ok.found and "custom" in ok.found


def test_missing_headers_and_version_files(root):
    home = make_toolkit(root, headers=False, version_file=False)
    report = _report(root, sourced_env(home))
    assert report["ascendc-headers"].status == "fail"
    assert "no AscendC headers" in report["ascendc-headers"].found
    assert report["cann-version"].status == "warn"
    assert not report.ready("ascend")


def test_version_from_compiler_version_info(root):
    home = make_toolkit(root, version_file=False)
    (home / "compiler" / "version.info").write_text("Version=7.0.0.5.242\n")
    assert "7.0.0.5.242" in _report(root, sourced_env(home))["cann-version"].found


@pytest.mark.parametrize(("toolkit_compat", "driver_compat", "status"), [
    (f"[{DRIVER_INNER[:11]}],[V100R001C18]", "[V100R001C30]", "ok"),      # toolkit lists it
    ("[V100R001C18]", "[V100R001C25],[V100R001C13]", "ok"),              # driver lists it
    ("[V100R001C18]", "[V100R001C30]", "fail"),                          # neither does
    ("", "", "warn"),                                                    # nothing said
])
def test_driver_and_toolkit_versions_match(root, toolkit_compat, driver_compat, status):
    home = make_toolkit(root, compatible=toolkit_compat)
    make_driver(root, compatible=driver_compat)
    report = _report(root, sourced_env(home))
    assert report["driver"].status == "ok" and "24.1.rc1" in report["driver"].found
    match = report["driver-toolkit-match"]
    assert match.status == status, match
    assert "24.1.rc1" in match.found and "8.5.0" in match.found
    if status == "fail":
        assert "driver 24.1.rc1" in match.fix and "set_env.sh" in match.fix


def test_device_nodes(root, tmp_path):
    ok = _report(root, base_env(), make_nodes(tmp_path / "dev"))["device-nodes"]
    assert ok.status == "ok" and "davinci0, davinci1" in ok.found
    warn = _report(root, base_env(), make_nodes(tmp_path / "dev2", ("davinci3",)))
    assert warn["device-nodes"].status == "warn" and "davinci_manager" in \
        warn["device-nodes"].fix


def test_npu_smi_on_path(root, tmp_path):
    bindir = tmp_path / "bin"
    script(bindir / "npu-smi", 'echo "+----+"; echo "| npu-smi 24.1.rc1  Version: 24.1.rc1 |"')
    ok = _report(root, base_env(str(bindir)))["npu-smi"]
    assert ok.status == "ok" and ok.found.startswith("npu-smi 24.1.rc1")
    script(bindir / "npu-smi", 'echo "dcmi module initialize failed" >&2; exit 8')
    bad = _report(root, base_env(str(bindir)))["npu-smi"]
    assert bad.status == "fail" and "dcmi module initialize failed" in bad.found
    assert _report(root, base_env())["npu-smi"].status == "skip"


def test_acl_library_and_devices_through_the_adapter(root, acl_ok):
    report = _report(root, base_env())
    assert report["acl-library"].status == "ok"
    assert report["npu-devices"].status == "ok"
    assert report["npu-devices"].found == "2 device(s): Ascend910B1, Ascend910B1"


@pytest.mark.parametrize(("facts", "library", "devices", "text"), [
    ("AscendCL probe not available in this build", "skip", "skip", "not available"),
    (checks_device.AclFacts(Lookup(None, ("libascendcl.so", "libacl_rt.so"),
                                   "not on LD_LIBRARY_PATH"), None),
     "fail", "skip", "not on LD_LIBRARY_PATH"),
    (checks_device.AclFacts(Lookup(Path("/l/libascendcl.so")),
                            Probe(Path("/l/libascendcl.so"), False, 0, (), "aclInit: 507033")),
     "ok", "fail", "507033"),
    (checks_device.AclFacts(Lookup(Path("/l/libascendcl.so")),
                            Probe(Path("/l/libascendcl.so"), True, 0, ())),
     "ok", "fail", "no device"),
    (checks_device.AclFacts(Lookup(Path("/l/libascendcl.so")),
                            Probe(Path("/l/libascendcl.so"), True, 1, ("Ascend999X",))),
     "ok", "warn", "Ascend999X"),
])
def test_acl_problems(root, monkeypatch, facts, library, devices, text):
    monkeypatch.setattr(checks_device, "acl_facts", lambda environ: facts)
    report = _report(root, base_env())
    assert report["acl-library"].status == library
    assert report["npu-devices"].status == devices
    assert text in report["acl-library"].found + report["npu-devices"].found
    if library == "fail":
        assert "PYASC_ACL_LIBRARY" in report["acl-library"].fix
    assert not report.ready("ascend")


def test_the_real_adapter_in_this_build():
    facts = checks_device.acl_facts({})
    if importlib.util.find_spec("pyasc.runtime.acl") is None:
        assert facts == checks_device.UNAVAILABLE
    else:
        assert isinstance(facts, checks_device.AclFacts)


def test_everything_present_makes_ascend_ready_and_auto_pick_it(root, tmp_path, acl_ok):
    home = make_toolkit(root)
    make_driver(root, compatible=f"[{'V100R001C25'}]")
    report = _report(root, sourced_env(home), make_nodes(tmp_path / "dev"))
    assert report.ready("ascend"), report.missing("ascend")
    assert report.auto == "ascend"
    assert report["driver-toolkit-match"].status == "ok"
    assert "target ascend      ready" in render_text(report, "ascend")


def test_a_broken_cxx_fails_ascend_sim(root, tmp_path):
    broken = script(tmp_path / "bad-cxx", 'echo "bad-cxx: fatal error: no C++17" >&2; exit 1')
    report = _report(root, {**base_env(), "CXX": str(broken)})
    cxx = report["c++ compiler"]
    assert cxx.status == "fail" and "no C++17" in cxx.found and "CXX" in cxx.fix
    assert not report.ready("ascend-sim") and report.ready("cpu")
    missing = _report(root, {**base_env(), "CXX": str(tmp_path / "nope")})["c++ compiler"]
    assert missing.status == "fail" and "no C++ compiler found" in missing.found


def test_without_llvmlite_the_cpu_target_is_not_ready(root, monkeypatch):
    monkeypatch.setitem(sys.modules, "llvmlite", None)
    report = _report(root, base_env())
    assert report["llvmlite"].status == "fail" and "pip install" in report["llvmlite"].fix
    assert not report.ready("cpu")


def test_public_doctor_returns_every_check_and_the_requirements_exist():
    report = pyasc.doctor()
    assert len(report) == len(CHECKS)
    names = [c.name for c in report]
    assert len(set(names)) == len(names)
    assert all(n in names for need in REQUIREMENTS.values() for n in need)
    assert report["python"].status == "ok" and report["numpy"].status == "ok"
    for c in report:
        assert c.status in ("ok", "warn", "fail", "skip")
        assert c.status not in ("fail", "warn") or c.fix, c


def test_auto_keeps_the_cpu_when_no_ascendcl_answers(root, tmp_path):
    # an unsourced install: device nodes and a toolkit, but no AscendCL library found,
    # so nothing could launch a kernel: auto runs on the cpu, ascend is not ready
    make_toolkit(root)
    report = _report(root, base_env(), make_nodes(tmp_path / "dev"))
    assert report.auto == "cpu"  # as pyasc.jit.options.npu_available decides
    assert not report.ready("ascend")
    text = render_text(report, "auto")
    assert "target auto        runs on cpu here" in text
