"""pyasc: numpy-style Python operators compiled for Ascend NPUs (AscendC) and CPUs (LLVM)."""

__version__ = "0.1.0"

from pyasc.frontend import (  # noqa: E402 - __version__ first: the frontend reads it
    HybridFunction,
    fusion_group,
    fusion_scope,
    hybrid,
    supported_numpy,
)

__all__ = ["HybridFunction", "__version__", "fusion_group", "fusion_scope", "hybrid",
           "supported_numpy"]
