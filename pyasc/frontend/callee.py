"""What the frontend knows of a ``@hybrid`` function a kernel calls.

The frontend inlines the body of a called ``@hybrid`` function; it recognises one by
this base class, which ``pyasc.jit.HybridFunction`` (the layer above) implements, so
the frontend never imports the layer that calls it.  Importing this module is cheap
(``import pyasc`` imports it: no IR, no compiler).

A callee may see names besides its parameters: :meth:`Callee.bindings` (compile-time
values, such as the helper methods of an ``AscendOperator``) and :attr:`Callee.shared`
(names read from the caller's scope: the state of the operator whose methods they are,
which every method sees as ``self.<attr>``; see ``methods``).
"""

from __future__ import annotations

import inspect
from types import FunctionType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from pyasc.frontend.source import SourceInfo


class Callee:
    """A ``@hybrid`` function as the frontend sees it: its name, the wrapped Python
    function and its signature, and its parsed source.  A plain base class, not an
    ABC: ``HybridFunction`` keeps ``type`` as its metaclass (its call path is timed
    in nanoseconds)."""

    __name__: str
    __wrapped__: FunctionType
    __signature__: inspect.Signature
    shared: frozenset[str] = frozenset()
    """Names the inlined body reads from its caller's scope (none for ``@hybrid``)."""

    def source_info(self) -> SourceInfo:
        """The parsed source of the wrapped function."""
        raise NotImplementedError

    def key_source(self) -> str:
        """The source text the cache key covers (what :meth:`source_info` parsed)."""
        raise NotImplementedError

    def bindings(self) -> dict[str, object]:
        """Compile-time names the body sees besides its parameters (none by default)."""
        return {}

    def registered_gradient(self) -> Callee | None:
        """The gradient registered with ``@fn.def_grad`` (none by default)."""
        return None

    def enclosing(self) -> object | None:
        """The lowering of the function body that defines this one (a ``def`` or
        ``lambda`` inside a compiled function), whose names it reads; else ``None``."""
        return None
