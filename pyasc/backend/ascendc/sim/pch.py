"""A precompiled header of the ascend-sim headers, shared by every sim build.

Each ascend-sim kernel is a C++ build that includes ``kernel_operator.h`` and
``sim_launch.h``; parsing them is about a third of a small kernel's build at ``-O0``.
With GCC the runner compiles them once per configuration into
``<root>/<key>/pyasc_sim_pch.h.gch`` and passes ``-include <root>/<key>/pyasc_sim_pch.h``
to every build.  The key covers the compiler, the headers' bytes and every flag that
must match for GCC to accept the PCH (optimisation level, ``-D`` defines, PIC).  GCC
checks a PCH before using it and silently reads the plain header instead when it does
not fit, so a stale or damaged file costs time, never correctness.  Clang and other
compilers, an unwritable root, a failed PCH build, or ``PYASC_SIM_PCH=0`` mean plain
builds.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

SIM_DIR = Path(__file__).resolve().parent
HEADER = "pyasc_sim_pch.h"
HEADER_TEXT = '#include "kernel_operator.h"\n#include "sim_launch.h"\n'


@functools.cache
def headers_digest() -> str:
    """SHA-256 over the sim headers (a change rebuilds every cached library and PCH)."""
    h = hashlib.sha256()
    for path in sorted(SIM_DIR.glob("*.h")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@functools.cache
def compiler_banner(cxx: str) -> str:
    """The first line of ``cxx --version`` ("" when it cannot be run)."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else ""


@functools.cache
def is_gcc(cxx: str) -> bool:
    """Whether ``cxx`` is GCC (defines ``__GNUC__`` and not ``__clang__``): the only
    PCH format used here."""
    try:
        out = subprocess.run([cxx, "-dM", "-E", "-x", "c++", os.devnull],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "__GNUC__" in out.stdout and "__clang__" not in out.stdout


def enabled() -> bool:
    """False when ``PYASC_SIM_PCH=0`` asks for plain builds."""
    return os.environ.get("PYASC_SIM_PCH", "1") != "0"


def include_flags(cxx: str, flags: Sequence[str], root: Path | None) -> list[str]:
    """``["-include", header]`` of a PCH built with ``flags`` (the build's compiler
    flags, without input and output), building it under ``root`` on first use; ``[]``
    when no PCH can be used."""
    if root is None or not enabled() or not is_gcc(cxx):
        return []
    key = hashlib.sha256("\0".join([compiler_banner(cxx), headers_digest(), *flags])
                         .encode()).hexdigest()[:24]
    folder = root / key
    header = folder / HEADER
    if not (folder / (HEADER + ".gch")).is_file() and not _build(cxx, flags, folder):
        return []
    return ["-include", str(header)]


def _build(cxx: str, flags: Sequence[str], folder: Path) -> bool:
    """Build the PCH into ``folder`` (:func:`compile_once`)."""
    header = folder / HEADER
    return compile_once(header, HEADER_TEXT, folder / (HEADER + ".gch"),
                        [cxx, *flags, "-x", "c++-header", str(header)])


def compile_once(source: Path, text: str, out: Path, cmd: Sequence[str]) -> bool:
    """Write ``text`` to ``source`` (if absent) and run ``cmd -o <temporary>``, then move
    the result to ``out``: concurrent builders each write a temporary file and the last
    ``os.replace`` wins (the files are equivalent).  False if anything fails."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if not source.is_file():
            _write_atomic(source, text.encode())
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=out.suffix + ".tmp")
        os.close(fd)
        proc = subprocess.run([*cmd, "-o", tmp], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            os.unlink(tmp)
            return False
        os.replace(tmp, out)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
