"""What ``@hybrid`` can decorate, and a coded error naming everything else.

``@hybrid`` compiles a plain ``def`` function whose arguments are arrays and scalars.
Everything else is refused with :class:`UnsupportedSyntaxError` (E50010) naming the
construct and saying what to write instead: at decoration time for what the decorator
receives (a lambda, an ``async def``, a ``staticmethod`` or ``classmethod`` object, a
``functools.partial``, a builtin or ufunc, a class, any other callable), and at the first
call for a method, whose ``self`` is not an array: a ``HybridFunction`` stored directly
in a class body is told so by ``__set_name__``; one under ``@classmethod`` is recognised
by its first argument, the class.  The method errors point at the ``@hybrid`` line.
Generators are refused by the compiler at their ``yield``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from pyasc.errors import PyascError, UnsupportedSyntaxError

DEF_HINT = "write the operator as a 'def' function"
METHOD_HINT = ("make it a module-level function (or put @staticmethod above @hybrid) and "
               "pass the arrays it needs as arguments")

_OBJECTS: tuple[tuple[type | tuple[type, ...], str, str], ...] = (
    (staticmethod, "a staticmethod object",
     "write @staticmethod above @hybrid, so that @hybrid receives the function"),
    (classmethod, "a classmethod: its first argument is the class, not an array",
     METHOD_HINT),
    (functools.partial, "a functools.partial object",
     "decorate the 'def' function itself and pass every argument when calling it"),
    (types.MethodType, "a bound method: its first argument is the instance, not an array",
     METHOD_HINT),
    (type, "a class", DEF_HINT),
    ((types.BuiltinFunctionType, types.BuiltinMethodType), "a builtin function",
     "call it from inside a @hybrid 'def' function"),
)
"""(object types, what they are, hint) for what is not a Python function at all."""

_CODE_FLAGS = (
    (inspect.CO_COROUTINE, "an async function ('async def')"),
    (inspect.CO_ASYNC_GENERATOR, "an async generator ('async def' with 'yield')"),
)


def refusal(obj: object) -> UnsupportedSyntaxError | None:
    """The error for decorating ``obj`` with ``@hybrid``, or ``None`` if it is a plain
    ``def`` function (its body is checked when it compiles)."""
    if isinstance(obj, types.FunctionType):
        if obj.__name__ == "<lambda>":
            return UnsupportedSyntaxError("@hybrid cannot compile a lambda", hint=DEF_HINT)
        for flag, what in _CODE_FLAGS:
            if obj.__code__.co_flags & flag:
                return UnsupportedSyntaxError(
                    f"@hybrid cannot compile '{obj.__name__}': it is {what}",
                    hint="write the operator as a plain 'def' function")
        return None
    name = getattr(obj, "__name__", None) or type(obj).__name__
    for kinds, what, hint in _OBJECTS:
        if isinstance(obj, kinds):
            return UnsupportedSyntaxError(f"@hybrid cannot compile '{name}': it is {what}",
                                          hint=hint)
    return UnsupportedSyntaxError(
        f"@hybrid cannot compile '{name}': it is a {type(obj).__name__} object, not a "
        "'def' function", hint=DEF_HINT)


def defined_in_class(fn: Callable) -> bool:
    """Whether ``fn`` was defined in a class body (its qualified name says so)."""
    parts = getattr(fn, "__qualname__", "").split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def method_error(fn: types.FunctionType, classmethod_: bool = False) -> PyascError:
    """The error for calling ``fn``, a method, located at its ``@hybrid`` line."""
    what = "a classmethod: its first argument is the class" if classmethod_ else \
        "a method: its first argument is the instance"
    err = UnsupportedSyntaxError(f"@hybrid cannot compile '{fn.__qualname__}': it is "
                                 f"{what}, not an array", hint=METHOD_HINT)
    return _at_decorator(err, fn)


def _at_decorator(err: PyascError, fn: types.FunctionType) -> PyascError:
    from pyasc.frontend.source import load_source

    try:
        src = load_source(fn)
    except PyascError:  # no source: the line the code object starts at
        return err.with_location(fn.__code__.co_filename, fn.__code__.co_firstlineno, 0)
    decorators = src.tree.decorator_list
    node = next((d for d in decorators if _names_hybrid(d)), src.tree)
    return src.locate(err, node)


def _names_hybrid(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Name) and node.id == "hybrid" or \
        isinstance(node, ast.Attribute) and node.attr == "hybrid"


def called_as_classmethod(fn: types.FunctionType, arguments: dict[str, Any]) -> bool:
    """Whether a call's first argument is a class, as ``@classmethod`` passes it."""
    first = next(iter(arguments.values()), None)
    return defined_in_class(fn) and isinstance(first, type)
