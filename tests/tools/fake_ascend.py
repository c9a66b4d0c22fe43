"""Fake Ascend installs for the doctor's tests: a toolkit tree (version file, headers,
``lib64``, ``set_env.sh``, ``bisheng``/``ld.lld`` scripts printing a version), a driver
``version.info``, device nodes, and the environment ``set_env.sh`` would export."""

from __future__ import annotations

import os
import platform
import stat
from pathlib import Path

DRIVER_INNER = "V100R001C15SPC006B220"
TOOLKIT_INNER = "V100R001C25SPC001B212"


def script(path: Path, body: str) -> Path:
    """An executable ``sh`` script at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def make_toolkit(root: Path, layout: str = "ascend-toolkit", version: str = "8.5.0",
                 compatible: str = "[V100R001C15],[V100R001C18]", headers: bool = True,
                 version_file: bool = True) -> Path:
    """A toolkit under ``root`` (``/usr/local/Ascend``); returns its home (what
    ``ASCEND_HOME_PATH`` names).  ``layout``: ``ascend-toolkit`` (``latest``, set_env.sh
    one level up) or ``cann`` (set_env.sh inside)."""
    home = root / "ascend-toolkit" / "latest" if layout == "ascend-toolkit" else root / "cann"
    home.mkdir(parents=True)
    (home.parent if layout == "ascend-toolkit" else home).joinpath("set_env.sh").write_text(
        f"export ASCEND_HOME_PATH={home}\n")
    if version_file:
        info = home / f"{platform.machine()}-linux" / "ascend_toolkit_install.info"
        info.parent.mkdir()
        info.write_text(f"package_name=Ascend-cann-toolkit\nversion={version}\n"
                        f"innerversion={TOOLKIT_INNER}\ncompatible_version={compatible}\n"
                        f"arch={platform.machine()}\nos=linux\npath={info.parent}\n")
    if headers:
        tikcfw = home / "compiler" / "tikcpp" / "tikcfw"
        for d in (tikcfw / "impl", tikcfw / "interface", home / "include" / "version"):
            d.mkdir(parents=True)
        (home / "include" / "version" / "cann_version.h").write_text(
            '#define ASC_DEVKIT_VERSION_STR "7.5"\n')
    (home / "lib64").mkdir()
    bindir = home / "compiler" / "ccec_compiler" / "bin"
    script(bindir / "bisheng", 'echo "bisheng version 1.2.3 (fake)"')
    script(bindir / "ld.lld", 'echo "LLD 15.0.5 (fake)"')
    return home


def make_driver(root: Path, version: str = "24.1.rc1",
                compatible: str = "[V100R001C30],[V100R001C13]") -> Path:
    path = root / "driver" / "version.info"
    path.parent.mkdir(parents=True)
    path.write_text(f"Version={version}\nascendhal_version=7.35.19\nInnerversion={DRIVER_INNER}"
                    f"\ncompatible_version={compatible}\ncompatible_version_fw=[7.0.0,7.2.99]\n")
    return path


def make_nodes(dev: Path, names: tuple[str, ...] = ("davinci0", "davinci1",
                                                      "davinci_manager")) -> Path:
    dev.mkdir(parents=True, exist_ok=True)
    for name in names:
        (dev / name).touch()
    return dev


def base_env(extra_path: str = "") -> dict[str, str]:
    """A clean environment: this process's PATH (for the C++ compiler) and nothing of
    Ascend's."""
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return {"PATH": f"{extra_path}{os.pathsep}{path}" if extra_path else path}


def sourced_env(home: Path) -> dict[str, str]:
    """What ``set_env.sh`` exports for ``home``."""
    env = base_env(str(home / "compiler" / "ccec_compiler" / "bin"))
    env.update(ASCEND_HOME_PATH=str(home), ASCEND_TOOLKIT_HOME=str(home),
               LD_LIBRARY_PATH=str(home / "lib64"))
    return env
