"""Fusion markers as the frontend sees them.

``with fusion_scope():`` (defined here) becomes a ``fusion.scope`` op (a fusion
boundary); run as plain Python (``target="interpret"``) it does nothing.
``@fusion_group`` makes a ``HybridFunction``, so it lives with the decorator in
:mod:`pyasc.jit.fusion_group`; both carry ``__pyasc_marker__`` so that rules can refuse
them where they are not markers (``fusion_group(f)`` called inside a kernel) without
importing the layer above.
"""

from __future__ import annotations

from contextlib import AbstractContextManager


class _FusionScope(AbstractContextManager):
    """A no-op context manager when run as Python."""

    def __exit__(self, *exc: object) -> None:
        return None


def fusion_scope() -> _FusionScope:
    """Mark a block whose operations fuse with each other but not with the outside."""
    return _FusionScope()


fusion_scope.__pyasc_marker__ = "fusion_scope"  # type: ignore[attr-defined]


def marker_name(value: object) -> str | None:
    """``"fusion_scope"`` / ``"fusion_group"`` for the markers, else None."""
    name = getattr(value, "__pyasc_marker__", None)
    return name if isinstance(name, str) and callable(value) else None
