"""LLVM IR text -> optimized host object code -> loaded machine code (MCJIT).

Every compilation builds a FRESH target machine for the host CPU with all its features
(reusing one across pass builders was seen to crash, and without the CPU name and
features the vectorizer emits SSE only), runs LLVM's O3 pipeline with loop and SLP
vectorization through the new pass manager, and emits an object file.  The object is
what the disk cache stores, and loading it (here or in a later process) is the only way
code gets into memory, so a cache hit runs exactly the code a fresh compile would.  The
loader is ``pyasc.runtime.objload`` (no LLVM needed, so a cache hit never imports this
module); :class:`LoadedCode` (MCJIT) is the fallback for objects it does not handle.

Threads: llvmlite serializes each call into LLVM with its own process-wide lock
(``llvmlite.binding.ffi``), but a compilation is a sequence of calls on objects of LLVM's
one global context, so :data:`_COMPILE_LOCK` is held around each whole sequence (parse,
optimize, emit; MCJIT loading): compilations in one process run one at a time, while the
Python work around them (frontend, passes, code generation) and every kernel call run
without it.  :func:`initialize` runs once even when threads compile their first kernel
at the same moment.

Failures are internal errors: the LLVM IR is saved to a file named in the message.
"""

from __future__ import annotations

import functools
import struct
import sys
import threading
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from pyasc.errors import InternalCompilerError

_COMPILE_LOCK = threading.Lock()  # LLVM contexts are not shared across threads safely
_INIT_LOCK = threading.Lock()  # taken inside _COMPILE_LOCK (host_cpu), never around it

_RUNTIME_LIBRARIES = {"m": "libm.so.6", "c": "libc.so.6", "gcc_s": "libgcc_s.so.1"}
"""Resolved by generated code: libm (expm1f, erf...), libc (aligned_alloc, free) and
libgcc (``__truncdfhf2`` for double -> float16 on every x86).  Loaded by their usual
Linux sonames (instant) or, failing that, by ``ctypes.util.find_library`` (which runs
``ldconfig``, ~10 ms)."""


@functools.cache
def initialize() -> None:
    """Initialise LLVM's native target once and make the runtime libraries resolvable
    (threads making their first compilation at once wait for the first one's)."""
    with _INIT_LOCK:
        _initialize()


@functools.cache
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # module assembly (the x86-64 poll stub)
    for name, soname in _RUNTIME_LIBRARIES.items():
        for candidate in (soname, None):
            path = candidate or _find_library(name)
            if not path:
                continue
            try:
                llvm.load_library_permanently(path)
                break
            except RuntimeError:  # pragma: no cover - depends on the system
                continue


def _find_library(name: str) -> str | None:
    import ctypes.util  # ~10-40 ms to import; only needed off the usual sonames

    return ctypes.util.find_library(name)


@functools.cache
def host_cpu() -> tuple[str, str]:
    """(CPU name, feature string) of this machine, as LLVM sees them."""
    initialize()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def host_has_fma() -> bool:
    """Whether the host has fused multiply-add (``expand-math`` then emits ``math.fma``
    in its polynomials; without it ``llvm.fma`` would be a libm call per element)."""
    return "+fma" in host_cpu()[1].split(",")


def host_vector_bits() -> int:
    """The widest vector registers of the host (512 with AVX-512F, 256 with AVX2, else
    128): the matmul's register tile is sized for them (``lower_matmul_tiled``)."""
    features = host_cpu()[1].split(",")
    return 512 if "+avx512f" in features else 256 if "+avx2" in features else 128


def target_machine() -> llvm.TargetMachine:
    """A fresh target machine for the host CPU at O3."""
    name, features = host_cpu()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=name, features=features, opt=3)


def versions() -> dict[str, str]:
    """Compiler versions that go into cache keys."""
    return {"llvmlite": llvmlite.__version__,
            "llvm": ".".join(map(str, llvm.llvm_version_info))}


@dataclass
class ObjectCode:
    """An optimized module's object file and its optimized LLVM IR."""

    obj: bytes
    llvm_ir: str


def compile_ir(ir_text: str, name: str) -> ObjectCode:
    """Parse, verify, optimize (O3 + vectorizers) and emit object code for ``ir_text``."""
    initialize()
    with _COMPILE_LOCK:
        tm = target_machine()
        mod = _parse(ir_text, name)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        _verify(mod, name, "after optimization")
        try:
            obj = tm.emit_object(mod)
        except RuntimeError as exc:  # pragma: no cover - LLVM backend failure
            raise _ice(name, str(mod), f"code generation failed: {exc}") from exc
        return ObjectCode(obj, str(mod))


def assembly(llvm_ir: str, name: str) -> str:
    """Host assembly for (already optimized) LLVM IR text."""
    initialize()
    with _COMPILE_LOCK:
        tm = target_machine()
        mod = _parse(llvm_ir, name)
        return tm.emit_assembly(mod)


def looks_loadable(obj: bytes) -> bool:
    """Structural sanity check of an object file before handing it to LLVM, whose loader
    crashes the process on malformed input (ELF: header and section table in bounds)."""
    if sys.platform == "darwin":  # pragma: no cover - Mach-O
        return obj[:4] in (b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf")
    if obj[:4] != b"\x7fELF" or len(obj) < 64 or obj[4] != 2 or obj[5] != 1:
        return False
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + 64 * shnum > len(obj):
        return False
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", obj, shoff + 64 * i + 4)
        offset, size = struct.unpack_from("<QQ", obj, shoff + 64 * i + 0x18)
        if sh_type != 8 and offset + size > len(obj):  # 8 = SHT_NOBITS (.bss)
            return False
    return True


class LoadedCode:
    """Machine code loaded from an object file; keep it alive while calling into it.
    ``runtime``: resolve pyasc's runtime functions (the thread pool) for it."""

    def __init__(self, obj: bytes, symbols: list[str], name: str,
                 runtime: bool = True) -> None:
        if not looks_loadable(obj):
            raise InternalCompilerError(f"kernel '{name}': object code is malformed")
        initialize()
        if runtime:
            _add_runtime_symbols(obj)
        with _COMPILE_LOCK:
            self._tm = target_machine()
            self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self._tm)
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()
            self.addresses = {s: self._engine.get_function_address(s) for s in symbols}
        missing = [s for s, a in self.addresses.items() if not a]
        if missing:
            raise InternalCompilerError(f"kernel '{name}': symbols {missing} not found in "
                                        "the loaded object code")


def _add_runtime_symbols(obj: bytes) -> None:
    """Make the runtime module's functions (thread pool, interrupt polls) resolvable for
    a kernel object calling them (outside the compile lock: loading the runtime module
    may compile it)."""
    from pyasc.runtime import threads

    for name in threads.SYMBOLS:
        if name.encode() in obj:
            address = threads.runtime_symbol(name)
            if address:
                llvm.add_symbol(name, address)


def _parse(ir_text: str, name: str) -> llvm.ModuleRef:
    try:
        mod = llvm.parse_assembly(ir_text)
    except RuntimeError as exc:
        raise _ice(name, ir_text, f"LLVM could not parse the generated IR: {exc}") from exc
    _verify(mod, name, "before optimization", ir_text)
    return mod


def _verify(mod: llvm.ModuleRef, name: str, when: str, text: str | None = None) -> None:
    try:
        mod.verify()
    except RuntimeError as exc:
        raise _ice(name, text or str(mod), f"LLVM verification failed {when}: {exc}") \
            from exc


def _ice(name: str, ir_text: str, what: str) -> InternalCompilerError:
    return InternalCompilerError(f"compiling '{name}' for the CPU: {what}").save_ir(
        ir_text, name, ".ll", "LLVM IR")
