"""pyasc: numpy-style Python operators compiled for Ascend NPUs (AscendC) and CPUs (LLVM)."""

from pyasc.frontend import fusion_scope, supported_numpy
from pyasc.jit import HybridFunction, fusion_group, hybrid
from pyasc.version import __version__

__all__ = ["HybridFunction", "__version__", "fusion_group", "fusion_scope", "hybrid",
           "supported_numpy"]
