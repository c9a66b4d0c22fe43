"""Where ``PYASC_DUMP_IR`` puts the IR after each pass, and what happens when it cannot.

With ``PYASC_DUMP_IR=dir`` every pipeline :func:`pyasc.ir.passes.run_pipeline` runs for
a call writes ``NN-<pass>.ir`` files (``00-input.ir`` first) into a folder of its own,
so no dump overwrites another::

    dir/<function>-<key[:16]>/tensor/   the default (tensor-level) pipeline
    dir/<function>-<key[:16]>/loops/    the CPU backend's loop pipeline

``key`` is the specialization's program key (function source, argument signature,
options), so each function and specialization has one folder.  A pipeline run outside
a call (tests, tools) uses the digest of its input IR as key and ``passes`` as stage.

While dumping is on, kernels are not read from the disk cache (they are compiled, so
the passes run and dump; the cache entry is still written).  A directory that cannot
be created or written (the variable names a file, a read-only place...) is reported
once per place and reason with an :class:`~pyasc.errors.IRDumpWarning`; the call runs
without dumps.  This module is light (no IR import): the runtime's cache lookups ask
:func:`dumping`.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from pathlib import Path

from pyasc.errors import IRDumpWarning

DUMP_VARIABLE = "PYASC_DUMP_IR"
KEY_CHARS = 16
"""Characters of the key in a folder name (64 bits: no collision in practice)."""


def dump_root() -> Path | None:
    """The dump directory ``PYASC_DUMP_IR`` names, or ``None`` when dumping is off."""
    text = os.environ.get(DUMP_VARIABLE, "").strip()
    return Path(text).expanduser() if text else None


def dumping() -> bool:
    """Whether IR dumps are requested (then the disk cache is not read)."""
    return bool(os.environ.get(DUMP_VARIABLE, "").strip())


def dump_dir(function: str, key: str, stage: str) -> Path | None:
    """The folder for ``stage`` of ``function``'s specialization ``key`` (not created
    here), or ``None`` when dumping is off."""
    root = dump_root()
    if root is None:
        return None
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", function)[:80] or "module"
    return root / f"{name}-{key[:KEY_CHARS]}" / stage


def content_key(text: str) -> str:
    """A key for IR that belongs to no specialization: the digest of its text."""
    import hashlib  # not at import: ``import pyasc`` stays light

    return hashlib.sha256(text.encode()).hexdigest()


def write_dump(folder: Path, name: str, text: str) -> bool:
    """Write ``folder/name``; on failure warn (once per place and reason) and return
    ``False``, so the caller stops dumping and the compilation goes on."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    except OSError as exc:
        _warn_unwritable(str(dump_root() or folder), exc.strerror or type(exc).__name__)
        return False
    return True


@functools.lru_cache(maxsize=64)
def _warn_unwritable(root: str, reason: str) -> None:
    # cached: one warning per place and reason, not one per pass or per pipeline
    warnings.warn(IRDumpWarning(
        f"{DUMP_VARIABLE}={root}: cannot write the IR dumps there ({reason}); the call "
        f"runs without them"), stacklevel=4)
