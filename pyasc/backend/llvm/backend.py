"""``LLVMBackend``: Program -> loop-level IR -> LLVM IR -> object code -> callable kernel.

The disk cache (``pyasc.runtime.disk_cache``) is keyed by :func:`disk_key`: the
program's ``cache_key`` (the frontend's digest of the source, captured values and
signature, computed without building IR), the entry name, the options, pyasc's version
and source digest, the ABI version, the compiler (llvmlite and its LLVM library) and the
host CPU model and features (``host``).  ``compile`` looks the key up first: a hit
loads the object (nothing is lowered or compiled); a miss lowers a clone of the module
with ``pyasc.ir.passes.LOOP_PIPELINE`` (lower-to-loops, expand-math, layout, memplan,
canonicalize/cse/dce), generates LLVM IR, optimizes it
for the host, emits an object file, stores it with the ABI and the program's
``call_data`` and loads it.  ``load`` finds a kernel from the key parts alone, so the
frontend can skip building the IR; ``Program.options["cache"] = False`` skips the cache.

Object code is loaded by ``pyasc.runtime.objload`` (no LLVM involved), or by MCJIT
(``jit.LoadedCode``) where that loader does not apply.  The IR, the passes, the code
generator and ``llvmlite.binding`` are imported only when something is compiled, so a
disk-cache hit in a fresh process imports none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyasc.backend.base import Program
from pyasc.backend.llvm.host import compiler_identity, cpu_identity
from pyasc.ir.dumps import dumping
from pyasc.ir.stage_dumps import DumpSite
from pyasc.runtime import objload
from pyasc.runtime.abi import ABI_VERSION, KernelABI
from pyasc.runtime.cpu import CPUKernel
from pyasc.runtime.disk_cache import DiskCache, package_digest

if TYPE_CHECKING:  # pragma: no cover
    from pyasc.ir.ops.func import ModuleOp

DISABLE_VARIABLE = "PYASC_DISABLE_PASSES"
"""Passes named there are skipped (``pyasc.ir.passes.run_pipeline``); the disk-cache key
includes the list, so code built without a pass is never loaded as code built with it."""

_KEY_OPTIONS_IGNORED = ("cache",)


@dataclass
class Build:
    """The artefacts of one full compilation."""

    loop_ir: str
    llvm_ir: str
    obj: bytes
    abi: KernelABI


STAGES = ("tensor/ (the tensor IR after each pass)", "cpu/loops/ (the loop IR after each pass)",
          "cpu/kernel-unoptimized.ll, cpu/kernel.ll (LLVM IR)", "cpu/kernel.s (assembly)")
"""What ``PYASC_DUMP_PATH`` gets from a compilation on this target (``NOT-DUMPED.txt``
lists those a disk-cache hit did not produce)."""


def lower_to_loops(program: Program) -> ModuleOp:
    """A loop-level clone of the program's module (the original is left untouched);
    ``expand-math`` uses FMA in its polynomials when the host has it, and the matmul
    sizes its register tile for the host's vectors."""
    from pyasc.backend.llvm.jit import host_has_fma, host_vector_bits
    from pyasc.ir.ops.func import ModuleOp
    from pyasc.ir.passes import LOOP_PIPELINE, run_pipeline

    module = program.module.clone()
    assert isinstance(module, ModuleOp)
    options = {**program.options, "fma": host_has_fma(), "vector_bits": host_vector_bits()}
    return run_pipeline(module, LOOP_PIPELINE, options,
                        (program.entry, program.cache_key, "loops"),
                        program.dump_site().stage_dir("cpu/loops"))


def build(program: Program) -> Build:
    """Lower, generate and compile ``program`` (no cache involved)."""
    from pyasc.backend.llvm import jit
    from pyasc.backend.llvm.generate import generate

    module = lower_to_loops(program)
    text, abi = generate(module, program.entry, program.result_params,
                         fastmath=bool(program.options.get("fastmath", False)),
                         native=program.call_data.get("native"),
                         vector_bits=jit.host_vector_bits())
    code = jit.compile_ir(text, program.entry)
    b = Build(str(module), code.llvm_ir, code.obj, abi)
    site = program.dump_site()
    if site.folder() is not None:  # PYASC_DUMP_PATH (the loop IR was dumped pass by pass)
        site.write("cpu/kernel-unoptimized.ll", text)
        site.write("cpu/kernel.ll", b.llvm_ir)
        site.write("cpu/kernel.s", jit.assembly(b.llvm_ir, program.entry))
        site.write("cpu/kernel.json", _kernel_json(abi, program.call_data))
    return b


def _kernel_json(abi: KernelABI, call_data: dict[str, Any]) -> str:
    return json.dumps({"abi": abi.to_json(), "call_data": call_data}, indent=1,
                      sort_keys=True, default=repr)


def disk_key(program_key: str, entry: str, options: dict[str, Any]) -> str:
    """The disk-cache key of a program on this machine with this compiler.

    No digest of the IR: ``program_key`` already covers everything the IR is made from,
    and the key must be computable before any IR exists."""
    from pyasc.version import __version__

    kept = {k: v for k, v in options.items() if k not in _KEY_OPTIONS_IGNORED}
    parts = {
        "program": program_key, "entry": entry, "pyasc": __version__,
        "source": package_digest(), "abi": ABI_VERSION, "cpu": cpu_identity(),
        "options": json.dumps(kept, sort_keys=True, default=repr), **compiler_identity(),
        "disabled": _disabled_passes(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _disabled_passes() -> list[str]:
    """The passes ``PYASC_DISABLE_PASSES`` disables, as ``run_pipeline`` reads them (a
    bad name is reported and ignored there: not in the key, as it changes nothing).  The
    passes are imported only when the variable is set: a cache hit needs none of them."""
    text = os.environ.get(DISABLE_VARIABLE, "")
    if not text.strip():
        return []
    from pyasc.ir.passes import parse_disabled

    return sorted(parse_disabled(text))


def cache_key(program: Program) -> str:
    """The disk-cache key of ``program`` (see :func:`disk_key`)."""
    return disk_key(program.cache_key, program.entry, program.options)


class LLVMKernel(CPUKernel):
    """A compiled CPU kernel with inspection: ``.loop_ir``, ``.llvm_ir``, ``.asm``.

    A kernel loaded by key (``LLVMBackend.load``) has no program until the frontend
    attaches one (:meth:`attach`) for inspection."""

    def __init__(self, program: Program | None, abi: KernelABI, code: Any,
                 build_: Build | None = None, from_cache: bool = False,
                 call_data: dict[str, Any] | None = None) -> None:
        super().__init__(abi, code.addresses, keepalive=code)
        self.program = program
        self.from_cache = from_cache
        self.call_data = call_data if call_data is not None else \
            (program.call_data if program is not None else {})
        self._build = build_
        self._asm: str | None = None

    def fits(self, input_types: Sequence[Any]) -> bool:
        """Whether this kernel takes parameters of ``input_types`` (see :func:`abi_fits`)."""
        return abi_fits(self.abi, input_types)

    def attach(self, program: Program) -> None:
        """Give a kernel loaded by key the program it was compiled from."""
        if self.program is None:
            self.program = program

    def _artefacts(self) -> Build:
        if self._build is None:  # loaded from the disk cache: rebuild on demand
            if self.program is None:
                raise AttributeError("a kernel loaded by key has no program attached")
            self._build = build(self.program)
        return self._build

    @property
    def loop_ir(self) -> str:
        """The loop-level IR the kernel was generated from."""
        return self._artefacts().loop_ir

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR."""
        return self._artefacts().llvm_ir

    @property
    def asm(self) -> str:
        """Host assembly of the optimized module."""
        if self._asm is None:
            from pyasc.backend.llvm import jit

            self._asm = jit.assembly(self.llvm_ir, self._entry_name())
        return self._asm

    def dump_loaded(self, site: DumpSite, ir_built: bool) -> None:
        """``PYASC_DUMP_PATH`` for a kernel loaded from the disk cache: its ABI and call
        data, and ``NOT-DUMPED.txt`` naming the stages it never produced (``ir_built``:
        the tensor IR was built, and dumped, in this process)."""
        if site.folder() is None:
            return
        site.write("cpu/kernel.json", _kernel_json(self.abi, self.call_data))
        site.not_dumped("cpu", list(STAGES[1:] if ir_built else STAGES),
                        "the kernel was loaded from the disk cache, so it was not compiled")

    def _entry_name(self) -> str:
        return self.program.entry if self.program is not None else self.abi.symbol


def _symbols(abi: KernelABI) -> list[str]:
    return [abi.symbol, abi.py_symbol] + ([abi.native.symbol] if abi.native else [])


def load_code(obj: bytes, symbols: list[str], name: str, fresh: bool = False,
              runtime: bool = True) -> Any:
    """Machine code of ``obj`` in memory (``.addresses``): the object loader, or MCJIT
    for objects it does not handle.  A malformed object raises ``ObjectFormatError``,
    except one just compiled (``fresh``): MCJIT then gets to judge it too.  ``runtime``:
    resolve pyasc's runtime functions for MCJIT (not for the thread pool itself)."""
    try:
        return objload.LoadedObject(obj, symbols)
    except objload.ObjectFormatError:
        if not fresh:
            raise
    except objload.UnsupportedObject:
        pass
    from pyasc.backend.llvm import jit

    return jit.LoadedCode(obj, symbols, name, runtime=runtime)


class LLVMBackend:
    """The ``cpu`` target: native code for the host through llvmlite."""

    name = "cpu"

    def __init__(self, cache: DiskCache | None = None) -> None:
        self._cache = cache

    def _disk(self) -> DiskCache:
        return self._cache if self._cache is not None else DiskCache()

    def compile(self, program: Program) -> LLVMKernel:
        """Compile (or load from the disk cache) one specialization."""
        use_cache = program.options.get("cache", True) is not False
        cache = self._disk()
        key = cache_key(program) if use_cache else ""
        if use_cache and not dumping():  # dumping the IR: compile, so the passes dump
            kernel = self._load_cached(cache, key, program.entry, program)
            if kernel is not None:
                kernel.dump_loaded(program.dump_site(), True)
                return kernel
        b = build(program)
        code = load_code(b.obj, _symbols(b.abi), program.entry, fresh=True)
        if use_cache:
            cache.store(key, _manifest(program.entry, b.abi, program.call_data), b.obj)
        return LLVMKernel(program, b.abi, code, b)

    def load(self, program_key: str, entry: str, options: dict[str, Any]
             ) -> LLVMKernel | None:
        """The kernel stored for a program with this key, entry and options, if any."""
        if options.get("cache", True) is False or dumping():
            return None
        return self._load_cached(self._disk(), disk_key(program_key, entry, options), entry)

    @staticmethod
    def _load_cached(cache: DiskCache, key: str, entry: str,
                     program: Program | None = None) -> LLVMKernel | None:
        found = cache.load(key)  # sealed: manifest and object as they were stored
        if found is None:
            return None
        try:
            abi = KernelABI.from_json(found.manifest["abi"])
            call_data = found.manifest.get("call_data", {})
            if not isinstance(call_data, dict) or found.manifest.get("entry") != entry or \
                    program is not None and (_json(call_data) != _json(program.call_data)
                                             or not abi_fits(abi, _input_types(program))):
                return None  # (the program is authoritative: rebuild and rewrite)
            code = load_code(found.obj, _symbols(abi), entry)
        except Exception:  # any broken entry is ignored and rebuilt
            return None
        return LLVMKernel(program, abi, code, from_cache=True, call_data=call_data)


def _input_types(program: Program) -> list[Any]:
    return list(program.module.get(program.entry).function_type.inputs)


def abi_fits(abi: KernelABI, input_types: Sequence[Any]) -> bool:
    """Whether the parameters of a stored ABI are those of a specialization whose entry
    takes ``input_types`` (IR types, in order): kind, dtype, static dims, layout and
    slots, all recomputed here rather than believed from the disk."""
    from pyasc.ir.types import MemRefType

    slot, expected = 0, []
    for t in input_types:
        if isinstance(t, MemRefType):
            strides = None if t.strides is None else tuple(t.strides)
            expected.append(("array", t.element.name, slot, tuple(t.shape), strides))
            slot += 1 + 2 * t.rank
        else:
            expected.append(("scalar", t.name, slot, (), None))
            slot += 1
    found = [(p.kind, p.dtype, p.slot, p.shape, p.strides) for p in abi.params]
    return found == expected and abi.arg_slots == slot


def _json(data: object) -> str:
    return json.dumps(data, sort_keys=True, default=repr)


def _manifest(entry: str, abi: KernelABI, call_data: dict[str, Any]) -> dict[str, Any]:
    from pyasc.backend.llvm import jit
    from pyasc.version import __version__

    cpu, _ = jit.host_cpu()
    return {"entry": entry, "abi": abi.to_json(), "call_data": call_data, "cpu": cpu,
            "versions": {"pyasc": __version__, **jit.versions()}}
