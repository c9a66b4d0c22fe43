"""``pyasc doctor`` and ``pyasc.doctor()``: what this machine can run, and how to fix
what it cannot.

Every check is a small function of a :class:`~pyasc.tools.report.Context` returning a
:class:`~pyasc.tools.report.CheckResult` (status ``ok``/``warn``/``fail``/``skip``,
what was found, the exact fix); :data:`CHECKS` lists them in report order.  The report
says which targets can work here (``Report.ready``); ``pyasc doctor --target T`` exits
with status 1 when ``T`` cannot.  ``auto`` is the target ``@hybrid`` picks by default
(``Report.auto``, decided by ``pyasc.jit.options.npu_available`` on the machine
checked): ``ascend`` when a device node and a toolkit are present, else ``cpu``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence

from pyasc.jit.options import npu_available
from pyasc.tools import checks_cann, checks_device, checks_host
from pyasc.tools.report import CheckResult, Context, Report
from pyasc.version import __version__

CHECKS: tuple[Callable[[Context], CheckResult], ...] = (
    checks_host.check_python,
    checks_host.check_numpy,
    checks_host.check_llvmlite,
    checks_host.check_host_cpu,
    checks_host.check_cxx,
    checks_cann.check_toolkit,
    checks_cann.check_version,
    checks_cann.check_set_env,
    checks_cann.check_bisheng,
    checks_cann.check_linker,
    checks_cann.check_headers,
    checks_device.check_acl_library,
    checks_device.check_devices,
    checks_device.check_driver,
    checks_device.check_device_nodes,
    checks_device.check_npu_smi,
    checks_device.check_version_match,
)
"""The checks, in report order."""

TARGET_CHOICES = ("auto", "cpu", "ascend-sim", "ascend")


def run_checks(ctx: Context) -> Report:
    """Every check of :data:`CHECKS` against ``ctx``, and what ``auto`` picks there."""
    facts = checks_device.memo_facts(ctx)
    device = not isinstance(facts, str) and facts.probe is not None and \
        facts.probe.error is None and facts.probe.device_count > 0
    auto = "ascend" if npu_available(ctx.environ, str(ctx.ascend_root), device) else "cpu"
    return Report(tuple(check(ctx) for check in CHECKS), auto)


def doctor(environ: Mapping[str, str] | None = None) -> Report:
    """Check this machine for every pyasc target: a :class:`Report` (iterate it for the
    :class:`CheckResult` of each check; ``report.ready("ascend")`` says whether a target
    can work here, ``report.missing(target)`` what stops it).  ``environ`` replaces
    ``os.environ`` (e.g. to check an environment before switching to it)."""
    ctx = Context() if environ is None else Context(environ=dict(environ))
    return run_checks(ctx)


def _resolve(report: Report, target: str) -> str:
    return report.auto if target == "auto" else target


def render_text(report: Report, target: str) -> str:
    """The readable report: one line per check (status, check, found), the fix under
    each problem, then whether each target can work here."""
    width = max(len(c.name) for c in report)
    lines = [f"pyasc {__version__} doctor on {platform.system()} {platform.machine()}", "",
             f"{'status':<6}  {'check':<{width}}  found"]
    for c in report:
        lines.append(f"{c.status.upper() if c.status == 'fail' else c.status:<6}  "
                     f"{c.name:<{width}}  {c.found}")
        if c.fix and c.status in ("fail", "warn"):
            lines.append(f"{'':<6}  {'':<{width}}  fix: {c.fix}")
    lines.append("")
    for t in ("cpu", "ascend-sim", "ascend"):
        missing = [c.name for c in report.missing(t)]
        state = "ready" if not missing else f"NOT ready (needs: {', '.join(missing)})"
        lines.append(f"target {t:<10}  {state}")
    chosen = _resolve(report, target)
    if target == "auto":
        lines.append(f"target auto        runs on {chosen} here")
    verdict = "can" if report.ready(chosen) else "cannot"
    lines.append(f"\nrequested target {target}: {verdict} work on this machine")
    return "\n".join(lines)


def render_json(report: Report, target: str) -> str:
    """The report as JSON: checks, per-target readiness, the requested target."""
    chosen = _resolve(report, target)
    data = {"pyasc": __version__, **report.as_dict(),
            "requested": {"target": target, "resolved": chosen,
                          "ready": report.ready(chosen)}}
    return json.dumps(data, indent=2)


def main(argv: Sequence[str]) -> int:
    """``pyasc doctor [--target T] [--json]``: print the report; exit status 1 when
    the requested target cannot work here."""
    parser = argparse.ArgumentParser(
        prog="pyasc doctor", description="check this machine for pyasc's targets and say "
        "how to fix what is missing")
    parser.add_argument("--target", choices=TARGET_CHOICES, default="auto",
                        help="the target that must work (default: auto, the one @hybrid "
                             "picks here); the exit status is 1 when it cannot")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    opts = parser.parse_args(argv)
    report = doctor()
    text = render_json(report, opts.target) if opts.json else render_text(report, opts.target)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `pyasc doctor | head`: the reader left; the status still counts
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0 if report.ready(_resolve(report, opts.target)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
