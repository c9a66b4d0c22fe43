"""Compile generated AscendC against the ascend-sim headers and run it through ctypes.

The kernel source is compiled unchanged (exactly what bisheng would get) inside a wrapper
translation unit that appends ``sim_launch.h`` and one ``PYASC_SIM_EXPORT(name)`` per kernel::

    lib = compile_kernels(source, ["add_custom"])
    counters = lib.launch("add_custom", 8, x, y, z, np.int32(n))

Arguments follow the kernel's C signature, which the library reports itself
(``pyasc_sim_signature_<name>``): numpy arrays for ``GM_ADDR`` parameters (their bytes
bound every GM access), Python or numpy scalars for by-value parameters. A model violation
raises :class:`SimViolationError` naming the AscendC call and its source line.  A launch
polls pyasc's interrupt runtime in the model's API calls (``sim_state.h``): Ctrl-C stops
it and raises ``KeyboardInterrupt`` (or what the SIGINT handler raised) at the caller.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.sim import launch_object, pch
from pyasc.errors import ArgumentError, InternalCompilerError, ToolchainMissingError
from pyasc.runtime import interrupt
from pyasc.runtime.bf16 import float32_to_bf16_bits

SIM_DIR = pch.SIM_DIR
_MAIN = "pyasc_sim_main.cpp"
_ERRLEN = 4096
_MAX_COMPILER_OUTPUT = 20000


class SimCompileError(InternalCompilerError):
    """Generated AscendC that does not compile against the ascend-sim headers (E50050)."""

    title = "generated AscendC does not compile (ascend-sim)"
    default_hint = "this is a pyasc bug: please report it with the generated source"


class SimViolationError(InternalCompilerError):
    """A kernel broke an AscendC rule that real hardware would not report (E50050).

    ``api``, ``line``, ``file``, ``block`` and ``detail`` give the offending call.
    """

    title = "ascend-sim violation"
    default_hint = "the generated kernel would misbehave on an NPU; please report this pyasc bug"

    def __init__(self, api: str, file: str, line: int, block: int, detail: str, **kw: Any) -> None:
        self.api, self.file, self.line, self.block, self.detail = api, file, line, block, detail
        super().__init__(f"{api} at {file}:{line} (block {block}): {detail}", **kw)


@dataclass(frozen=True)
class SimConfig:
    """SoC parameters and compiler options of one build."""

    ub_bytes: int = 192 * 1024
    ub_reserved_bytes: int = 8 * 1024
    max_buffers: int = 64
    opt_level: str = "-O2"
    l1_bytes: int = 512 * 1024 - 256   # usable L1 of the cube unit (910B)
    l0a_bytes: int = 64 * 1024
    l0b_bytes: int = 64 * 1024
    l0c_bytes: int = 128 * 1024
    npu_arch: int = 2201               # __NPU_ARCH__: which DataCacheCleanAndInvalid forms exist

    def defines(self) -> list[str]:
        """The -D flags that configure the headers."""
        return [
            f"-DPYASC_SIM_UB_BYTES={self.ub_bytes}",
            f"-DPYASC_SIM_UB_RESERVED_BYTES={self.ub_reserved_bytes}",
            f"-DPYASC_SIM_MAX_BUFFERS={self.max_buffers}",
            f"-DPYASC_SIM_L1_BYTES={self.l1_bytes}",
            f"-DPYASC_SIM_L0A_BYTES={self.l0a_bytes}",
            f"-DPYASC_SIM_L0B_BYTES={self.l0b_bytes}",
            f"-DPYASC_SIM_L0C_BYTES={self.l0c_bytes}",
            f"-DPYASC_SIM_NPU_ARCH={self.npu_arch}",
        ]


def find_compiler(environ: Mapping[str, str] | None = None) -> str:
    """The host C++ compiler: ``$CXX``, else the first of c++, g++, clang++ on PATH
    (of ``environ``, default ``os.environ``)."""
    env = os.environ if environ is None else environ
    candidates = [env["CXX"]] if env.get("CXX") else ["c++", "g++", "clang++"]
    for name in candidates:
        path = shutil.which(name, path=env.get("PATH"))
        if path:
            return path
    raise ToolchainMissingError(
        f"no C++ compiler found (tried {', '.join(candidates)}); ascend-sim needs one",
        hint="install g++ or clang++ (C++17), or point CXX at one",
    )


def compile_flags(config: SimConfig) -> list[str]:
    """The compiler flags of a build (and of its precompiled header, see :mod:`.pch`)."""
    return ["-std=c++17", config.opt_level, "-fPIC", "-pthread", "-fvisibility=hidden",
            f"-I{SIM_DIR}", *config.defines()]


def compile_command(cxx: str, config: SimConfig, output: str,
                    include: Sequence[str] = ()) -> list[str]:
    """The compiler command line for the wrapper translation unit (run in its directory);
    ``include``: the flags that force-include a precompiled header."""
    return [cxx, *compile_flags(config), "-shared", *include, _MAIN, "-o", output]


def build_command(cxx: str, config: SimConfig, output: str, pch_root: Path | None) -> list[str]:
    """The command line of a library build: with ``pch_root``, linking the prebuilt launch
    object (:mod:`.launch_object`) and including the precompiled header (:mod:`.pch`) of
    its flags, each built there on first use; without, :func:`compile_command`'s."""
    flags = compile_flags(config)
    defines, objects = launch_object.build_flags(cxx, flags, pch_root)
    include = pch.include_flags(cxx, [*flags, *defines], pch_root)
    return [cxx, *flags, *defines, "-shared", *include, _MAIN, *objects, "-o", output]


def export_line(name: str, core: str = VECTOR, symbol: str | None = None) -> str:
    """The wrapper line exporting kernel ``name`` (as ``symbol``) with its core type
    (``pyasc_sim_core_<symbol>``; a plain export is a vector kernel)."""
    symbol = symbol or name
    if core == VECTOR:
        return f"PYASC_SIM_EXPORT({symbol})\n"
    return f"PYASC_SIM_EXPORT_CORE({symbol}, {core})\n"


def wrapper_source(filename: str, kernels: Sequence[str],
                   cores: Mapping[str, str] | None = None) -> str:
    """The translation unit that includes the kernel source and exports its launchers;
    ``cores`` gives the core type of a kernel that is not a vector kernel."""
    exports = "".join(export_line(name, (cores or {}).get(name, VECTOR)) for name in kernels)
    return f'#include "{filename}"\n#include "sim_launch.h"\n{exports}'


def compile_kernels(
    source: str,
    kernels: Sequence[str],
    *,
    filename: str = "kernel.cpp",
    config: SimConfig | None = None,
    keep_dir: str | os.PathLike[str] | None = None,
    pch_root: Path | None = None,
    cores: Mapping[str, str] | None = None,
) -> SimLibrary:
    """Compile ``source`` (which defines the ``extern "C"`` kernels named in ``kernels``;
    ``cores``: the core type of each kernel that is not a vector kernel).

    Build files go to a temporary directory removed after loading, or to ``keep_dir``.
    With ``pch_root`` the sim headers come from a precompiled header kept there
    (:mod:`.pch`; built on first use).
    Raises :class:`ToolchainMissingError` without a compiler and :class:`SimCompileError`
    with the compiler's output when the source does not compile.
    """
    config = config or SimConfig()
    for name in kernels:
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ArgumentError(f"'{name}' is not a C identifier")
    cxx = find_compiler()
    workdir = Path(keep_dir) if keep_dir else Path(tempfile.mkdtemp(prefix="pyasc-sim-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        (workdir / filename).write_text(source)
        (workdir / _MAIN).write_text(wrapper_source(filename, kernels, cores))
        cmd = build_command(cxx, config, "kernel.so", pch_root)
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise _compile_error(proc.stdout + proc.stderr, source, filename, cmd)
        lib = ctypes.CDLL(str(workdir / "kernel.so"))  # stays mapped after the file is removed
    finally:
        if not keep_dir:
            shutil.rmtree(workdir, ignore_errors=True)
    return SimLibrary(lib, kernels, source=source, filename=filename, config=config)


def _compile_error(output: str, source: str, filename: str, cmd: list[str]) -> SimCompileError:
    # The first "kernel.cpp:LINE:" names the generated line (for template errors it is the
    # "required from here" line of the offending call).
    match = re.search(rf"^(?:.*/)?{re.escape(filename)}:(\d+):(\d+):", output, re.MULTILINE)
    lineno = int(match.group(1)) if match else None
    col = int(match.group(2)) - 1 if match else None
    text = (
        output if len(output) <= _MAX_COMPILER_OUTPUT else output[:_MAX_COMPILER_OUTPUT] + "\n..."
    )
    return SimCompileError(
        f"{' '.join(cmd)}\n{text}",
        filename=filename if lineno else None,
        lineno=lineno,
        col_offset=col,
        source_line=_source_line(source, lineno),
    )


def _source_line(source: str, lineno: int | None) -> str | None:
    lines = source.splitlines()
    return lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None


def _scalar_f16(value: Any) -> ctypes.c_uint16:
    return ctypes.c_uint16(int(np.float16(value).view(np.uint16)))


def _scalar_bf16(value: Any) -> ctypes.c_uint16:
    return ctypes.c_uint16(int(float32_to_bf16_bits(np.float32(value))))


# Signature code of a by-value parameter -> its ctypes value.
_SCALARS: dict[str, Any] = {
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8,
    "u16": ctypes.c_uint16,
    "u32": ctypes.c_uint32,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "bool": ctypes.c_bool,
    "f16": _scalar_f16,
    "bf16": _scalar_bf16,
}


def _marshal(kernel: str, codes: Sequence[str], args: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """ctypes storage for each argument and the byte size of each pointer argument."""
    if len(args) != len(codes):
        raise ArgumentError(
            f"kernel '{kernel}' takes {len(codes)} arguments ({', '.join(codes)}), got {len(args)}"
        )
    values, sizes = [], []
    for i, (code, arg) in enumerate(zip(codes, args, strict=True)):
        if code == "ptr":
            if not isinstance(arg, np.ndarray) or not arg.flags.c_contiguous:
                raise ArgumentError(
                    f"argument {i} of '{kernel}' must be a C-contiguous numpy array"
                )
            values.append(ctypes.c_void_p(arg.ctypes.data))
            sizes.append(arg.nbytes)
        else:
            if isinstance(arg, np.ndarray):
                raise ArgumentError(f"argument {i} of '{kernel}' is a {code} scalar, got an array")
            values.append(_SCALARS[code](arg.item() if isinstance(arg, np.generic) else arg))
            sizes.append(0)
    return values, sizes


_INTERRUPTED = 3


@functools.cache
def _interrupt_functions() -> Any:
    """``{pyasc.rt.poll, pyasc.rt.epoch}`` for the launcher (loads the runtime module)."""
    from pyasc.runtime import threads

    addresses = [threads.runtime_symbol(interrupt.SYMBOLS[r]) for r in ("poll", "epoch")]
    return (ctypes.c_void_p * 2)(*addresses)


class SimLibrary:
    """A compiled ascend-sim kernel library loaded through ctypes."""

    def __init__(
        self,
        lib: ctypes.CDLL,
        kernels: Sequence[str],
        *,
        source: str,
        filename: str,
        config: SimConfig,
        symbols: Mapping[str, str] | None = None,
    ) -> None:
        """``symbols`` maps a kernel name to the name it was exported under when it
        differs (several programs built into one library, see :mod:`.batch`)."""
        self._lib, self.source, self.filename, self.config = lib, source, filename, config
        lib.pyasc_sim_counter_names.restype = ctypes.c_char_p
        lib.pyasc_sim_config.restype = ctypes.c_char_p
        self.counter_names: tuple[str, ...] = tuple(
            lib.pyasc_sim_counter_names().decode().split(",")
        )
        pairs = (item.split("=") for item in lib.pyasc_sim_config().decode().split(","))
        self.header_config: dict[str, int] = {key: int(value) for key, value in pairs}
        self._launchers: dict[str, Any] = {}
        self.signatures: dict[str, tuple[str, ...]] = {}
        for name in kernels:
            symbol = (symbols or {}).get(name, name)
            sig = getattr(lib, f"pyasc_sim_signature_{symbol}")
            sig.restype = ctypes.c_char_p
            text = sig().decode()
            self.signatures[name] = tuple(text.split(",")) if text else ()
            fn = getattr(lib, f"pyasc_sim_launch_{symbol}")
            fn.restype = ctypes.c_int
            fn.argtypes = [
                ctypes.c_uint32,
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.POINTER(ctypes.c_uint64),
                ctypes.POINTER(ctypes.c_uint64),
                ctypes.c_char_p,
                ctypes.c_size_t,
                ctypes.c_void_p,
            ]
            self._launchers[name] = fn

    def launch(self, kernel: str, block_dim: int, *args: Any) -> dict[str, int]:
        """Run every block of ``kernel``; returns the counters summed over blocks.

        Raises :class:`SimViolationError` if a block broke an AscendC rule.
        """
        if kernel not in self._launchers:
            raise ArgumentError(
                f"no kernel '{kernel}' in this library; have {sorted(self._launchers)}"
            )
        values, sizes = _marshal(kernel, self.signatures[kernel], args)
        n = len(values)
        argv = (ctypes.c_void_p * max(n, 1))(*[ctypes.addressof(v) for v in values])
        sizev = (ctypes.c_uint64 * max(n, 1))(*sizes)
        counters = (ctypes.c_uint64 * len(self.counter_names))()
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = self._launchers[kernel](block_dim, argv, sizev, counters, err, _ERRLEN,
                                     _interrupt_functions())
        if rc == _INTERRUPTED:
            interrupt.raise_pending()
        if rc != 0:
            raise self._launch_error(rc, err.value.decode(errors="replace"))
        return dict(zip(self.counter_names, (int(c) for c in counters), strict=True))

    def _launch_error(self, rc: int, report: str) -> InternalCompilerError:
        api, file, line, block, detail = (report.split("|", 4) + ["?"] * 5)[:5]
        if rc != 1:
            return InternalCompilerError(
                f"ascend-sim launch failed: {api}: {detail} (block {block})"
            )
        lineno = int(line) if line.isdigit() else 0
        same_file = Path(file).name == self.filename
        return SimViolationError(
            api,
            file,
            lineno,
            int(block) if block.isdigit() else -1,
            detail,
            filename=file,
            lineno=lineno or None,
            source_line=_source_line(self.source, lineno) if same_file else None,
        )
