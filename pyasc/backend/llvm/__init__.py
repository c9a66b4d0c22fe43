"""The ``cpu`` backend: loop-level IR -> LLVM IR (llvmlite) -> host machine code.

Modules: ``plan`` (calling-convention plan of an entry), ``codegen`` (emitter
infrastructure), ``emit_arith``/``emit_math``/``emit_mem``/``emit_control`` (the op
tables), ``entry`` (native entry points), ``generate`` (the driver), ``jit`` (O3 +
object code + loading), ``backend`` (``LLVMBackend`` with the disk cache) and
``runtime_code`` (the runtime's thread-pool object, which ``pyasc/__init__.py`` makes
the loader of ``pyasc.runtime.threads``).
"""

from pyasc.backend.llvm.backend import LLVMBackend, LLVMKernel, build, cache_key

__all__ = ["LLVMBackend", "LLVMKernel", "build", "cache_key"]
