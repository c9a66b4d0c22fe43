"""pyasc: numpy-style Python operators compiled for Ascend NPUs (AscendC) and CPUs (LLVM)."""

from pyasc.frontend import fusion_scope, supported_numpy
from pyasc.jit import HybridFunction, fusion_group, hybrid
from pyasc.runtime import pool_code as _pool_code
from pyasc.version import __version__


def _runtime_code() -> object:
    """The CPU thread pool's object code, built, cached and loaded by the CPU backend.
    The runtime imports no backend; this package, above both, connects them (the backend
    is imported only when the pool is first needed)."""
    from pyasc.backend.llvm.runtime_code import load_runtime_code

    return load_runtime_code()


_pool_code.provide(_runtime_code)

__all__ = ["HybridFunction", "__version__", "fusion_group", "fusion_scope", "hybrid",
           "supported_numpy"]
