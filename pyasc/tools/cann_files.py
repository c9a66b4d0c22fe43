"""Where a CANN toolkit and an NPU driver live, and what their version files say.

Layouts (the install guides of CANN 8.x; reference section 2.1):

* toolkit: ``$ASCEND_HOME_PATH`` / ``$ASCEND_TOOLKIT_HOME`` once ``set_env.sh`` was
  sourced; installed by default at ``/usr/local/Ascend/ascend-toolkit/latest`` (its
  ``set_env.sh`` one level up) or, from CANN 8.5, ``/usr/local/Ascend/cann`` (its
  ``set_env.sh`` inside); a non-root install under ``~/Ascend``;
* toolkit version: ``<home>/<arch>-linux/ascend_toolkit_install.info`` (``version=``,
  ``innerversion=``, ``compatible_version=``), else ``compiler/version.info``
  (``Version=``), else ``include/version/cann_version.h``;
* driver: ``/usr/local/Ascend/driver/version.info`` (``Version=``, ``Innerversion=``,
  ``compatible_version=``).

Compatibility: an inner version ``V100R001C15SPC006B220`` belongs to the release line
``V100R001C15``; each package lists, in ``compatible_version``, the lines of the other
package it works with (``[V100R001C15],[V100R001C18]``).  A driver and a toolkit match
when either lists the other's line [I: the rule read from published version files].
"""

from __future__ import annotations

import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

HOME_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
"""What ``set_env.sh`` exports for the toolkit, in the order pyasc reads them."""

_LINE = re.compile(r"V\d+R\d+C\d+")


@dataclass(frozen=True)
class Toolkit:
    """A toolkit directory and how it was found (``variable`` is ``None`` for a default
    install location that the environment does not name)."""

    home: Path
    variable: str | None

    @property
    def sourced(self) -> bool:
        return self.variable is not None


@dataclass(frozen=True)
class VersionInfo:
    """What a version file says: ``version``, the release ``line`` of its inner version,
    the lines it lists as compatible, and the file read."""

    version: str
    path: Path
    line: str | None = None
    compatible: frozenset[str] = field(default_factory=frozenset)


def default_homes(root: Path, user_home: Path | None) -> list[Path]:
    """The toolkit install locations looked at when the environment names none."""
    homes = [root / "ascend-toolkit" / "latest", root / "cann"]
    if user_home is not None:
        homes.append(user_home / "Ascend" / "ascend-toolkit" / "latest")
    return homes


def find_toolkit(env: Mapping[str, str], root: Path,
                 user_home: Path | None) -> tuple[Toolkit | None, str | None]:
    """The toolkit: the one the environment names, else one installed in a default
    place; and the problem with the environment's (a variable naming no directory)."""
    for var in HOME_VARIABLES:
        text = env.get(var)
        if text:
            if Path(text).is_dir():
                return Toolkit(Path(text), var), None
            fallback = _first_dir(default_homes(root, user_home))
            return (Toolkit(fallback, None) if fallback else None,
                    f"{var}={text} is not a directory")
    home = _first_dir(default_homes(root, user_home))
    return (Toolkit(home, None) if home else None), None


def _first_dir(paths: list[Path]) -> Path | None:
    return next((p for p in paths if p.is_dir()), None)


def set_env_script(home: Path) -> Path | None:
    """The ``set_env.sh`` that sets up ``home`` (next to it or one level up)."""
    for candidate in (home / "set_env.sh", home.parent / "set_env.sh",
                      home / "bin" / "setenv.bash"):
        if candidate.is_file():
            return candidate
    return None


def read_pairs(path: Path) -> dict[str, str]:
    """``key=value`` lines of a version file (keys lower-cased, quotes stripped)."""
    pairs: dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return pairs
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs[key.strip().lower()] = value.strip().strip('"')
    return pairs


def _info(path: Path) -> VersionInfo | None:
    pairs = read_pairs(path)
    if not pairs.get("version"):
        return None
    inner = _LINE.match(pairs.get("innerversion", ""))
    return VersionInfo(pairs["version"], path, inner.group(0) if inner else None,
                       frozenset(_LINE.findall(pairs.get("compatible_version", ""))))


def _install_infos(home: Path) -> list[Path]:
    mine = home / f"{platform.machine()}-linux" / "ascend_toolkit_install.info"
    return [mine, *sorted(home.glob("*-linux/ascend_toolkit_install.info"))]


def toolkit_version(home: Path) -> VersionInfo | None:
    """The toolkit's version from the first version file it has."""
    for path in (*_install_infos(home), home / "compiler" / "version.info"):
        info = _info(path) if path.is_file() else None
        if info is not None:
            return info
    header = home / "include" / "version" / "cann_version.h"
    if header.is_file():
        m = re.search(r'#define\s+ASC_DEVKIT_VERSION_STR\s+"([^"]+)"', header.read_text(
            errors="replace"))
        if m:
            return VersionInfo(m.group(1), header)
    return None


def driver_version(root: Path) -> VersionInfo | None:
    """The NPU driver's version file under ``root`` (``/usr/local/Ascend``)."""
    path = root / "driver" / "version.info"
    return _info(path) if path.is_file() else None


def compatible(driver: VersionInfo, toolkit: VersionInfo) -> bool | None:
    """Whether the two packages list each other's release line (``None``: neither file
    says anything either way)."""
    said = False
    for mine, other in ((driver, toolkit), (toolkit, driver)):
        if mine.compatible and other.line:
            said = True
            if other.line in mine.compatible:
                return True
    return False if said else None
