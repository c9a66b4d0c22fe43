"""Checks of the CANN toolkit: where it is, its version, whether ``set_env.sh`` was
sourced, and the tools and headers the ``ascend`` target compiles with (found exactly
as ``pyasc.backend.ascendc.bisheng.find_toolchain`` finds them)."""

from __future__ import annotations

import os
from pathlib import Path

from pyasc.backend.ascendc.bisheng import TOOL_OVERRIDES, find_tool, include_dirs, tool_dir
from pyasc.errors import ToolchainMissingError
from pyasc.tools import cann_files
from pyasc.tools.report import CheckResult, Context

INSTALL_FIX = ("install the CANN toolkit that matches the NPU driver (driver and firmware "
               "first, then Ascend-cann-toolkit_<version>_linux-<arch>.run --install), then "
               "source its set_env.sh; without an NPU use target='cpu' or 'ascend-sim'")


def _looked_in(ctx: Context) -> str:
    places = [*cann_files.HOME_VARIABLES,
              *map(str, cann_files.default_homes(ctx.ascend_root, ctx.user_home))]
    return ", ".join(places)


def check_toolkit(ctx: Context) -> CheckResult:
    """The toolkit directory: named by the environment (what pyasc uses), else one
    installed in a default place but not set up in this shell."""
    name = "cann-toolkit"
    tk, problem = ctx.toolkit_lookup
    if problem is not None:
        fix = ctx.set_env_fix() if tk else INSTALL_FIX
        return CheckResult(name, "fail", problem + (f"; a toolkit is installed at {tk.home}"
                                                    if tk else ""), fix)
    if tk is None:
        return CheckResult(name, "fail", f"no CANN toolkit (looked in {_looked_in(ctx)})",
                           INSTALL_FIX)
    if not tk.sourced:
        return CheckResult(name, "fail", f"installed at {tk.home}, but ASCEND_HOME_PATH is "
                           "not set in this environment", ctx.set_env_fix())
    return CheckResult(name, "ok", f"{tk.home} ({tk.variable})")


def check_version(ctx: Context) -> CheckResult:
    """The toolkit's version, from its version files."""
    name = "cann-version"
    if ctx.toolkit is None:
        return CheckResult(name, "skip", "no toolkit")
    info = ctx.toolkit_version
    if info is None:
        return CheckResult(name, "warn", f"no version file under {ctx.toolkit.home} (looked "
                           "for <arch>-linux/ascend_toolkit_install.info, compiler/"
                           "version.info, include/version/cann_version.h)",
                           "reinstall the toolkit: its version files are missing")
    line = f", {info.line}" if info.line else ""
    return CheckResult(name, "ok", f"{info.version}{line} ({info.path})")


def _on_path(path_text: str, wanted: Path) -> bool:
    want = os.path.realpath(wanted)
    return any(p and os.path.realpath(p) == want for p in path_text.split(os.pathsep))


def check_set_env(ctx: Context) -> CheckResult:
    """Whether ``set_env.sh`` was sourced: the variables it exports, ``lib64`` on
    ``LD_LIBRARY_PATH`` and ``compiler/ccec_compiler/bin`` on ``PATH``."""
    name = "set-env"
    tk = ctx.toolkit
    if tk is None:
        return CheckResult(name, "skip", "no toolkit")
    env = ctx.environ
    have = [v for v in cann_files.HOME_VARIABLES if env.get(v)]
    lacking = [v for v in cann_files.HOME_VARIABLES if not env.get(v)]
    if not _on_path(env.get("LD_LIBRARY_PATH", ""), tk.home / "lib64"):
        lacking.append(f"{tk.home / 'lib64'} on LD_LIBRARY_PATH")
    if not _on_path(env.get("PATH", ""), tool_dir(tk.home)):
        lacking.append(f"{tool_dir(tk.home)} on PATH")
    if not lacking:
        return CheckResult(name, "ok", f"sourced ({', '.join(have)}, LD_LIBRARY_PATH, PATH)")
    status = "fail" if not have else "warn"
    found = ("not sourced: " if not have else "partly set up: ") + "missing " + \
        "; ".join(lacking)
    return CheckResult(name, status, found, ctx.set_env_fix())


def _tool(ctx: Context, tool: str) -> CheckResult:
    override = TOOL_OVERRIDES[tool]
    home = ctx.toolkit.home if ctx.toolkit else None
    path = find_tool(tool, ctx.environ, home)
    if path is None:
        where = f" nor in {tool_dir(home)}" if home else ""
        return CheckResult(tool, "fail", f"not on PATH{where}",
                           f"{ctx.set_env_fix()}, or set {override}=/path/to/{tool}")
    if os.sep not in path:  # an override naming a command: PATH finds it, as bisheng.py
        path = ctx.which(path) or path
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return CheckResult(tool, "fail", f"{override}={path} is not an executable file",
                           f"point {override} at the {tool} of the toolkit, or unset it")
    status, out = ctx.run([path, "--version"])
    if status != 0:
        first = out.splitlines()[0] if out else f"exit status {status}"
        return CheckResult(tool, "fail", f"{path} --version fails: {first}",
                           f"reinstall the toolkit, or point {override} at a working {tool}")
    version = out.splitlines()[0] if out else "?"
    via = f" ({override})" if ctx.environ.get(override) else ""
    return CheckResult(tool, "ok", f"{path}{via}: {version}")


def check_bisheng(ctx: Context) -> CheckResult:
    """bisheng, the AscendC compiler (``PYASC_COMPILER`` overrides)."""
    return _tool(ctx, "bisheng")


def check_linker(ctx: Context) -> CheckResult:
    """ld.lld, the kernel linker (``PYASC_LINKER`` overrides)."""
    return _tool(ctx, "ld.lld")


def check_headers(ctx: Context) -> CheckResult:
    """The AscendC headers bisheng is given (``compiler/tikcpp/tikcfw`` or
    ``asc/include``) and ``cann_version.h``."""
    name = "ascendc-headers"
    if ctx.toolkit is None:
        return CheckResult(name, "skip", "no toolkit")
    try:
        dirs, version_header = include_dirs(ctx.toolkit.home)
    except ToolchainMissingError as exc:
        return CheckResult(name, "fail", exc.message, "reinstall the toolkit (its AscendC "
                           "headers are missing), or source the set_env.sh of a complete one")
    extra = "" if version_header else "; no include/version/cann_version.h"
    return CheckResult(name, "ok", f"{dirs[0]} (+{len(dirs) - 1} more){extra}")
