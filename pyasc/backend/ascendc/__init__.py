"""The AscendC backend: fused groups become tiled, double-buffered AscendC kernels.

Targets: ``ascend-sim`` (:class:`SimBackend`, the generated source compiled against the
host model in ``sim/`` and run here) and ``ascend`` (:class:`NPUBackend`, bisheng and
the NPU).  :func:`generate_ascendc` returns the source of a program.  See
``docs/ascendc-backend.md``.
"""

from pyasc.backend.ascendc.codegen import (
    AscendProgram,
    PyascPerformanceWarning,
    generate_ascendc,
    lower_program,
)
from pyasc.backend.ascendc.npu_backend import NPUBackend, NPUKernel
from pyasc.backend.ascendc.sim_backend import SimBackend, SimKernel

__all__ = ["AscendProgram", "NPUBackend", "NPUKernel", "PyascPerformanceWarning",
           "SimBackend", "SimKernel", "generate_ascendc", "lower_program"]
