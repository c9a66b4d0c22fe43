"""Tensors of other array libraries as ``@hybrid`` arguments: an interface the jit defines.

The jit imports no tensor library (torch is optional and heavy).  A library's *adapter*
(``pyasc.torch.tensors`` for torch) turns one of its host tensors into an ndarray over
the same memory and wraps result arrays back into tensors, both without copies.  The
package face (``pyasc/__init__.py``), above the jit and the adapters, registers a loader
per library under the top-level module name of its tensor types (``"torch"``); the
adapter is imported the first time an argument of such a type is seen, which means the
library is already imported.  This module-level table is the jit's only link to the
adapters: filled once at ``import pyasc``, read on calls.

A call with tensor arguments (:func:`unwrap`) runs like the same call with their arrays;
the results (:meth:`Bridged.wrap`) become tensors when any argument was a tensor: arrays
and numpy scalars are wrapped, a returned argument is handed back as the caller's own
tensor, Python scalars and constants stay as they are.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from pyasc.callsite import at_caller, public_api
from pyasc.errors import ArgumentError, ToolchainMissingError
from pyasc.jit.arguments import Path
from pyasc.runtime import MISS


class Adapter(Protocol):
    """What the jit asks of a tensor library's adapter."""

    def takes(self, value: Any) -> bool:
        """Whether :func:`unwrap` converts ``value`` (``False``: the general argument
        rules of ``arguments.prepare`` apply, e.g. to a tensor on an NPU)."""

    def to_array(self, value: Any, path: Path) -> np.ndarray:
        """An ndarray over ``value``'s own memory (no copy, writable); raises
        :class:`ArgumentError` naming ``path`` for a tensor pyasc cannot take."""

    def wrap(self, result: Any) -> Any:
        """A tensor over the result array (or numpy scalar) ``result``, no copy."""

    def written(self, value: Any) -> None:
        """Record that a kernel wrote into ``value``'s memory (e.g. autograd's version
        counter), so the library sees an in-place change it did not make itself."""

    def autograd_op(self, fn: Any) -> Any:
        """``fn`` as a differentiable op of the library (backward: ``fn.vjp``)."""


Loader = Callable[[], Adapter]

_LOADERS: dict[str, Loader] = {}
"""Top-level module name of a library's tensor types -> loader of its adapter; set by
the ``pyasc`` package when imported (see the module docstring)."""
_LOADED: dict[str, Adapter] = {}


def provide(module: str, loader: Loader) -> None:
    """Register the adapter loader of the tensors whose type (or a base class of it) is
    defined in the package ``module``."""
    _LOADERS[module] = loader
    _LOADED.pop(module, None)


def load(module: str) -> Adapter:
    """The adapter registered under ``module``, imported now; E50030 if the library
    (or the registration) is missing."""
    adapter = _LOADED.get(module)
    if adapter is not None:
        return adapter
    try:
        return _LOADED.setdefault(module, _LOADERS[module]())
    except (KeyError, ImportError) as exc:
        raise ToolchainMissingError(
            f"{module} is needed here but cannot be imported ({exc})",
            hint=f"pip install 'pyasc-hybrid[{module}]'") from None


class TensorOps:
    """Tensor calls and ``fn.as_torch_op()`` of ``HybridFunction`` (a mixin: the function
    provides ``__signature__``, its call tables ``_calls``, ``_dispatch`` and ``_entry``)."""

    __signature__: inspect.Signature
    _calls: Any

    def _dispatch(self, args: tuple, kwargs: dict[str, Any]) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _entry(self, target: str, args: tuple, kwargs: dict[str, Any]) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _bridged(self, target: str, bridged: Bridged) -> Any:
        """A call with tensor arguments (``tensors``): the same call with their arrays,
        tensor results; the tensors the kernel may write are reported to their library."""
        args, kwargs = bridged.args, bridged.kwargs
        gen = self._calls.current
        entry = gen.find(target, gen.signature(args, kwargs))
        if entry is None:  # first call (or no signature, e.g. *args): the full path
            out = self._dispatch(args, kwargs)
            entry = self._entry(target, args, kwargs)[0]  # (built by now: a lookup)
        else:
            native = entry.native
            out = MISS if native is None or kwargs else native(*args)
            if out is MISS:
                out = entry.call(args, kwargs)
        bridged.written(entry.writes)
        return bridged.wrap(out)

    @functools.cached_property
    def _positional_names(self) -> tuple[tuple[str, ...], str | None]:
        """The positional parameters' names and the ``*args`` one (or ``None``)."""
        params = self.__signature__.parameters.values()
        var = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
        return tuple(p.name for p in params
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), var

    @public_api
    def as_torch_op(self) -> Any:
        """This function as a differentiable torch op whose backward is ``fn.vjp``:
        ``pyasc.torch.autograd_op(fn)``."""
        try:
            return load("torch").autograd_op(self)
        except ToolchainMissingError as exc:
            raise at_caller(exc) from None


def adapter_of(value: object) -> Adapter | None:
    """The adapter that takes ``value``, if any."""
    if not _LOADERS:
        return None
    for cls in type(value).__mro__[:-1]:  # (every class but ``object``)
        module = cls.__module__.partition(".")[0]
        if module in _LOADERS:
            adapter = load(module)
            return adapter if adapter.takes(value) else None
    return None


def is_tensor(value: object) -> bool:
    """Whether ``value`` is a tensor an adapter converts (an array argument)."""
    return type(value) is not np.ndarray and adapter_of(value) is not None


class Bridged:
    """A call whose tensor arguments were replaced by arrays over their memory."""

    __slots__ = ("adapter", "args", "kwargs", "tensors")

    def __init__(self, adapter: Adapter, args: tuple, kwargs: dict[str, Any],
                 tensors: dict[Path, tuple[Any, np.ndarray]]) -> None:
        self.adapter = adapter
        self.args = args
        self.kwargs = kwargs
        self.tensors = tensors  # argument path -> (the tensor, its array)

    def wrap(self, result: Any) -> Any:
        """``result`` with its arrays as tensors (see the module docstring)."""
        own = {id(a): t for t, a in self.tensors.values()}
        return _wrap(result, self.adapter, own)

    def written(self, paths: frozenset[tuple]) -> None:
        """Tell the adapter about the tensors at the argument ``paths`` a kernel may
        write into."""
        for path, (tensor, _) in self.tensors.items():
            if any(w[:len(path)] == path for w in paths):
                self.adapter.written(tensor)


def _wrap(value: Any, adapter: Adapter, own: dict[int, Any]) -> Any:
    t = type(value)
    if t is tuple or t is list:
        return t(_wrap(v, adapter, own) for v in value)
    if isinstance(value, np.ndarray):
        tensor = own.get(id(value))
        return tensor if tensor is not None else adapter.wrap(value)
    if isinstance(value, np.generic):
        return adapter.wrap(value)
    return value


def unwrap(names: tuple[tuple[str, ...], str | None], args: tuple, kwargs: dict[str, Any]
           ) -> Bridged | None:
    """The call with its tensors as arrays, or ``None`` when it has no tensor argument
    (an unsupported tensor is an :class:`ArgumentError` at the user's call).  ``names``:
    the positional parameters' names and the ``*args`` one: an argument's path is the
    path of its parameter in the bound call (``Entry.writes`` uses them)."""
    if not _LOADERS:
        return None
    found: dict[Path, tuple[Any, np.ndarray]] = {}
    adapters: list[Adapter] = []
    try:
        new_args = tuple(_unwrap(v, _position(names, i), found, adapters)
                         for i, v in enumerate(args))
        new_kwargs = {k: _unwrap(v, (k,), found, adapters) for k, v in kwargs.items()}
    except ArgumentError as exc:
        raise at_caller(exc) from None
    if not found:
        return None
    if any(a is not adapters[0] for a in adapters):
        raise at_caller(ArgumentError(
            "the arguments mix tensors of different libraries",
            hint="convert them to one library's tensors, or to numpy arrays"))
    return Bridged(adapters[0], new_args, new_kwargs, found)


def _position(names: tuple[tuple[str, ...], str | None], i: int) -> Path:
    positional, var = names
    if i < len(positional):
        return (positional[i],)
    return (var, i - len(positional)) if var is not None else (f"*{i}",)


def _unwrap(value: Any, path: Path, found: dict, adapters: list[Adapter]) -> Any:
    t = type(value)
    if t is np.ndarray or t in _SCALARS:
        return value
    if t is tuple or t is list:
        return t(_unwrap(v, (*path, i), found, adapters) for i, v in enumerate(value))
    adapter = adapter_of(value)
    if adapter is None:
        return value
    array = adapter.to_array(value, path)
    found[path] = (value, array)
    adapters.append(adapter)
    return array


_SCALARS = frozenset({bool, int, float, str, type(None)})
