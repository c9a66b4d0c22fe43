"""Build and observe the stand-in AscendCL library (``acl_standin.c``).

:func:`build` compiles the C source with the host ``cc`` into ``root`` once per source
digest; :class:`Standin` reads the library's live-resource counters
(``pyasc_standin_stats``) and names the environment variables that configure it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("acl_standin.c")
STAT_NAMES = ("device_blocks", "device_bytes", "host_blocks", "binaries", "streams", "loads",
              "launches", "device_refs", "initialized", "last_blocks")


def build(root: Path) -> Path:
    """``root/<digest>/libascendcl.so`` compiled from :data:`SOURCE` (reused if present)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = root / digest / "libascendcl.so"
    if out.is_file():
        return out
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler (cc) to build the stand-in AscendCL library")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run([cc, "-std=c11", "-O1", "-g", "-Wall", "-Werror", "-fPIC",
                           "-shared", "-pthread", "-o", str(tmp), str(SOURCE), "-ldl"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the stand-in failed:\n{proc.stdout}{proc.stderr}")
    tmp.replace(out)
    return out


@dataclass(frozen=True)
class Stats:
    """The stand-in's counters (see ``pyasc_standin_stats`` in the C source)."""

    device_blocks: int
    device_bytes: int
    host_blocks: int
    binaries: int
    streams: int
    loads: int
    launches: int
    device_refs: int
    initialized: int
    last_blocks: int


class Standin:
    """The stand-in library at ``path``, loaded (it is the same mapping pyasc loads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        self._lib.pyasc_standin_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        self._lib.pyasc_standin_last_magic.restype = ctypes.c_uint32
        self._lib.pyasc_standin_magics.restype = ctypes.c_int64
        self._lib.pyasc_standin_magics.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_int64]

    def stats(self) -> Stats:
        out = (ctypes.c_int64 * len(STAT_NAMES))()
        self._lib.pyasc_standin_stats(out)
        return Stats(*(int(v) for v in out))

    def last_magic(self) -> int:
        return int(self._lib.pyasc_standin_last_magic())

    def magics(self) -> list[int]:
        """The binary magic of each loaded binary."""
        out = (ctypes.c_uint32 * 256)()
        n = int(self._lib.pyasc_standin_magics(out, len(out)))
        return [int(out[i]) for i in range(min(n, len(out)))]

    def copied(self) -> dict[str, int]:
        """Bytes copied so far by ``aclrtMemcpy``/``aclrtMemcpyAsync``, per kind."""
        out = (ctypes.c_int64 * 4)()
        self._lib.pyasc_standin_copied(out)
        return dict(zip(("h2h", "h2d", "d2h", "d2d"), (int(v) for v in out), strict=True))
