"""pyasc: numpy-style Python operators compiled for Ascend NPUs (AscendC) and CPUs (LLVM)."""

__version__ = "0.1.0"
