"""The ``ascend`` target: kernel objects per SoC, run through the AscendCL runtime.

``NPUBackend.compile`` needs an Ascend device (asked from AscendCL when its library is
found, else ``/dev/davinci*``) and the kernel objects' builder: bisheng from the CANN
toolkit (``ToolchainMissingError``, E50030, naming what is missing).  It lowers the
program once per SoC (``device_type``, else the SoC the device reports), builds one
object per SoC and core type (``cores``: vector kernels for ``dav-c220-vec``, cube
kernels for ``dav-c220-cube``; cached) and returns an :class:`NPUKernel`.  Calling it
runs the host program (as ascend-sim does) with a launcher that loads each object of
the SoC ``aclrtGetSocName`` reports once per process, with the binary magic of its
core type (:data:`MAGICS`), looks each kernel up in the object of its core type and
launches through ``pyasc.runtime.acl``; a device whose SoC was not compiled for is
E50031.  ``pyasc.device_array`` arguments go to the kernels without copies when the host
program only hands them to kernels (``host_device``).

``PYASC_ASCEND_OBJECTS=ascend-sim`` is a test knob: the objects are the libraries the
ascend-sim compiler builds (no bisheng needed), which only the stand-in AscendCL
library of ``tests/acl_standin`` can load.  Nothing here has run on a real NPU.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyasc.backend.ascendc.bisheng import (
    SET_ENV_HINT,
    Toolchain,
    build_object,
    cached_object,
    compile_cached,
    find_toolchain,
)
from pyasc.backend.ascendc.codegen import AscendProgram, KernelObject, lower_variants
from pyasc.backend.ascendc.cores import CUBE, MIX, VECTOR
from pyasc.backend.ascendc.dumps import dump_bisheng, dump_variants
from pyasc.backend.ascendc.host_device import (
    DeviceHostRunner,
    DevicePlan,
    has_device_arrays,
    plan_device_args,
)
from pyasc.backend.ascendc.host_runner import HostRunner
from pyasc.backend.ascendc.signature import kernel_signatures
from pyasc.backend.ascendc.sim_backend import library_object
from pyasc.backend.ascendc.soc import SoC, get_soc, socs_for
from pyasc.backend.base import Program
from pyasc.errors import DeviceError, InvalidOptionError, ToolchainMissingError
from pyasc.runtime import acl
from pyasc.runtime.disk_cache import DiskCache

OBJECTS_VARIABLE = "PYASC_ASCEND_OBJECTS"
OBJECT_BUILDERS = ("bisheng", "ascend-sim")

MAGICS: dict[str, int] = {
    VECTOR: acl.BinaryMagic.VECTOR_CORE,   # AIV_ONLY: without it a 910B assumes cube
    CUBE: acl.BinaryMagic.CUBE_CORE,
    MIX: acl.BinaryMagic.AICORE,          # mixed (cube + vector): MIX kernels (mix_plan)
}
"""Core type -> the ``ACL_RT_BINARY_LOAD_OPT_MAGIC`` its objects are loaded with
(``ascendc-reference.md`` section 2.3)."""


def object_builder(environ: Mapping[str, str] | None = None) -> str:
    """Who builds the kernel objects: ``bisheng`` (the default) or, for tests with the
    stand-in AscendCL library, ``ascend-sim`` (``PYASC_ASCEND_OBJECTS``)."""
    env = os.environ if environ is None else environ
    value = env.get(OBJECTS_VARIABLE, "").strip() or "bisheng"
    if value not in OBJECT_BUILDERS:
        raise InvalidOptionError(f"{OBJECTS_VARIABLE}={value!r} is not an object builder",
                                 hint=f"use one of {', '.join(OBJECT_BUILDERS)} (ascend-sim "
                                      "objects load only in the test stand-in library)")
    return value


def device_present(dev: Path = Path("/dev")) -> bool:
    """An Ascend device: AscendCL's ``aclrtGetDeviceCount`` when its library is found,
    else whether a device node ``/dev/davinci<N>`` exists."""
    answer = acl.device_available()
    return answer if answer is not None else any(dev.glob("davinci[0-9]*"))


def check_device(dev: Path = Path("/dev")) -> None:
    """E50030 naming what is missing when kernels cannot run here: the AscendCL library
    (how it was looked for) or a device (what AscendCL said)."""
    lookup = acl.find_library()
    if lookup.path is None:
        nodes = "an NPU device node exists" if any(dev.glob("davinci[0-9]*")) else \
            "and there is no /dev/davinci* device"
        raise ToolchainMissingError(f"the AscendCL library is missing ({nodes}): "
                                    f"{lookup.reason}", hint=SET_ENV_HINT)
    found = acl.probe()
    if found.error is not None or not found.device_count:
        raise ToolchainMissingError(f"AscendCL ({lookup.path}) reports no usable Ascend "
                                    f"device: {found.error or '0 devices'}",
                                    hint="check the driver with npu-smi info, or use "
                                         "target='ascend-sim'")


@dataclass
class NPUKernel:
    """Compiled kernels for each SoC (``objects[soc][core] = object bytes``,
    ``signatures[soc][kernel] = parameter codes``) and the host program of each SoC."""

    program: Program
    ascend: dict[str, AscendProgram]
    objects: dict[str, dict[str, bytes]] = field(default_factory=dict)
    signatures: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    _plans: dict[str, DevicePlan] = field(default_factory=dict, repr=False)
    # (kernel name, block_dim) of each launch of the last call, for the profiler
    last_kernels: list[tuple[str, int]] = field(default_factory=list, repr=False)

    def variant(self, soc_name: str) -> AscendProgram:
        """The program compiled for ``soc_name`` (E50031 when there is none)."""
        ap = self.ascend.get(soc_name)
        if ap is None:
            raise DeviceError(f"the device is an {soc_name}, but this function was compiled "
                              f"for {', '.join(self.ascend)} only",
                              hint=f"add '{soc_name}' to device_type=[...], or leave "
                                   "device_type out to compile for the device present")
        return ap

    def __call__(self, flat_args: Sequence[Any]) -> list[Any]:
        ctx = acl.context()
        ap = self.variant(ctx.soc_name)
        launcher = functools.partial(self._launch, ctx, ap.soc.name)
        if has_device_arrays(flat_args):  # pyasc.device_array arguments (host_device.py)
            plan = self._plans.get(ap.soc.name)
            if plan is None:
                plan = self._plans[ap.soc.name] = plan_device_args(ap.host, ap.entry)
            runner: HostRunner = DeviceHostRunner(ap.host, launcher, plan)
            call = functools.partial(runner.call_staged, ap.entry, flat_args)
        else:
            runner = HostRunner(ap.host, launcher)
            call = functools.partial(runner.call, ap.entry, *flat_args)
        try:
            return call()
        finally:
            self.last_kernels = runner.launches

    def _launch(self, ctx: acl.DeviceContext, soc: str, kernel: str, block_dim: int,
                args: Sequence[Any], writes: frozenset[int]) -> dict[str, int]:
        core = self.ascend[soc].cores[kernel]
        binary = ctx.binary(self.objects[soc][core], MAGICS[core])
        return acl.launch(ctx, binary, kernel, block_dim, self.signatures[soc][kernel], args,
                          writes)


class NPUBackend:
    """The ``ascend`` target (see the module docstring)."""

    name = "ascend"

    def __init__(self, toolchain: Toolchain | None = None, cache: DiskCache | None = None,
                 require_device: bool = True) -> None:
        self._toolchain, self._cache, self._require_device = toolchain, cache, require_device

    def compile(self, program: Program) -> NPUKernel:
        listed = program.options.get("device_type")
        # every SoC of device_type must fit before any toolchain is looked for
        variants = lower_variants(program, socs_for(listed)) if listed \
            else None  # type: ignore[arg-type]
        builder = object_builder()
        tc = (self._toolchain or find_toolchain()) if builder == "bisheng" else None
        if self._require_device:
            check_device()
        kernel = NPUKernel(program, {})
        use_cache = program.options.get("cache", True) is not False
        if variants is None:  # the device's own SoC
            variants = lower_variants(program, self._socs(program))
        dump_variants(program, "ascend", variants)
        for ap in variants:
            kernel.ascend[ap.soc.name] = ap
            kernel.signatures[ap.soc.name] = kernel_signatures(ap.source)
            kernel.objects[ap.soc.name] = {obj.core: self._object(tc, ap, obj, use_cache,
                                                                  program)
                                           for obj in ap.objects}
        return kernel

    def _socs(self, program: Program) -> list[SoC]:
        """``device_type``'s SoCs, else the device's own (the default SoC without one)."""
        device_type = program.options.get("device_type")
        if device_type or not self._require_device:
            return socs_for(device_type)  # type: ignore[arg-type]
        name = acl.context().soc_name
        try:
            return [get_soc(name)]
        except InvalidOptionError:
            raise DeviceError(f"the device reports SoC {name!r}, which pyasc has no "
                              "description of", hint="pass device_type=[...] naming a "
                              "compatible SoC") from None

    def _object(self, tc: Toolchain | None, ap: AscendProgram, obj: KernelObject,
                use_cache: bool, program: Program) -> bytes:
        """The kernel object of ``obj`` (the kernels of one core type of ``ap``)."""
        if tc is None:  # PYASC_ASCEND_OBJECTS=ascend-sim
            return library_object(ap, obj, use_cache)
        found = cached_object(tc, obj.source, ap.soc.name, obj.arch, self._cache) \
            if use_cache else None
        dump_bisheng(program, tc, ap, obj, ran=found is None)
        if found is not None:
            return found
        if use_cache:
            return compile_cached(tc, obj.source, obj.filename, ap.soc.name, obj.arch,
                                  obj.files, self._cache)
        return build_object(tc, obj.source, obj.filename, obj.arch, obj.files)
