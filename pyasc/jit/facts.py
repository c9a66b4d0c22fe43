"""What the frontend remembers on disk besides kernels: which arguments a function
specializes by value.

Compiling a key can find arguments the compiler needs by value (an ``axis=``); the
frontend stores their paths under that key's program key, so a fresh process computing
the same key learns them without compiling (``HybridFunction._load_entry``).  Records
live next to the backends' kernels (backend directory ``frontend``), are written
atomically (``DiskCache.store_data``) and are only hints: a lost or malformed record
costs one more compilation that asks for the arguments again, never a wrong kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyasc.jit.specialize import is_shape_path

if TYPE_CHECKING:  # pragma: no cover - the disk cache is imported when first used
    from pyasc.runtime.disk_cache import DiskCache


def _facts() -> DiskCache:
    from pyasc.runtime.disk_cache import DiskCache

    return DiskCache(backend="frontend")


def load_by_value(program_key: str) -> set[tuple]:
    """The by-value argument paths recorded for ``program_key`` (empty if none)."""
    return by_value_paths(_facts().load_data(program_key))


WINDOW_DIMS = "window"
"""The ``dims`` of a record whose array dimensions are window sizes (``window_dims``).
A record without it may come from a build that specialized any dimension the compiler
needed (a ``linspace`` count): its dimensions are dropped, so that need stays an error."""


def store_by_value(program_key: str, paths: frozenset[tuple] | set[tuple]) -> None:
    """Record ``paths`` as the by-value arguments of calls with ``program_key``."""
    listed = sorted((list(p) for p in paths), key=repr)
    _facts().store_data(program_key, {"by_value": listed, "dims": WINDOW_DIMS})


def by_value_paths(data: dict[str, Any] | None) -> set[tuple]:
    """The argument paths in a by-value record (nothing if malformed)."""
    paths = (data or {}).get("by_value")
    if not isinstance(paths, list) or not all(
            isinstance(p, list) and p and all(isinstance(x, str | int) for x in p)
            for p in paths):
        return set()
    windows = (data or {}).get("dims") == WINDOW_DIMS
    return {tuple(p) for p in paths if windows or not is_shape_path(tuple(p))}
