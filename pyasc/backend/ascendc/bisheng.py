"""The bisheng driver: CANN discovery, the compile and link command lines, the cache.

The command line is the one of pyasc 1.1.1's ``runtime/compiler.py`` (reference section
3).  Discovery: ``ASCEND_HOME_PATH`` (set by ``<ascend-toolkit>/set_env.sh``), then
``bisheng`` and ``ld.lld`` from ``PYASC_COMPILER``/``PYASC_LINKER``, ``PATH`` or
``$ASCEND_HOME_PATH/compiler/ccec_compiler/bin``.  Headers: ``compiler/tikcpp/tikcfw``
(+ ``impl``, ``interface``), or the newer ``asc/include`` + ``asc/impl`` layout [I].  A
failed compile is retried once with ``-mllvm -disable-machine-licm`` (as pyasc does);
a second failure raises :class:`BishengError` at the Python line its ``#line``
directives name.  Objects are cached on disk (backend directory ``ascend``) under a key
made of the source, the SoC, the arch, the CANN version and bisheng's version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyasc.errors import InternalCompilerError, ToolchainMissingError
from pyasc.runtime.disk_cache import DiskCache

SET_ENV_HINT = ("source <ascend-toolkit>/set_env.sh "
                "(e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh)")

COMMON_FLAGS = (
    "-std=c++17", "--cce-disable-kernel-global-attr-check",
    "-mllvm", "-cce-aicore-stack-size=0x8000",
    "-mllvm", "-cce-aicore-function-stack-size=0x8000",
    "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
    "-DASCENDC_DUMP=0", "--cce-auto-sync", "-mllvm", "-api-deps-filter",
    "-D__NPU_TILING__", "-DTILING_KEY_VAR=0",
)
RETRY_FLAGS = ("-mllvm", "-disable-machine-licm")


class BishengError(InternalCompilerError):
    """Generated AscendC that bisheng rejects (E50050), located at the Python line."""

    title = "bisheng failed to compile the generated AscendC"
    default_hint = "this is a pyasc bug: please report it with the generated source"


@dataclass(frozen=True)
class Toolchain:
    """A CANN installation: where bisheng, ld.lld and the AscendC headers are."""

    home: Path
    compiler: str
    linker: str
    include_dirs: tuple[str, ...]
    version_header: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)

    def compile_command(self, source: str, output: str, arch: str,
                        retry: bool = False) -> list[str]:
        """The bisheng command compiling ``source`` to ``output`` for ``arch``."""
        cmd = [self.compiler, "-c", "-x", "cce", "-O3", source,
               f"--cce-aicore-arch={arch}", "--cce-aicore-only", "-o", output]
        if self.version_header:
            cmd += ["-include", self.version_header]
        for d in self.include_dirs:
            cmd += ["-I", d]
        cmd += [*self.extra, *COMMON_FLAGS]
        if retry:
            cmd[4:4] = RETRY_FLAGS  # pyasc inserts the flag at argv[4]
        return cmd

    def link_command(self, obj: str, output: str) -> list[str]:
        return [self.linker, "-m", "aicorelinux", "-Ttext=0", obj, "-static", "-o", output]

    def versions(self) -> dict[str, str]:
        """CANN and bisheng versions (cache key parts)."""
        return {"cann": cann_version(self.home), "bisheng": _tool_version(self.compiler)}


TOOL_OVERRIDES = {"bisheng": "PYASC_COMPILER", "ld.lld": "PYASC_LINKER"}
"""The environment variable naming each CANN tool explicitly (reference section 3)."""


def tool_dir(home: Path) -> Path:
    """Where a toolkit keeps bisheng and ld.lld."""
    return home / "compiler" / "ccec_compiler" / "bin"


def find_tool(name: str, env: Mapping[str, str], home: Path | None) -> str | None:
    """``bisheng`` or ``ld.lld``: its override variable, else ``PATH``, else the
    toolkit's ``compiler/ccec_compiler/bin`` (``None`` when none has it)."""
    override = env.get(TOOL_OVERRIDES[name])
    if override:
        return override
    found = shutil.which(name, path=env.get("PATH"))
    if found:
        return found
    if home is not None:
        candidate = tool_dir(home) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def include_dirs(home: Path) -> tuple[tuple[str, ...], str | None]:
    """The AscendC header directories of the toolkit at ``home`` and its
    ``cann_version.h`` (``None`` when absent); E50030 when it has no headers."""
    tikcpp = (home / "compiler" / "tikcpp").resolve()
    header = tikcpp / ".." / ".." / "include" / "version" / "cann_version.h"
    version = str(header.resolve()) if header.is_file() else None
    tikcfw = tikcpp / "tikcfw"
    if tikcfw.is_dir():
        return (str(tikcfw), str(tikcfw / "impl"), str(tikcfw / "interface")), version
    asc = home / "asc"
    if (asc / "include").is_dir():  # newer layout (asc-devkit CMakeASCInformation) [I]
        return (str(asc / "include"), str(asc / "impl")), version
    raise ToolchainMissingError(
        f"no AscendC headers under {home} (looked for compiler/tikcpp/tikcfw and "
        "asc/include)", hint=SET_ENV_HINT)


def find_toolchain(env: Mapping[str, str] | None = None) -> Toolchain:
    """The CANN toolchain named by the environment; E50030 naming what is missing."""
    env = os.environ if env is None else env
    home_text = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
    if not home_text:
        raise ToolchainMissingError("ASCEND_HOME_PATH is not set: the CANN toolkit is not "
                                    "in this environment", hint=SET_ENV_HINT)
    home = Path(home_text)
    if not home.is_dir():
        raise ToolchainMissingError(f"ASCEND_HOME_PATH={home_text} is not a directory",
                                    hint=SET_ENV_HINT)
    compiler = find_tool("bisheng", env, home)
    linker = find_tool("ld.lld", env, home)
    if not compiler:
        raise ToolchainMissingError(f"bisheng is not on PATH nor in {tool_dir(home)}",
                                    hint=SET_ENV_HINT)
    if not linker:
        raise ToolchainMissingError(f"ld.lld is not on PATH nor in {tool_dir(home)}",
                                    hint=SET_ENV_HINT)
    includes, version = include_dirs(home)
    return Toolchain(home, compiler, linker, includes, version)


def cann_version(home: Path) -> str:
    """The toolkit version from its version files (``unknown`` when there is none)."""
    for rel in ("version.cfg", "compiler/version.info", "version.info",
                "include/version/cann_version.h"):
        path = home / rel
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()[:16] + ":" + rel
    return "unknown"


@functools.lru_cache(maxsize=16)
def _tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return "unknown"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$",
                   re.MULTILINE)


def compile_error(output: str, files: Mapping[str, str], cmd: Sequence[str]) -> BishengError:
    """A :class:`BishengError` at the first error's line (a Python line when the
    generated source mapped it there with ``#line``)."""
    m = _DIAG.search(output)
    if m is None:
        return BishengError(f"{' '.join(cmd)}\n{output[-4000:]}")
    name = os.path.basename(m.group("file"))
    full = files.get(name, m.group("file"))
    return BishengError(f"{m.group('msg')}\n{output[-4000:]}", filename=full,
                        lineno=int(m.group("line")), col_offset=int(m.group("col")) - 1)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)


def build_object(tc: Toolchain, source: str, filename: str, arch: str,
                 files: Mapping[str, str]) -> bytes:
    """Compile and link ``source`` into one kernel object (no cache involved)."""
    work = Path(tempfile.mkdtemp(prefix="pyasc-bisheng-"))
    try:
        (work / filename).write_text(source)
        obj = "kernel.o"
        cmd = tc.compile_command(filename, obj, arch)
        proc = _run(cmd, work)
        if proc.returncode != 0:
            cmd = tc.compile_command(filename, obj, arch, retry=True)
            proc = _run(cmd, work)
            if proc.returncode != 0:
                raise compile_error(proc.stdout + proc.stderr, files, cmd)
        link = tc.link_command(obj, obj)
        proc = _run(link, work)
        if proc.returncode != 0:
            raise BishengError(f"{' '.join(link)}\n{proc.stdout}{proc.stderr}")
        return (work / obj).read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def object_key(tc: Toolchain, source: str, soc: str, arch: str) -> str:
    parts = {"source": hashlib.sha256(source.encode()).hexdigest(), "soc": soc, "arch": arch,
             **tc.versions(), "flags": list(COMMON_FLAGS)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def cached_object(tc: Toolchain, source: str, soc: str, arch: str,
                  cache: DiskCache | None = None) -> bytes | None:
    """The object the disk cache holds for ``source`` on ``soc``, or ``None``."""
    cache = cache if cache is not None else DiskCache(backend="ascend")
    entry = cache.load(object_key(tc, source, soc, arch))
    return entry.obj if entry is not None else None


def compile_cached(tc: Toolchain, source: str, filename: str, soc: str, arch: str,
                   files: Mapping[str, str], cache: DiskCache | None = None) -> bytes:
    """:func:`build_object` through the disk cache."""
    cache = cache if cache is not None else DiskCache(backend="ascend")
    found = cached_object(tc, source, soc, arch, cache)
    if found is not None:
        return found
    key = object_key(tc, source, soc, arch)
    obj = build_object(tc, source, filename, arch, files)
    cache.store(key, {"soc": soc, "arch": arch, **tc.versions()}, obj)
    return obj
