"""pyasc variants of the kernels: ``hybrid(kernel)`` and, for compositions, fusion_group.

pyasc is under construction, so nothing here may assume it works: ``load()`` reports why
``from pyasc import hybrid`` fails, and every factory returned by ``variants`` may raise
(when wrapping or on the first call); the harness turns any exception into a table cell.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import kernels


def load() -> tuple[ModuleType | None, str | None]:
    """``(pyasc, None)`` if ``from pyasc import hybrid`` works, else ``(None, reason)``."""
    try:
        import pyasc
        from pyasc import hybrid  # noqa: F401
    except Exception as exc:  # pyasc may be half-built: any failure disables the column
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return pyasc, None


def _hybrid(pyasc: ModuleType, fastmath: bool) -> Callable[[Callable], Callable]:
    return pyasc.hybrid(fastmath=True) if fastmath else pyasc.hybrid


def variants(pyasc: ModuleType, name: str, fastmath: bool = False
             ) -> dict[str, Callable[[], Callable]]:
    """Factories of the pyasc variants of kernel ``name``: label -> () -> compiled callable.

    A kernel that calls other kernels (``kernels.CALLEES``) gets three variants: one
    ``@hybrid`` body calling ``@hybrid`` callees, the same composition under
    ``@fusion_group`` (fused across the callees), and the callees called one after the
    other from Python (unfused, for the fusion speed-up).
    """
    fn = getattr(kernels, name)
    callees = kernels.CALLEES.get(name, ())
    label = "pyasc hybrid(fastmath=True)" if fastmath else "pyasc hybrid"

    def whole():
        wrap = _hybrid(pyasc, fastmath)
        return wrap(kernels.rebind(fn, wrap, callees) if callees else fn)

    found = {label: whole}
    if callees:
        found["pyasc fusion_group"] = lambda: _fusion_group(pyasc, fn, callees, fastmath)
        found["pyasc unfused calls"] = lambda: _unfused(pyasc, name, fastmath)
    return found


def _fusion_group(pyasc: ModuleType, fn: Callable, callees, fastmath: bool) -> Callable:
    return pyasc.fusion_group(kernels.rebind(fn, _hybrid(pyasc, fastmath), callees))


def _unfused(pyasc: ModuleType, name: str, fastmath: bool) -> Callable:
    # Only embedding_matmul composes kernels; spelled out so the call order is visible.
    if name != "embedding_matmul":
        raise NotImplementedError(f"no unfused form for {name}")
    wrap = _hybrid(pyasc, fastmath)
    embedding, matmul = wrap(kernels.embedding), wrap(kernels.matmul)
    return lambda ids, table, w: matmul(embedding(ids, table), w)
