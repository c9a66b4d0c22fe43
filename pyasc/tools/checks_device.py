"""Checks of the NPU side: the AscendCL library and the devices it sees (through
:func:`acl_facts`, the one adapter to ``pyasc.runtime.acl``), the driver, its device
nodes and ``npu-smi``, and whether the driver and the toolkit versions match."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyasc.backend.ascendc.soc import SOCS, get_soc
from pyasc.errors import InvalidOptionError
from pyasc.tools import cann_files
from pyasc.tools.report import CheckResult, Context

UNAVAILABLE = "AscendCL probe not available in this build"
DRIVER_FIX = ("install the NPU driver and firmware for this card (Ascend-hdk-<chip>-npu-"
              "driver_<version>_linux-<arch>.run --full, then the firmware), then reboot")
CONTAINER_FIX = ("in a container pass --device /dev/davinci0 --device /dev/davinci_manager "
                 "--device /dev/devmm_svm --device /dev/hisi_hdc")


@dataclass(frozen=True)
class AclFacts:
    """What ``pyasc.runtime.acl`` reports: its ``LibraryLookup`` and, when a library
    was found, its ``DeviceProbe`` (``None`` otherwise)."""

    lookup: Any
    probe: Any


def acl_facts(environ: Mapping[str, str]) -> AclFacts | str:
    """The AscendCL library lookup and device probe, or why there are none."""
    try:
        from pyasc.runtime import acl  # lazy: the binding may not be in this build
    except ImportError:
        return UNAVAILABLE
    try:  # both are documented never to raise; a bug there must not end the report
        lookup = acl.find_library(dict(environ))
        probe = acl.probe(dict(environ)) if lookup.path is not None else None
    except Exception as exc:  # noqa: BLE001 - reported as the check's finding
        return f"the AscendCL probe failed: {type(exc).__name__}: {exc}"
    return AclFacts(lookup, probe)


def memo_facts(ctx: Context) -> AclFacts | str:
    """:func:`acl_facts`, once per report (two checks read it)."""
    if "acl" not in ctx.memo:
        ctx.memo["acl"] = acl_facts(ctx.environ)
    return ctx.memo["acl"]


def check_acl_library(ctx: Context) -> CheckResult:
    """The AscendCL library (``PYASC_ACL_LIBRARY``, else ``libascendcl.so`` /
    ``libacl_rt.so`` under the toolkit and ``LD_LIBRARY_PATH``)."""
    name = "acl-library"
    facts = memo_facts(ctx)
    if isinstance(facts, str):
        return CheckResult(name, "skip" if facts == UNAVAILABLE else "fail", facts,
                           "use a pyasc build with the AscendCL runtime (pyasc.runtime.acl)")
    lookup = facts.lookup
    if lookup.path is None:
        tried = ", ".join(lookup.tried) or "nothing"
        return CheckResult(name, "fail", f"not found: {lookup.reason} (tried {tried})",
                           f"{ctx.set_env_fix()} (it puts $ASCEND_HOME_PATH/lib64 on "
                           "LD_LIBRARY_PATH), or set PYASC_ACL_LIBRARY=/path/to/libascendcl.so")
    return CheckResult(name, "ok", str(lookup.path))


def _unknown_socs(names: tuple[str, ...]) -> list[str]:
    unknown = []
    for soc in dict.fromkeys(names):
        try:
            get_soc(soc)
        except InvalidOptionError:
            unknown.append(soc)
    return unknown


def check_devices(ctx: Context) -> CheckResult:
    """The devices AscendCL sees (``aclrtGetDeviceCount``) and their SoC names
    (``aclrtGetSocName``), which must be in pyasc's SoC table."""
    name = "npu-devices"
    facts = memo_facts(ctx)
    if isinstance(facts, str) or facts.probe is None:
        why = facts if isinstance(facts, str) else "no AscendCL library"
        return CheckResult(name, "skip", why)
    probe = facts.probe
    if probe.error or not probe.initialized:
        return CheckResult(name, "fail", f"AscendCL did not start: {probe.error or '?'}",
                           f"check the driver with 'npu-smi info'; {DRIVER_FIX}")
    if probe.device_count <= 0:
        return CheckResult(name, "fail", "AscendCL sees no device",
                           f"check 'npu-smi info' and /dev/davinci*; {CONTAINER_FIX}")
    found = f"{probe.device_count} device(s): {', '.join(probe.soc_names) or '?'}"
    unknown = _unknown_socs(tuple(probe.soc_names))
    if unknown:
        return CheckResult(name, "warn", found + f"; {', '.join(unknown)} not in pyasc's "
                           "SoC table", "report the SoC name to pyasc (the table is "
                           f"pyasc/backend/ascendc/soc.py; known: {', '.join(sorted(SOCS))})")
    return CheckResult(name, "ok", found)


def check_driver(ctx: Context) -> CheckResult:
    """The NPU driver's version file."""
    info = ctx.driver_version
    path = ctx.ascend_root / "driver" / "version.info"
    if info is None:
        return CheckResult("driver", "fail", f"no driver ({path} missing)", DRIVER_FIX)
    line = f", {info.line}" if info.line else ""
    return CheckResult("driver", "ok", f"{info.version}{line} ({path})")


def check_device_nodes(ctx: Context) -> CheckResult:
    """The device nodes the driver creates (``/dev/davinci<N>``)."""
    name = "device-nodes"
    nodes = sorted(p.name for p in ctx.dev_dir.glob("davinci[0-9]*"))
    if not nodes:
        return CheckResult(name, "fail", f"no {ctx.dev_dir}/davinci<N>",
                           f"{DRIVER_FIX}; {CONTAINER_FIX}")
    manager = (ctx.dev_dir / "davinci_manager").exists()
    found = ", ".join(nodes) + ("" if manager else "; no davinci_manager")
    if not manager:
        return CheckResult(name, "warn", found, CONTAINER_FIX)
    return CheckResult(name, "ok", found)


def check_npu_smi(ctx: Context) -> CheckResult:
    """``npu-smi info``, the driver's own health report, when it is on PATH."""
    name = "npu-smi"
    tool = ctx.which("npu-smi")
    if tool is None:
        return CheckResult(name, "skip", "npu-smi is not on PATH (it comes with the driver, "
                           "usually /usr/local/bin/npu-smi)")
    status, out = ctx.run([tool, "info"], timeout=30)
    lines = [ln.strip(" |+=-") for ln in out.splitlines() if ln.strip(" |+=-")]
    head = lines[0] if lines else ""
    if status != 0:
        return CheckResult(name, "fail", f"'npu-smi info' failed ({status}): {head}",
                           DRIVER_FIX)
    return CheckResult(name, "ok", head or "ran")


def check_version_match(ctx: Context) -> CheckResult:
    """Whether the driver and the toolkit list each other as compatible
    (:func:`pyasc.tools.cann_files.compatible`)."""
    name = "driver-toolkit-match"
    drv, tk = ctx.driver_version, ctx.toolkit_version
    if drv is None or tk is None:
        return CheckResult(name, "skip", "needs both the driver and the toolkit version")
    both = f"driver {drv.version} ({drv.line or '?'}), toolkit {tk.version} ({tk.line or '?'})"
    verdict = cann_files.compatible(drv, tk)
    if verdict is None:
        return CheckResult(name, "warn", both + ": their version files list no "
                           "compatible versions", "compare both versions with the CANN "
                           "release notes' driver compatibility table")
    if not verdict:
        return CheckResult(name, "fail", both + ": neither lists the other as compatible",
                           f"install the toolkit release made for driver {drv.version} "
                           f"(or a driver listed by toolkit {tk.version}), then "
                           f"{ctx.set_env_fix()}")
    return CheckResult(name, "ok", both + ": compatible")
