"""The runtime's native object: the thread pool and the Ctrl-C runtime, built by this backend.

The CPU runtime (``pyasc.runtime.threads``) runs code that only this backend can make
(``pool.pool_ir``: LLVM IR, compiled at O3 for this CPU), but the runtime sits below the
backends and imports none of them.  So this backend owns the object's whole life --
compiling, the disk cache, loading -- and :func:`load_runtime_code` is the runtime's
loader: ``pyasc/__init__.py``, above both layers, registers it
(``pyasc.runtime.pool_code``) without importing this module until the pool is needed.

The object is cached like a kernel: under a key naming it, pyasc's source digest, the
CPU and the compiler (once per machine and pyasc build, ~20-60 ms to build); a broken
entry is rebuilt.  It is loaded like a kernel object (``backend.load_code``) except that
MCJIT gets no runtime symbols for it: it defines them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pyasc.backend.llvm.backend import load_code
from pyasc.backend.llvm.host import compiler_identity, cpu_identity
from pyasc.runtime import threads
from pyasc.runtime.disk_cache import DiskCache, package_digest

NAME = "pyasc.rt.pool"
"""The object's name in the disk cache and in compiler messages."""


def cache_key() -> str:
    """The disk-cache key of the runtime object on this machine with this compiler."""
    parts = {"what": NAME, "source": package_digest(), "cpu": cpu_identity(),
             **compiler_identity()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def load_runtime_code() -> Any:
    """The runtime object in memory (``.addresses`` of every ``threads.SYMBOLS``): from
    the disk cache, else compiled and stored there."""
    key = cache_key()
    cache = DiskCache()
    found = cache.load(key)
    if found is not None and found.manifest.get("entry") == NAME:
        try:
            return _map(found.obj, fresh=False)
        except Exception:  # a broken entry is rebuilt
            pass
    from pyasc.backend.llvm import jit  # LLVM itself only when the object is compiled
    from pyasc.backend.llvm.pool import pool_ir

    obj = jit.compile_ir(pool_ir(), NAME).obj
    cache.store(key, {"entry": NAME, "symbols": list(threads.SYMBOLS)}, obj)
    return _map(obj, fresh=True)


def _map(obj: bytes, fresh: bool) -> Any:
    return load_code(obj, list(threads.SYMBOLS), NAME, fresh=fresh, runtime=False)
