"""ascend-sim: pyasc's host model of the AscendC API and its ctypes runner.

The C++ headers in this directory (``kernel_operator.h`` and the ``sim_*.h`` it includes)
model the AscendC subset the code generator emits; :mod:`.runner` compiles generated kernels
against them with the host C++ compiler and runs them. See README.md here for the contract.
"""

from pyasc.backend.ascendc.sim.runner import (
    SIM_DIR,
    SimCompileError,
    SimConfig,
    SimLibrary,
    SimViolationError,
    compile_kernels,
)
from pyasc.runtime.bf16 import bf16_bits_to_float32, float32_to_bf16_bits

__all__ = [
    "SIM_DIR",
    "SimCompileError",
    "SimConfig",
    "SimLibrary",
    "SimViolationError",
    "bf16_bits_to_float32",
    "compile_kernels",
    "float32_to_bf16_bits",
]
