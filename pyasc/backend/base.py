"""The contract between the frontend and the backends.

The frontend turns one call signature of a ``@hybrid`` function into a :class:`Program`:
an IR module (after the default pass pipeline) whose entry function takes the call's
arguments flattened (arrays as memrefs, Python scalars as scalars, tuples expanded) and
returns its results flattened.  A backend compiles a ``Program`` into a
:class:`CompiledKernel`, which is called with the flat argument list and returns the flat
result list.  Backends are looked up by target name in :data:`BACKENDS` and imported lazily,
so importing pyasc never pulls in llvmlite or a C++ compiler.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover - the IR is imported only by code that builds it
    from pyasc.ir.ops.func import ModuleOp
    from pyasc.ir.stage_dumps import DumpSite


@dataclass
class Program:
    """One specialization, ready for a backend.

    ``cache_key`` covers the source of the function and of every ``@hybrid`` callee, the
    signature and the options; a backend extends it with its own versions (compiler,
    CPU features, SoC) before using it as a disk-cache key.  ``result_params[j]`` is the
    index of the flat parameter that result ``j`` returns unchanged (the frontend hands
    back the caller's own object), or ``None``.  ``call_data`` is plain JSON data the
    frontend needs to call the kernel without rebuilding the IR (result template, native
    entry request); a backend with a disk cache stores it next to the code and hands it
    back with a kernel it loads by key (``load``, see :class:`Backend`).  ``signature``
    is the readable argument types (``"float32[4, 8]; float"``) naming its dump folder.
    """

    module: ModuleOp
    entry: str
    cache_key: str
    options: dict[str, Any] = field(default_factory=dict)
    result_params: tuple[int | None, ...] = ()
    source_file: str | None = None
    call_data: dict[str, Any] = field(default_factory=dict)
    signature: str = ""

    def dump_site(self) -> DumpSite:
        """Where ``PYASC_DUMP_PATH`` puts this specialization's stages."""
        from pyasc.ir.stage_dumps import DumpSite  # (``import pyasc`` imports no IR)

        return DumpSite(self.entry, self.cache_key, self.signature)


class CompiledKernel(Protocol):
    """A compiled specialization: ``kernel(flat_args) -> flat_results``."""

    def __call__(self, flat_args: Sequence[Any]) -> list[Any]: ...


class Backend(Protocol):
    """A code generator for one target.

    A backend with a disk cache may also offer ``load(cache_key, entry, options)``: the
    kernel a previous ``compile`` of a program with that ``cache_key``, entry and
    options stored, with the program's ``call_data`` as ``kernel.call_data``, or
    ``None``.  The frontend then calls it without building any IR.
    """

    name: str

    def compile(self, program: Program) -> CompiledKernel: ...


BACKENDS: dict[str, str] = {
    "cpu": "pyasc.backend.llvm:LLVMBackend",
    "ascend-sim": "pyasc.backend.ascendc:SimBackend",
    "ascend": "pyasc.backend.ascendc:NPUBackend",
}


def get_backend(target: str) -> Backend:
    """Instantiate the backend registered for ``target`` (imported on first use)."""
    try:
        spec = BACKENDS[target]
    except KeyError:
        raise KeyError(f"unknown target '{target}'; known: {sorted(BACKENDS)}") from None
    module_name, cls_name = spec.split(":")
    return getattr(importlib.import_module(module_name), cls_name)()
