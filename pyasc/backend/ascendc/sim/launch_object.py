"""The prebuilt launch object: the sim's kernel-independent launch code, compiled once.

Every ascend-sim library exports its kernels through ``PYASC_SIM_EXPORT``, which calls
``pyasc_sim::launch``: the block scheduler, its worker threads, the mix-group hand-offs and
the race checks (``sim_launch.h``).  None of it depends on the kernel, yet at ``-O0`` GCC
compiled it again into every library: about half of a small kernel's build (measured on a
154-line elementwise kernel: 1.28 s -> 0.75 s of user time with the object).  With a root
folder, :func:`build_flags` compiles ``sim_launch.h`` once per configuration (compiler,
headers, flags: the same key as the precompiled header, :mod:`.pch`) with
``PYASC_SIM_LAUNCH_OBJECT`` into ``<root>/<key>/pyasc_sim_launch.o`` and returns the
flags that make a library declare ``launch`` only and link that object statically: each
library stays self-contained, and the object is built from the very headers and flags
the library is.  No root, ``PYASC_SIM_PCH=0``, or a failed object build mean the plain
build (``launch`` inline in the library), which runs the same code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pyasc.backend.ascendc.sim import pch

DEFINE = "-DPYASC_SIM_EXTERN_LAUNCH"
OBJECT = "pyasc_sim_launch.o"
SOURCE_TEXT = ('#define PYASC_SIM_LAUNCH_OBJECT\n'
               '#include "kernel_operator.h"\n#include "sim_launch.h"\n')


def build_flags(cxx: str, flags: Sequence[str], root: Path | None) -> tuple[list[str], list[str]]:
    """``(defines, objects)`` for a library built with ``flags``: ``([DEFINE], [object])``
    once the launch object of ``flags`` exists under ``root`` (built on first use), else
    ``([], [])``.  ``defines`` go before the precompiled header is chosen (it must be
    built with them), ``objects`` on the link line."""
    if root is None or not pch.enabled():
        return [], []
    flags = [*flags, DEFINE]
    key = hashlib.sha256("\0".join(["launch", pch.compiler_banner(cxx), pch.headers_digest(),
                                    *flags]).encode()).hexdigest()[:24]
    obj = root / key / OBJECT
    if not obj.is_file() and not _build(cxx, flags, obj):
        return [], []
    return [DEFINE], [str(obj)]


def _build(cxx: str, flags: Sequence[str], obj: Path) -> bool:
    """Compile the launch object to ``obj`` (:func:`.pch.compile_once`)."""
    source = obj.parent / "pyasc_sim_launch.cpp"
    return pch.compile_once(source, SOURCE_TEXT, obj, [cxx, *flags, "-c", str(source)])
