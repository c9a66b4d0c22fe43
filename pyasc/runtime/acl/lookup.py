"""Where the AscendCL library is: ``PYASC_ACL_LIBRARY``, else the toolkit's ``lib64``
and each ``LD_LIBRARY_PATH`` entry, ``libascendcl.so`` before ``libacl_rt.so``.

:func:`find_library` never raises: it returns a :class:`LibraryLookup` with the path
found (or ``None``), every path it tried and a one-line reason a user can act on.
:func:`load_library` loads the found library once per process and path, or raises
``ToolchainMissingError`` (E50030) naming what is missing.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pyasc.errors import ToolchainMissingError
from pyasc.runtime.acl.binding import AclLibrary

LIBRARY_VARIABLE = "PYASC_ACL_LIBRARY"
NAMES = ("libascendcl.so", "libacl_rt.so")
SET_ENV_HINT = ("source <ascend-toolkit>/set_env.sh (it sets ASCEND_HOME_PATH and "
                f"LD_LIBRARY_PATH), or point {LIBRARY_VARIABLE} at libascendcl.so")


@dataclass(frozen=True)
class LibraryLookup:
    """The result of :func:`find_library`: ``path`` (``None`` when not found), the
    candidate paths ``tried`` in order, and ``reason`` (how it was found, or why not)."""

    path: Path | None
    tried: tuple[str, ...]
    reason: str


def _directories(env: Mapping[str, str]) -> list[Path]:
    dirs: list[Path] = []
    home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
    if home:
        dirs.append(Path(home) / "lib64")
    dirs += [Path(d) for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    unique: dict[str, Path] = {}
    for d in dirs:
        unique.setdefault(str(d), d)
    return list(unique.values())


def find_library(environ: Mapping[str, str] | None = None) -> LibraryLookup:
    """Find the AscendCL library named by ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    override = env.get(LIBRARY_VARIABLE)
    if override:
        path = Path(override)
        if path.is_file():
            return LibraryLookup(path, (override,), f"{LIBRARY_VARIABLE}={override}")
        return LibraryLookup(None, (override,),
                             f"{LIBRARY_VARIABLE}={override} is not a file")
    tried: list[str] = []
    for name in NAMES:  # every directory for libascendcl.so first, then libacl_rt.so
        for d in _directories(env):
            candidate = d / name
            tried.append(str(candidate))
            if candidate.is_file():
                return LibraryLookup(candidate, tuple(tried), f"found {candidate}")
    if not env.get("ASCEND_HOME_PATH") and not env.get("ASCEND_TOOLKIT_HOME"):
        reason = ("ASCEND_HOME_PATH is not set and no LD_LIBRARY_PATH entry holds "
                  f"{' or '.join(NAMES)}: {SET_ENV_HINT}")
    else:
        reason = f"no {' or '.join(NAMES)} in {len(tried)} places tried: {SET_ENV_HINT}"
    return LibraryLookup(None, tuple(tried), reason)


_LOAD_LOCK = threading.Lock()


def load_library(environ: Mapping[str, str] | None = None) -> AclLibrary:
    """The process's :class:`AclLibrary` for the library :func:`find_library` finds."""
    lookup = find_library(environ)
    if lookup.path is None:
        raise ToolchainMissingError(f"the AscendCL library is missing: {lookup.reason}",
                                    hint=SET_ENV_HINT)
    with _LOAD_LOCK:
        return _loaded(str(lookup.path.resolve()))


@functools.cache
def _loaded(path: str) -> AclLibrary:
    try:
        return AclLibrary(Path(path))
    except OSError as exc:
        raise ToolchainMissingError(f"cannot load the AscendCL library {path}: {exc}",
                                    hint=SET_ENV_HINT) from None
