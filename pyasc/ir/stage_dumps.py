"""``PYASC_DUMP_PATH``: every stage of every compiled specialization, written to disk.

With ``PYASC_DUMP_PATH=dir`` each specialization a call compiles gets a folder named by
its function and its argument types (plus the start of its program key, so two
specializations never share one)::

    dir/<function>/<types>-<key[:12]>/
        tensor/NN-<pass>.ir           tensor IR: 00-input.ir, then after every pass
        cpu/loops/NN-<pass>.ir        loop IR after every pass of the loop pipeline
        cpu/kernel-unoptimized.ll     the LLVM IR generated, then as optimized (kernel.ll)
        cpu/kernel.s                  host assembly
        cpu/kernel.json               the kernel's ABI and call data
        ascend-sim/<SoC>/<fn>.cpp     AscendC source per SoC, and host.ir (host program)
        ascend/<SoC>/<fn>.cpp         the same for the NPU, and bisheng.sh (its commands)
        <target>/NOT-DUMPED.txt       what a disk-cache hit did not produce, and why

A kernel loaded from the disk cache is not rebuilt: the stages it never produced are
listed in ``NOT-DUMPED.txt`` (with how to get them) and what it has is written.  A place
that cannot be written is reported once with an :class:`~pyasc.errors.IRDumpWarning`
(W50060) and the call runs without dumps.  ``PYASC_DUMP_IR`` (``pyasc.ir.dumps``, the
pass-by-pass IR only) works as before, alongside.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from pyasc.errors import IRDumpWarning

PATH_VARIABLE = "PYASC_DUMP_PATH"
KEY_CHARS = 12
NAME_CHARS = 80


def path_root() -> Path | None:
    """The directory ``PYASC_DUMP_PATH`` names, or ``None`` when it is unset."""
    text = os.environ.get(PATH_VARIABLE, "").strip()
    return Path(text).expanduser() if text else None


def safe_name(text: str, default: str) -> str:
    """``text`` as one file-name component (letters, digits and ``_.-``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:NAME_CHARS] or default


def signature_name(signature: str) -> str:
    """A folder name for argument types: ``"float32[4, 8]; float"`` ->
    ``float32_4x8-float`` (a dynamic dimension is ``N``)."""
    args = [re.sub(r"\[(.*?)\]", lambda m: "_" + m.group(1).replace(", ", "x").replace("?", "N"),
                   a.strip())
            for a in signature.split(";") if a.strip()]
    return safe_name("-".join(args), "noargs")


@dataclass(frozen=True)
class DumpSite:
    """One specialization: its function, program key and readable argument types."""

    function: str
    key: str
    signature: str = ""

    def folder(self) -> Path | None:
        """Its folder under ``PYASC_DUMP_PATH`` (not created), or ``None`` when off."""
        root = path_root()
        if root is None:
            return None
        spec = signature_name(self.signature)
        return root / safe_name(self.function, "module") / f"{spec}-{self.key[:KEY_CHARS]}"

    def stage_dir(self, stage: str) -> Path | None:
        """The folder of ``stage`` (``tensor``, ``cpu/loops``...), or ``None``."""
        folder = self.folder()
        return None if folder is None else folder / stage

    def write(self, relpath: str, data: str | bytes) -> bool:
        """Write ``relpath`` under this specialization's folder; ``False`` when dumping
        is off or the place cannot be written (warned about once)."""
        folder = self.folder()
        if folder is None:
            return False
        return write_file(folder / relpath, data)

    def not_dumped(self, target: str, missing: list[str], why: str) -> bool:
        """``<target>/NOT-DUMPED.txt``: the stages not written, why, how to get them."""
        lines = [f"{self.function} ({self.signature or 'no arguments'}) on {target}: {why}.",
                 "Not written, because nothing in this process produced them:",
                 *(f"  {m}" for m in missing),
                 "To dump every stage, compile without the disk cache: @hybrid(cache=False),",
                 "or point PYASC_CACHE_DIR at an empty directory."]
        return self.write(f"{target}/NOT-DUMPED.txt", "\n".join(lines) + "\n")


def write_file(path: Path, data: str | bytes) -> bool:
    """Write one dump file (parents created); on failure warn once per place and reason."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data if data.endswith("\n") else data + "\n")
    except OSError as exc:
        _warn_unwritable(str(path_root() or path.parent), exc.strerror or type(exc).__name__)
        return False
    return True


@functools.lru_cache(maxsize=64)
def _warn_unwritable(root: str, reason: str) -> None:
    # cached: one warning per place and reason, not one per stage or specialization
    warnings.warn(IRDumpWarning(
        f"{PATH_VARIABLE}={root}: cannot write the compilation dumps there ({reason}); "
        "the call runs without them", hint=f"set {PATH_VARIABLE} to a writable directory"),
        stacklevel=4)
