"""Functions without ``@hybrid`` that a kernel calls: compiled as if decorated.

Three kinds, each a :class:`~pyasc.frontend.callee.Callee` that ``calls.inline``
lowers in place like a ``@hybrid`` callee (its own source lines in errors, the caller's
line as context, compile-time arguments kept compile-time):

* :class:`PlainFunction`: an ordinary ``def`` of the user's code, reached as a global,
  a closure cell or a module attribute (``gelu_tanh(x @ w + b)``).  Functions of the
  standard library and of installed packages (``site-packages``) and pyasc's own are
  not compiled: :func:`library_of` names their library for the error, since pyasc
  cannot know that their source is numpy-style code (decorate a function with
  ``@hybrid`` to have it compiled wherever it lives).
* :class:`LocalFunction`: a ``def`` or a ``lambda`` inside the function being compiled.
  Its free names are read from the enclosing function's scope *when it is called*, as
  Python's closures read their cells (late binding); it cannot rebind them (Python
  needs ``nonlocal`` for that, which is not supported).  Default values are evaluated
  where the ``def`` or ``lambda`` is, as in Python.

A plain function's source is covered by the caller's cache key (``jit.fingerprint``
digests a captured plain function by its source and its own captures), a local one's
by the caller's own source.
"""

from __future__ import annotations

import ast
import inspect
import sys
import sysconfig
from dataclasses import replace
from pathlib import Path
from types import FunctionType
from typing import Any

from pyasc.frontend.callee import Callee
from pyasc.frontend.source import SourceInfo, load_source


class PlainFunction(Callee):
    """An undecorated function of the user's code, compiled where it is called."""

    def __init__(self, fn: FunctionType) -> None:
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__wrapped__ = fn
        self.__signature__ = inspect.signature(fn)
        self._src: SourceInfo | None = None

    def __repr__(self) -> str:
        return f"<function {self.__qualname__} (compiled as if @hybrid)>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PlainFunction) and other.__wrapped__ is self.__wrapped__

    def __hash__(self) -> int:
        return hash(self.__wrapped__)

    def source_info(self) -> SourceInfo:
        if self._src is None:
            self._src = load_source(self.__wrapped__)
        return self._src

    def key_source(self) -> str:
        return self.source_info().text


class LocalFunction(Callee):
    """A ``def`` or ``lambda`` of the function being compiled (``definer``: the
    lowering of the body that defines it, whose names it reads when called)."""

    def __init__(self, node: ast.FunctionDef, src: SourceInfo, definer: Any,
                 signature: inspect.Signature) -> None:
        self.__name__ = node.name
        self.__qualname__ = node.name
        self.__wrapped__ = definer.fn  # its globals are the definer's
        self.__signature__ = signature
        self._src = replace(src, tree=node)
        self._definer = definer

    def __repr__(self) -> str:
        return f"<local function {self.__name__}>"

    def source_info(self) -> SourceInfo:
        return self._src

    def key_source(self) -> str:
        return self._src.text

    def enclosing(self) -> Any:
        return self._definer


def lambda_def(node: ast.Lambda, name: str) -> ast.FunctionDef:
    """``lambda args: body`` as ``def name(args): return body`` (same positions)."""
    ret = ast.Return(value=node.body)
    fn = ast.FunctionDef(name=name, args=node.args, body=[ret], decorator_list=[],
                         returns=None)
    for n in (ret, fn):
        ast.copy_location(n, node)
    return fn


def local_function(lw: Any, node: ast.FunctionDef) -> LocalFunction:
    """The value of a ``def`` (or a ``lambda`` as a ``def``) in the body ``lw`` lowers:
    its defaults are evaluated now, where it is defined, as in Python."""
    args = node.args
    defaults = [lw.expr(d) for d in args.defaults]
    kw_defaults = [None if d is None else lw.expr(d) for d in args.kw_defaults]
    return LocalFunction(node, lw.src, lw, signature_of(args, defaults, kw_defaults))


def signature_of(args: ast.arguments, defaults: list[object],
                 kw_defaults: list[object | None]) -> inspect.Signature:
    """The signature of a ``def``/``lambda`` with its defaults already evaluated."""
    P = inspect.Parameter  # noqa: N806
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(defaults)
    params = []
    for i, a in enumerate(positional):
        kind = P.POSITIONAL_ONLY if i < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        default = defaults[i - first_default] if i >= first_default else P.empty
        params.append(P(a.arg, kind, default=default))
    if args.vararg is not None:
        params.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, kw_defaults, strict=True):
        params.append(P(a.arg, P.KEYWORD_ONLY, default=P.empty if d is None else d))
    if args.kwarg is not None:
        params.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def library_of(fn: FunctionType) -> str | None:
    """The library a function belongs to (standard library, installed package or
    pyasc itself), or ``None`` for the user's own code."""
    module = fn.__module__ or ""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top == "pyasc":
        return top
    path = Path(fn.__code__.co_filename)
    if not path.is_absolute():
        return None  # a notebook cell, exec'd code: the user's
    return top or path.name if _installed(path) else None


def _installed(path: Path) -> bool:
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return True
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib") if k in paths}
    return any(path.is_relative_to(r) for r in roots)
