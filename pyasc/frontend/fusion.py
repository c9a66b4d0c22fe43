"""Fusion markers users write: ``with fusion_scope():`` and ``@fusion_group``.

Run as plain Python (``target="interpret"``) they do nothing.  The frontend turns a
``with fusion_scope():`` block into a ``fusion.scope`` op (a fusion boundary);
``@fusion_group`` compiles a composition of ``@hybrid`` functions as one program whose
inlined callees the fusion pass fuses across their boundaries.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pyasc.callsite import public_api


class _FusionScope(AbstractContextManager):
    """A no-op context manager when run as Python."""

    def __exit__(self, *exc: object) -> None:
        return None


def fusion_scope() -> _FusionScope:
    """Mark a block whose operations fuse with each other but not with the outside."""
    return _FusionScope()


@public_api
def fusion_group(fn: Callable | None = None, /, **options: Any) -> Any:
    """Compile a function that calls ``@hybrid`` functions as ONE program.

    ``@fusion_group`` (or ``@fusion_group(target=..., ...)`` with ``@hybrid``'s options)
    returns a ``HybridFunction``: the ``@hybrid`` callees are inlined into it, so the
    fusion pass fuses their ops across the call boundaries, and the call returns what
    the function returns.  The function is marked (``__pyasc_fusion_group__``, part of
    its cache fingerprint).  A function that is already ``@hybrid`` is marked only.
    """
    from pyasc.frontend.decorator import HybridFunction, hybrid

    @public_api
    def wrap(f: Callable) -> Any:
        if isinstance(f, HybridFunction):
            f.__wrapped__.__pyasc_fusion_group__ = True  # type: ignore[attr-defined]
            return f
        f.__pyasc_fusion_group__ = True  # type: ignore[attr-defined]
        return hybrid(f, **options)
    return wrap if fn is None else wrap(fn)
