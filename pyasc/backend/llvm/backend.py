"""``LLVMBackend``: Program -> loop-level IR -> LLVM IR -> object code -> callable kernel.

``compile`` first looks the program up in the disk cache (``pyasc.runtime.disk_cache``)
under a key made of ``Program.cache_key``, a digest of the IR, pyasc's own source
digest, the llvmlite and LLVM versions, the host CPU name and features and the options.
A hit loads the object (nothing is lowered or compiled); a miss lowers a clone of the
module with ``lower-to-loops`` (then canonicalize/cse/dce), generates LLVM IR, optimizes
it for the host, emits an object file, stores it and loads it.
``Program.options["cache"] = False`` skips the cache.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pyasc import __version__
from pyasc.backend.base import Program
from pyasc.backend.llvm import jit
from pyasc.backend.llvm.generate import generate
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes import PASS_REGISTRY, PassContext, PassManager
from pyasc.runtime.abi import ABI_VERSION, KernelABI
from pyasc.runtime.cpu import CPUKernel
from pyasc.runtime.disk_cache import DiskCache, package_digest

LOWERING_PIPELINE = ("lower-to-loops", "canonicalize", "cse", "dce")
"""Passes run on a clone of the program's module before code generation (those that are
registered; ``lower-to-loops`` leaves loop-level input unchanged)."""

_KEY_OPTIONS_IGNORED = ("cache",)


@dataclass
class Build:
    """The artefacts of one full compilation."""

    loop_ir: str
    llvm_ir: str
    obj: bytes
    abi: KernelABI


def lower_to_loops(program: Program) -> ModuleOp:
    """A loop-level clone of the program's module (the original is left untouched)."""
    module = program.module.clone()
    assert isinstance(module, ModuleOp)
    pipeline = [p for p in LOWERING_PIPELINE if p in PASS_REGISTRY]
    PassManager(pipeline).run(module, PassContext(options=dict(program.options)))
    return module


def build(program: Program) -> Build:
    """Lower, generate and compile ``program`` (no cache involved)."""
    module = lower_to_loops(program)
    text, abi = generate(module, program.entry, program.result_params,
                         fastmath=bool(program.options.get("fastmath", False)))
    code = jit.compile_ir(text, program.entry)
    return Build(str(module), code.llvm_ir, code.obj, abi)


def cache_key(program: Program) -> str:
    """The disk-cache key of ``program`` on this machine with this compiler.

    Besides ``Program.cache_key`` it covers the IR text itself: the IR is exactly what
    gets compiled, so a value the frontend folded into it (a closure variable, a global)
    can never make two different kernels share an entry.
    """
    cpu, features = jit.host_cpu()
    options = {k: v for k, v in program.options.items() if k not in _KEY_OPTIONS_IGNORED}
    parts = {
        "program": program.cache_key, "entry": program.entry,
        "ir": hashlib.sha256(str(program.module).encode()).hexdigest(),
        "result_params": list(program.result_params), "pyasc": __version__,
        "source": package_digest(), "abi": ABI_VERSION, "cpu": cpu, "features": features,
        "options": json.dumps(options, sort_keys=True, default=repr), **jit.versions(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class LLVMKernel(CPUKernel):
    """A compiled CPU kernel with inspection: ``.loop_ir``, ``.llvm_ir``, ``.asm``."""

    def __init__(self, program: Program, abi: KernelABI, code: jit.LoadedCode,
                 build_: Build | None = None, from_cache: bool = False) -> None:
        super().__init__(abi, code.addresses, keepalive=code)
        self.program = program
        self.from_cache = from_cache
        self._build = build_
        self._asm: str | None = None

    def _artefacts(self) -> Build:
        if self._build is None:  # loaded from the disk cache: rebuild on demand
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
            self._asm = jit.assembly(self.llvm_ir, self.program.entry)
        return self._asm


class LLVMBackend:
    """The ``cpu`` target: native code for the host through llvmlite."""

    name = "cpu"

    def __init__(self, cache: DiskCache | None = None) -> None:
        self._cache = cache

    def compile(self, program: Program) -> LLVMKernel:
        """Compile (or load from the disk cache) one specialization."""
        use_cache = program.options.get("cache", True) is not False
        cache = self._cache if self._cache is not None else DiskCache()
        key = cache_key(program) if use_cache else ""
        if use_cache:
            kernel = self._load_cached(program, cache, key)
            if kernel is not None:
                return kernel
        b = build(program)
        code = jit.LoadedCode(b.obj, [b.abi.symbol, b.abi.py_symbol], program.entry)
        if use_cache:
            cache.store(key, _manifest(program, b.abi), b.obj)
        return LLVMKernel(program, b.abi, code, b)

    @staticmethod
    def _load_cached(program: Program, cache: DiskCache, key: str) -> LLVMKernel | None:
        entry = cache.load(key)
        if entry is None:
            return None
        try:
            abi = KernelABI.from_json(entry.manifest["abi"])
            code = jit.LoadedCode(entry.obj, [abi.symbol, abi.py_symbol], program.entry)
        except Exception:  # any broken entry is ignored and rebuilt
            return None
        return LLVMKernel(program, abi, code, from_cache=True)


def _manifest(program: Program, abi: KernelABI) -> dict[str, Any]:
    cpu, _ = jit.host_cpu()
    return {"entry": program.entry, "abi": abi.to_json(), "cpu": cpu,
            "versions": {"pyasc": __version__, **jit.versions()}}
