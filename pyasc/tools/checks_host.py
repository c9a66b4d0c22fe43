"""Checks of the host: Python, numpy, llvmlite and its LLVM, the CPU the LLVM backend
compiles for, and the C++ compiler that ``ascend-sim`` builds with."""

from __future__ import annotations

import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

from pyasc.backend.ascendc.sim.runner import find_compiler
from pyasc.errors import ToolchainMissingError
from pyasc.tools.report import CheckResult, Context

MIN_NUMPY = (1, 26)
MIN_LLVMLITE = (0, 42)

# The vector features worth naming, by LLVM feature name: what the CPU target's loops
# are vectorized with.
VECTOR_FEATURES = {
    "x86_64": (("sse4.2", "SSE4.2"), ("avx", "AVX"), ("avx2", "AVX2"), ("fma", "FMA"),
               ("avx512f", "AVX-512F"), ("avx512bw", "AVX-512BW"),
               ("avx512vl", "AVX-512VL"), ("avx512fp16", "AVX-512-FP16")),
    "aarch64": (("neon", "NEON"), ("fp-armv8", "FP"), ("fullfp16", "FP16"), ("sve", "SVE"),
                ("sve2", "SVE2")),
}
VECTOR_FEATURES["AMD64"] = VECTOR_FEATURES["x86_64"]
VECTOR_FEATURES["arm64"] = VECTOR_FEATURES["aarch64"]


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def check_python(ctx: Context) -> CheckResult:
    """The interpreter running pyasc."""
    v = sys.version_info
    found = f"{v.major}.{v.minor}.{v.micro} ({platform.python_implementation()}, " \
            f"{sys.executable})"
    if v < (3, 10):
        return CheckResult("python", "fail", found, "use Python 3.10 or newer")
    return CheckResult("python", "ok", found)


def check_numpy(ctx: Context) -> CheckResult:
    """numpy, which every target needs."""
    found = f"numpy {np.__version__}"
    if _version(np.__version__) < MIN_NUMPY:
        return CheckResult("numpy", "fail", found, "pip install 'numpy>=1.26'")
    return CheckResult("numpy", "ok", found)


def check_llvmlite(ctx: Context) -> CheckResult:
    """llvmlite and the LLVM it bundles: the ``cpu`` target."""
    try:
        import llvmlite
        import llvmlite.binding as llvm
    except ImportError as exc:
        return CheckResult("llvmlite", "fail", f"cannot import llvmlite: {exc}",
                           "pip install 'llvmlite>=0.42'")
    found = f"llvmlite {llvmlite.__version__}, LLVM " + \
        ".".join(map(str, llvm.llvm_version_info))
    if _version(llvmlite.__version__) < MIN_LLVMLITE:
        return CheckResult("llvmlite", "fail", found, "pip install -U 'llvmlite>=0.42'")
    return CheckResult("llvmlite", "ok", found)


def check_host_cpu(ctx: Context) -> CheckResult:
    """The CPU and features the LLVM backend targets (LLVM's view of this host)."""
    try:
        from pyasc.backend.llvm.jit import host_cpu
        name, features = host_cpu()
    except ImportError as exc:
        return CheckResult("host-cpu", "skip", f"needs llvmlite ({exc})")
    enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
    machine = platform.machine()
    vector = [label for feat, label in VECTOR_FEATURES.get(machine, ()) if feat in enabled]
    found = f"{name} ({machine}): {', '.join(vector) or 'no vector extensions known'}"
    if name in ("generic", ""):
        return CheckResult("host-cpu", "warn", found + "; LLVM does not know this CPU, so "
                           "the cpu target compiles for a baseline CPU",
                           "pip install -U llvmlite (a newer LLVM may know this CPU)")
    return CheckResult("host-cpu", "ok", found)


_TINY = "#include <atomic>\n#include <thread>\nextern \"C\" int pyasc_probe() " \
        "{ std::atomic<int> n{1}; return n.load(); }\n"


def check_cxx(ctx: Context) -> CheckResult:
    """The C++ compiler of ``ascend-sim`` ($CXX, else c++, g++, clang++) and whether it
    builds a tiny C++17 shared library."""
    name = "c++ compiler"
    try:
        cxx = find_compiler(ctx.environ)
    except ToolchainMissingError as exc:
        return CheckResult(name, "fail", exc.message, "install g++ or clang++ with C++17 "
                           "(e.g. apt-get install g++), or set CXX to one")
    with tempfile.TemporaryDirectory(prefix="pyasc-doctor-") as work:
        src = Path(work) / "probe.cpp"
        src.write_text(_TINY)
        status, out = ctx.run([cxx, "-std=c++17", "-fPIC", "-shared", "-pthread", str(src),
                               "-o", str(Path(work) / "probe.so")], timeout=120)
    if status != 0:
        first = out.splitlines()[0] if out else f"exit status {status}"
        return CheckResult(name, "fail", f"{cxx} does not build a C++17 library: {first}",
                           "install a C++17 compiler (g++ >= 7 or clang++ >= 5), or set "
                           "CXX to one")
    _, banner = ctx.run([cxx, "--version"])
    version = banner.splitlines()[0] if banner else "?"
    return CheckResult(name, "ok", f"{cxx} ({version}) builds C++17")
