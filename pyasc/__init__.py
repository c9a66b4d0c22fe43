"""pyasc: numpy-style Python operators compiled for Ascend NPUs (AscendC) and CPUs (LLVM)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyasc.frontend import fusion_scope, require, static, supported_numpy
from pyasc.jit import AscendOperator, HybridFunction, fusion_group, grad, hybrid, value_and_grad
from pyasc.jit import tensors as _tensors
from pyasc.runtime import pool_code as _pool_code
from pyasc.runtime import profiler
from pyasc.runtime.acl import DeviceArray, device_array
from pyasc.version import __version__

if TYPE_CHECKING:
    from pyasc.tools.report import Report


def _runtime_code() -> object:
    """The CPU thread pool's object code, built, cached and loaded by the CPU backend.
    The runtime imports no backend; this package, above both, connects them (the backend
    is imported only when the pool is first needed)."""
    from pyasc.backend.llvm.runtime_code import load_runtime_code

    return load_runtime_code()


_pool_code.provide(_runtime_code)


def _torch_adapter() -> object:
    """The adapter of torch tensors as arguments (``pyasc.torch.tensors``), imported
    when the first tensor is seen (torch is then imported already): the jit knows
    tensors only through the interface it defines (``pyasc.jit.tensors``)."""
    from pyasc.torch.tensors import TorchAdapter

    return TorchAdapter()


_tensors.provide("torch", _torch_adapter)  # type: ignore[arg-type]


def doctor(environ: Mapping[str, str] | None = None) -> Report:
    """What this machine can run: a report of every check (Python, numpy, llvmlite,
    the C++ compiler, CANN, AscendCL, the NPU driver), with the fix of each problem;
    ``report.ready("ascend")`` says whether a target works here.  ``pyasc doctor`` on the
    command line prints it (:mod:`pyasc.tools.doctor`)."""
    from pyasc.tools.doctor import doctor as run

    return run(environ)


__all__ = ["AscendOperator", "DeviceArray", "HybridFunction", "__version__", "device_array",
           "doctor", "fusion_group", "fusion_scope", "grad", "hybrid", "profiler", "require",
           "static", "supported_numpy", "value_and_grad"]
