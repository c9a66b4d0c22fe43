"""Core types: which unit of the AI Core a kernel runs on, and its object's arch.

Every kernel has a core type (its class's ``core``): ``vector`` for vector and scalar
kernels (the AIV cores of a dav-c220 SoC, the whole AI Core elsewhere) and ``cube`` for
cube kernels (the AIC cores, dav-c220 only).  bisheng compiles one source for one
``--cce-aicore-arch`` (``dav-c220-vec`` or ``dav-c220-cube``), and the runtime loads an
object with the magic of one core type, so a program holding both kinds is built as one
kernel object per core type (``codegen.AscendProgram.objects``).  MIX kernels (cube and
vector cores of one launch: ``mix_plan``) are a third type, ``mix``: one source holds both
parts (``if ASCEND_IS_AIC`` / ``if ASCEND_IS_AIV``), compiled once per core type by the
toolchain [I: reference 8.2 says a MIX kernel is compiled twice; pyasc builds its object
for ``dav-c220`` without a core suffix and cannot check that without the toolchain].
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from pyasc.backend.ascendc.soc import SoC

VECTOR = "vector"
CUBE = "cube"
MIX = "mix"
CORES = (VECTOR, CUBE, MIX)
"""The core types, in the order a program's objects are listed."""


class HasCore(Protocol):
    """A kernel: its name and its core type."""

    name: str
    core: str


K = TypeVar("K", bound=HasCore)


def core_arch(soc: SoC, core: str) -> str:
    """``--cce-aicore-arch`` of ``core`` kernels on ``soc``."""
    if core in (CUBE, MIX):
        assert soc.cube is not None, f"a cube kernel on {soc.name}, which has no cube facts"
        # dav-c220-cube -> dav-c220: both core types' code (inferred, module docstring)
        return soc.cube.aicore_arch.rsplit("-", 1)[0] if core == MIX else soc.cube.aicore_arch
    assert core == VECTOR, core
    return soc.aicore_arch


def by_core(kernels: Iterable[K]) -> dict[str, list[K]]:
    """``kernels`` grouped by core type (in :data:`CORES` order, each group in order)."""
    groups: dict[str, list[K]] = {core: [] for core in CORES}
    for k in kernels:
        groups[k.core].append(k)
    return {core: ks for core, ks in groups.items() if ks}


def arch_text(soc: SoC, cores: Sequence[str]) -> str:
    """The arch a source names in its header: one arch (the vector one for a source
    without kernels), or each core type's."""
    if len(cores) <= 1:
        return core_arch(soc, cores[0] if cores else VECTOR)
    return ", ".join(f"{core_arch(soc, c)} ({c} kernels)" for c in cores)
