"""Where the CPU thread pool's object code comes from: an interface the runtime defines.

The pool (``threads``) runs code only the CPU backend can build (LLVM IR compiled for
this CPU), but the runtime sits below the backends and imports none of them.  So the
runtime asks a *loader* for the code, and the ``pyasc`` package, above both layers,
registers the CPU backend's loader (``pyasc.backend.llvm.runtime_code``) here when it
is imported, which is before any of its modules runs.  Registering imports nothing: the
loader imports the backend when the pool is first needed.  This module is kept tiny so
``import pyasc`` costs no more for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyasc.errors import InternalCompilerError

Loader = Callable[[], Any]
"""Gets the pool's object code into memory: called with no arguments, it returns the
loaded code, an object whose ``addresses`` maps every name of ``threads.SYMBOLS`` to its
address and which keeps the code mapped while it is referenced."""

_LOADER: list[Loader] = []
"""The registered loader.  This module-level registry is the runtime's only link to the
code's builder; it holds one callable, set when the ``pyasc`` package is imported and
read once, when the pool first loads."""


def provide(loader: Loader) -> None:
    """Register how the pool's object code is obtained; the pool loads through the last
    loader registered before it is first needed."""
    _LOADER[:] = [loader]


def load() -> Any:
    """The pool's object code, from the registered loader."""
    if not _LOADER:
        raise InternalCompilerError(
            "the CPU thread pool is needed but no loader provided its code",
            hint="the pyasc package registers the CPU backend's loader when imported "
                 "(pyasc.runtime.pool_code.provide)")
    return _LOADER[0]()
