"""The ``ascend-sim`` target: generated AscendC run against pyasc's host model of the API.

``SimBackend.compile`` lowers the program (kernels + host program), compiles the source
with the host C++ compiler against ``sim/`` and returns a :class:`SimKernel`: calling it
interprets the host program, launching each kernel in the compiled library.  Compiled
libraries are cached in memory (per process) and on disk (``pyasc.runtime.disk_cache``,
backend directory ``ascend-sim``) under a key made of the source, the sim headers, the
compiler's version and the SoC configuration, since each C++ build costs seconds.
``kernel.last_counters`` holds the sim counters of the last call (GM <-> UB bytes for
the profiler), summed over its launches; ``kernel.last_launches`` has them per launch and
``kernel.last_kernels`` the (kernel name, block_dim) of each launch (of the last call in
any thread: with concurrent calls, read them from the calling thread right after its
call only if no other thread calls the kernel meanwhile).

Threads: a library is built once per key and process: threads asking for one being
built wait for it (``pyasc.runtime.flight``), other processes build their own and
store it atomically (``DiskCache``).  Launches hold no lock: the host model keeps each
block's state in thread-local storage, and ctypes releases the GIL while a block runs.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyasc.backend.ascendc.codegen import (
    AscendProgram,
    KernelObject,
    PyascPerformanceWarning,
    lower_program,
    lower_variants,
)
from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.dumps import dump_variants
from pyasc.backend.ascendc.host_runner import HostRunner
from pyasc.backend.ascendc.sim import SimConfig, SimLibrary, compile_kernels
from pyasc.backend.ascendc.sim.batch import Unit, compile_batch
from pyasc.backend.ascendc.sim.pch import compiler_banner, headers_digest
from pyasc.backend.ascendc.sim.runner import SimViolationError, find_compiler
from pyasc.backend.ascendc.soc import SoC, socs_for
from pyasc.backend.base import Program
from pyasc.runtime.disk_cache import DiskCache
from pyasc.runtime.flight import SingleFlight

_FORMAT = 1
_BUILDS = SingleFlight()  # library keys being built in this process


def compiler_version() -> str:
    """First line of the host C++ compiler's ``--version`` output."""
    cxx = find_compiler()
    return f"{cxx}: {compiler_banner(cxx) or '?'}"


def pch_root() -> Path:
    """Where the precompiled sim headers and launch objects live: ``PYASC_SIM_PCH_DIR``,
    else beside the library cache; shared by every cache instance and process
    (``pyasc.backend.ascendc.sim.pch``: each file is keyed by the compiler, the headers and
    the flags, so one folder serves any number of library caches)."""
    explicit = os.environ.get("PYASC_SIM_PCH_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return DiskCache(backend="ascend-sim-pch").dir


def sim_config(soc: SoC, opt_level: str | None = None) -> SimConfig:
    """The build configuration for ``soc``; the optimisation level is ``opt_level``, else
    ``PYASC_SIM_OPT`` (e.g. ``-O0`` for faster builds), else ``-O2``."""
    opt = opt_level or os.environ.get("PYASC_SIM_OPT", "-O2")
    if opt not in ("-O0", "-O1", "-O2", "-O3"):
        opt = "-O2"
    cube = {} if soc.cube is None else {
        "l1_bytes": soc.cube.l1_usable_bytes, "l0a_bytes": soc.cube.l0a_bytes,
        "l0b_bytes": soc.cube.l0b_bytes, "l0c_bytes": soc.cube.l0c_bytes}
    return SimConfig(ub_bytes=soc.ub_bytes, ub_reserved_bytes=soc.reserved_ub_bytes,
                     opt_level=opt, npu_arch=soc.npu_arch, **cube)


def _not_vector(cores: Mapping[str, str] | None) -> dict[str, str]:
    """The core types a library's wrapper records explicitly (vector is the default)."""
    return {k: c for k, c in (cores or {}).items() if c != VECTOR}


def library_key(source: str, kernels: Sequence[str], config: SimConfig,
                cores: Mapping[str, str] | None = None) -> str:
    """The cache key of a library: the source, kernels (and the core type each is
    exported with), headers, compiler and flags."""
    parts = {"format": _FORMAT, "source": hashlib.sha256(source.encode()).hexdigest(),
             "kernels": list(kernels), "cores": _not_vector(cores), "headers": headers_digest(),
             "compiler": compiler_version(), "defines": config.defines(),
             "opt": config.opt_level}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class _Build:
    """What one library is built from: a program's whole source (the ascend-sim target)
    or one of its kernel objects (``PYASC_ASCEND_OBJECTS=ascend-sim``)."""

    source: str
    filename: str
    kernels: tuple[str, ...]
    cores: Mapping[str, str]
    soc: SoC

    @staticmethod
    def of(ap: AscendProgram, obj: KernelObject | None = None) -> _Build:
        if obj is None:
            return _Build(ap.source, ap.filename, tuple(ap.kernel_names), ap.cores, ap.soc)
        cores = {k: obj.core for k in obj.kernels}
        return _Build(obj.source, obj.filename, obj.kernels, cores, ap.soc)

    def key(self, config: SimConfig) -> str:
        return library_key(self.source, self.kernels, config, self.cores)

    def compile(self, config: SimConfig, keep_dir: Path | None = None) -> SimLibrary:
        return compile_kernels(self.source, self.kernels, filename=self.filename,
                               config=config, keep_dir=keep_dir, pch_root=pch_root(),
                               cores=_not_vector(self.cores))


@functools.lru_cache(maxsize=128)
def _loaded(key: str, path: str, kernels: tuple[str, ...], source: str, filename: str,
            config: SimConfig) -> SimLibrary:
    """One ``dlopen`` per cached library and process."""
    return SimLibrary(ctypes.CDLL(path), kernels, source=source, filename=filename,
                      config=config)


def build_library(ap: AscendProgram, use_cache: bool = True,
                  cache: DiskCache | None = None, opt_level: str | None = None) -> SimLibrary:
    """The compiled ascend-sim library of ``ap`` (from the caches when possible)."""
    config = sim_config(ap.soc, opt_level)
    build = _Build.of(ap)
    if not use_cache:
        return build.compile(config)
    cache = cache if cache is not None else DiskCache(backend="ascend-sim")
    key = build.key(config)
    return _BUILDS.run((str(cache.dir), key),
                       lambda: _cached_library(cache, key, build, config))


def _cached_library(cache: DiskCache, key: str, build: _Build,
                    config: SimConfig) -> SimLibrary:
    entry = cache.load(key)
    if entry is None:
        with cache.building(key):  # another process building it: wait, then load it
            entry = cache.load(key)
            if entry is None:
                _compile_into(cache, key, build, config)
                entry = cache.load(key)
    if entry is None:  # the cache is not writable: build in a temporary directory
        return build.compile(config)
    path = cache.dir / key[:2] / str(entry.manifest["object"])
    return _loaded(key, str(path), build.kernels, build.source, build.filename, config)


def _compile_into(cache: DiskCache, key: str, build: _Build, config: SimConfig) -> None:
    work = Path(tempfile.mkdtemp(prefix="pyasc-sim-"))
    try:
        build.compile(config, keep_dir=work)
        cache.store(key, {"kernels": list(build.kernels), "soc": build.soc.name,
                          "compiler": compiler_version()}, (work / "kernel.so").read_bytes())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def library_object(ap: AscendProgram, obj: KernelObject, use_cache: bool = True,
                   cache: DiskCache | None = None) -> bytes:
    """The bytes of the ascend-sim library of ``obj``, one kernel object of ``ap`` (the
    objects of ``PYASC_ASCEND_OBJECTS=ascend-sim``; a program of one core type shares
    its library with ascend-sim's caches).  Each kernel records its core type."""
    build, config = _Build.of(ap, obj), sim_config(ap.soc)
    if use_cache:
        cache = cache if cache is not None else DiskCache(backend="ascend-sim")
        key = build.key(config)
        entry = cache.load(key)
        if entry is None:
            _BUILDS.run((str(cache.dir), key),
                        lambda: _cached_library(cache, key, build, config))
            entry = cache.load(key)
        if entry is not None:
            return entry.obj
    work = Path(tempfile.mkdtemp(prefix="pyasc-sim-"))
    try:
        build.compile(config, keep_dir=work)
        return (work / "kernel.so").read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)


class SimKernel:
    """A compiled program on ascend-sim: ``kernel(flat_args) -> flat_results``.
    ``variants[soc name]`` is the program lowered for each SoC of ``device_type``; the
    first one (``ascend``) is the one built and run."""

    def __init__(self, program: Program, ascend: AscendProgram, lib: SimLibrary | None,
                 variants: Sequence[AscendProgram] = ()) -> None:
        self.program, self.ascend, self.lib = program, ascend, lib
        self.variants = {ap.soc.name: ap for ap in (variants or [ascend])}
        self.last_counters: dict[str, int] = {}
        self.last_launches: list[dict[str, int]] = []
        self.last_kernels: list[tuple[str, int]] = []  # (kernel, block_dim) per launch

    @property
    def source(self) -> str:
        return self.ascend.source

    def _launch(self, kernel: str, block_dim: int, args: Sequence[Any],
                writes: frozenset[int] = frozenset()) -> dict[str, int]:
        assert self.lib is not None, "a program without kernels launched one"
        try:
            return self.lib.launch(kernel, block_dim, *args)
        except SimViolationError as exc:
            full = self.ascend.files.get(exc.file)
            if full is None:
                raise
            raise SimViolationError(exc.api, full, exc.line, exc.block, exc.detail,
                                    filename=full, lineno=exc.line or None) from None

    def __call__(self, flat_args: Sequence[Any]) -> list[Any]:
        runner = HostRunner(self.ascend.host, self._launch)
        try:
            return runner.call(self.ascend.entry, *flat_args)
        finally:
            self.last_launches, self.last_kernels = runner.counters, runner.launches
            self.last_counters = runner.total_counters()


def prebuild(programs: Sequence[Program], opt_level: str | None = None
             ) -> dict[str, SimLibrary]:
    """Compile the kernels of several programs in one C++ build (``sim.batch``):
    ``{library key: library}`` for ``SimBackend(prebuilt=...)``.  A program that does
    not lower (a device limitation) is left out; a batch that does not compile gives
    ``{}`` (each program is then built alone and reports its own error)."""
    lowered = []
    for program in programs:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PyascPerformanceWarning)
                ap = lower_program(program, socs_for(program.options.get("device_type"))[0])
        except Exception:  # noqa: BLE001 - reported when the program itself is compiled
            continue
        if ap.kernels:
            lowered.append(ap)
    if not lowered:
        return {}
    config = sim_config(lowered[0].soc, opt_level)
    same = [ap for ap in lowered if sim_config(ap.soc, opt_level) == config]
    libs = compile_batch([Unit(ap.source, tuple(ap.kernel_names), ap.filename,
                               _not_vector(ap.cores)) for ap in same], config, pch_root())
    if libs is None:
        return {}
    return {_Build.of(ap).key(config): lib for ap, lib in zip(same, libs, strict=True)}


class SimBackend:
    """The ``ascend-sim`` target (see the module docstring); ``prebuilt`` libraries
    (:func:`prebuild`) are used before the caches."""

    name = "ascend-sim"

    def __init__(self, cache: DiskCache | None = None,
                 prebuilt: Mapping[str, SimLibrary] | None = None) -> None:
        self._cache = cache
        self._prebuilt = prebuilt if prebuilt is not None else {}

    def compile(self, program: Program) -> SimKernel:
        """Lower ``program`` for each requested SoC (each must fit,
        ``codegen.lower_variants``); build and load the first one."""
        socs = socs_for(program.options.get("device_type"))  # type: ignore[arg-type]
        variants = lower_variants(program, socs)
        dump_variants(program, "ascend-sim", variants)
        use_cache = program.options.get("cache", True) is not False
        ap = variants[0]
        if not ap.kernels:
            return SimKernel(program, ap, None, variants)
        key = _Build.of(ap).key(sim_config(ap.soc))
        lib = self._prebuilt.get(key) or build_library(ap, use_cache, self._cache)
        return SimKernel(program, ap, lib, variants)
