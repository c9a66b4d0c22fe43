"""What the frontend knows of a ``@hybrid`` function a kernel calls.

The frontend inlines the body of a called ``@hybrid`` function; it recognises one by
this base class, which ``pyasc.jit.HybridFunction`` (the layer above) implements, so
the frontend never imports the layer that calls it.  Importing this module is cheap
(``import pyasc`` imports it: no IR, no compiler).
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

    def source_info(self) -> SourceInfo:
        """The parsed source of the wrapped function."""
        raise NotImplementedError
