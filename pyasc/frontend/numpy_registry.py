"""The one table of supported numpy functions, array methods and array attributes.

Each :class:`NumpyEntry` maps a name (``"sum"``, ``"ndarray.sum"``, ``"ndarray.shape"``,
``"math.sqrt"``) to a handler whose Python signature *is* the supported signature:
arguments are bound with ``inspect.Signature.bind``, so an unsupported keyword or a
missing argument is an ``UnsupportedNumpyError`` (E50011) at the call, and
:func:`pyasc.supported_numpy` and ``docs/numpy-support.md`` (``pyasc.frontend.docgen``) list
exactly what is accepted.
Handlers take the :class:`~pyasc.frontend.lowering.Lowering` first; a method handler
takes the array second.

The handlers live in ``pyasc.frontend.npfuncs``; ``pyasc.frontend.rules`` imports them
(which fills the table) and lists them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from pyasc.errors import InternalCompilerError, UnsupportedNumpyError

KINDS = ("function", "method", "attribute")


@dataclass(frozen=True)
class NumpyEntry:
    """One supported name: its handler, kind and documentation line."""

    name: str
    handler: Callable
    kind: str
    note: str

    @property
    def signature(self) -> str:
        """The accepted arguments, as Python spells them (``a, axis=None, ...``)."""
        params = list(inspect.signature(self.handler).parameters.values())[1:]
        if self.kind == "method":
            params = params[1:]
        if self.kind == "attribute":
            return ""
        return str(inspect.Signature(params))[1:-1]

    @property
    def display(self) -> str:
        if self.name.startswith("ndarray."):
            base = "x." + self.name.split(".", 1)[1]
        elif self.name.startswith(("math.", "pyasc.", "ml_dtypes.")):
            base = self.name
        else:
            base = "np." + self.name
        return base if self.kind == "attribute" else f"{base}({self.signature})"


REGISTRY: dict[str, NumpyEntry] = {}


def register(*names: str, kind: str = "function", note: str = "") -> Callable:
    """Register the decorated handler under ``names`` (``ndarray.x`` names are methods
    unless ``kind="attribute"``)."""
    assert kind in KINDS

    def deco(fn: Callable) -> Callable:
        for name in names:
            if not name.startswith("ndarray."):
                k = "function"  # np.shape(x) is a function even where x.shape is not
            else:
                k = "method" if kind == "function" else kind
            if name in REGISTRY:
                raise ValueError(f"numpy entry {name} registered twice")
            REGISTRY[name] = NumpyEntry(name, fn, k, note or (fn.__doc__ or "").strip()
                                        .split("\n")[0])
        return fn
    return deco


_filled = False


def mark_filled() -> None:
    """Called by ``pyasc.frontend.rules`` once every handler module is imported."""
    global _filled
    _filled = True


def _load() -> None:
    # the registry is filled by importing the rule modules (``pyasc.frontend.rules``,
    # which the compiler imports); a lookup before that is a pyasc bug, never an
    # "unsupported" answer to the user
    if not _filled:
        raise InternalCompilerError("the numpy registry was read before "
                                    "pyasc.frontend.rules was imported")


def find(name: str) -> NumpyEntry | None:
    """The registry entry of ``name``, or None if unsupported."""
    _load()
    return REGISTRY.get(name)


def lookup(name: str) -> NumpyEntry:
    """The registry entry of ``name`` (E50011 if unsupported)."""
    _load()
    entry = REGISTRY.get(name)
    if entry is None:
        what = f"x.{name[8:]}()" if name.startswith("ndarray.") else f"np.{name}"
        raise UnsupportedNumpyError(f"{what} is not supported")
    return entry


def call_numpy(lw, name: str, args: list[object], kwargs: dict[str, object]) -> object:
    """Call the handler of ``name`` with frontend values."""
    entry = lookup(name)
    try:
        bound = inspect.signature(entry.handler).bind(lw, *args, **kwargs)
    except TypeError as exc:
        raise UnsupportedNumpyError(f"{entry.display.split('(')[0]}(): {exc}",
                                    hint=f"supported: {entry.display}") from None
    return entry.handler(*bound.args, **bound.kwargs)


def call_method(lw, obj: object, name: str, args: list[object],
                kwargs: dict[str, object]) -> object:
    """Call array method ``obj.name(...)``."""
    return call_numpy(lw, f"ndarray.{name}", [obj, *args], kwargs)


def entries() -> list[NumpyEntry]:
    """Every registry entry, sorted as users spell them."""
    _load()
    return sorted(REGISTRY.values(), key=lambda e: e.display)
