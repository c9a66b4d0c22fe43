"""Fusion markers users write: ``with fusion_scope():`` and ``@fusion_group``.

Run as plain Python (``target="interpret"``) they do nothing.  The frontend turns a
``with fusion_scope():`` block into a ``fusion.scope`` op (a fusion boundary); the
fusion passes read the ``fusion_group`` mark on the functions it decorates.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

F = TypeVar("F", bound=Callable)


class _FusionScope(AbstractContextManager):
    """A no-op context manager when run as Python."""

    def __exit__(self, *exc: object) -> None:
        return None


def fusion_scope() -> _FusionScope:
    """Mark a block whose operations fuse with each other but not with the outside."""
    return _FusionScope()


def fusion_group(fn: F) -> F:
    """Mark a function whose ``@hybrid`` callees may fuse across their boundaries."""
    fn.__pyasc_fusion_group__ = True  # type: ignore[attr-defined]
    return fn
