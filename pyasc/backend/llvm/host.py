"""This machine and compiler as cache-key parts, without importing ``llvmlite.binding``.

A disk-cache hit must not pay for initialising LLVM (30-80 ms), so the key names the
compiler by llvmlite's version plus the size and modification time of its LLVM library
(a rebuilt llvmlite against another LLVM changes them), and the CPU by what the kernel
reports: on Linux the first processor's vendor, family, model, stepping and feature
flags in ``/proc/cpuinfo`` (LLVM derives its host CPU name and features from the same
CPUID data).  Elsewhere the key falls back to LLVM's own host CPU name and features.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

_CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags",
               "isa", "uarch", "CPU implementer", "CPU part", "Features")
"""``/proc/cpuinfo`` fields that identify the processor (x86, RISC-V, ARM spellings)."""


@functools.cache
def compiler_identity() -> dict[str, str]:
    """llvmlite's version and a fingerprint of its LLVM library file."""
    import llvmlite

    folder = Path(llvmlite.__file__).parent / "binding"
    libs = sorted(folder.glob("libllvmlite*")) + sorted(folder.glob("llvmlite*.dll"))
    stats = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libs]
    return {"llvmlite": llvmlite.__version__, "libllvmlite": ";".join(stats)}


@functools.cache
def cpu_identity() -> str:
    """A digest naming this processor model and its features."""
    fields = _cpuinfo()
    if fields:
        text = "\n".join(f"{k}={fields[k]}" for k in sorted(fields))
    else:  # no /proc/cpuinfo: ask LLVM (imports llvmlite.binding)
        from pyasc.backend.llvm import jit

        text = "\n".join(jit.host_cpu())
    return hashlib.sha256(text.encode()).hexdigest()


def _cpuinfo() -> dict[str, str]:
    """The identifying fields of the first processor block of ``/proc/cpuinfo``."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                key = key.strip()
                if key in _CPU_FIELDS:
                    fields[key] = " ".join(value.split())
    except OSError:
        return {}
    return fields if os.name == "posix" else {}
