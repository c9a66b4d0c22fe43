"""The ``ascend`` target: kernel objects from bisheng, one per requested SoC.

``NPUBackend.compile`` needs the CANN toolkit and an Ascend device; without them it
raises ``ToolchainMissingError`` (E50030) naming what is missing.  With both it lowers
the program, compiles the kernels with bisheng (cached) and returns an
:class:`NPUKernel` holding the objects and the host program.  Running it needs the
AscendCL launch layer (a later issue): calling the kernel raises ``DeviceError`` saying
so.  Nothing here has been run on an NPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyasc.backend.ascendc.bisheng import (
    SET_ENV_HINT,
    Toolchain,
    build_object,
    compile_cached,
    find_toolchain,
)
from pyasc.backend.ascendc.codegen import AscendProgram, lower_variants
from pyasc.backend.ascendc.soc import socs_for
from pyasc.backend.base import Program
from pyasc.errors import DeviceError, ToolchainMissingError
from pyasc.runtime.disk_cache import DiskCache


def device_present(dev: Path = Path("/dev")) -> bool:
    """True if an Ascend device node (``/dev/davinci<N>``) exists."""
    return any(dev.glob("davinci[0-9]*"))


@dataclass
class NPUKernel:
    """Compiled kernels for each SoC (``objects[soc] = ELF bytes``) and the host program."""

    program: Program
    ascend: dict[str, AscendProgram]
    objects: dict[str, bytes] = field(default_factory=dict)

    def __call__(self, flat_args: Sequence[Any]) -> list[Any]:
        raise DeviceError("launching on the NPU needs the AscendCL runtime layer, which is "
                          "not built yet; the kernel objects are compiled (see .objects)",
                          hint="use target='ascend-sim' to run the generated AscendC here")


class NPUBackend:
    """The ``ascend`` target (see the module docstring)."""

    name = "ascend"

    def __init__(self, toolchain: Toolchain | None = None, cache: DiskCache | None = None,
                 require_device: bool = True) -> None:
        self._toolchain, self._cache, self._require_device = toolchain, cache, require_device

    def compile(self, program: Program) -> NPUKernel:
        # every SoC of device_type must fit before any toolchain is looked for
        variants = lower_variants(program, socs_for(program.options.get("device_type")))
        tc = self._toolchain or find_toolchain()
        if self._require_device and not device_present():
            raise ToolchainMissingError("no Ascend device: /dev/davinci* does not exist",
                                        hint="run on a machine with an NPU, or use "
                                             f"target='ascend-sim'; {SET_ENV_HINT}")
        kernel = NPUKernel(program, {})
        use_cache = program.options.get("cache", True) is not False
        for ap in variants:
            soc = ap.soc
            kernel.ascend[soc.name] = ap
            if use_cache:
                obj = compile_cached(tc, ap.source, ap.filename, soc.name, ap.arch,
                                     ap.files, self._cache)
            else:
                obj = build_object(tc, ap.source, ap.filename, ap.arch, ap.files)
            kernel.objects[soc.name] = obj
        return kernel
