"""Calls: numpy functions and array methods (through the registry), supported Python
builtins, numpy scalar-type conversions (``np.float32(x)``) and callees: ``@hybrid``
functions, undecorated functions of the user's code and local ``def``/``lambda``
functions (``plainfuncs``), which are inlined: their body is lowered in place with a
fresh scope, their own source locations (an error there names the call as context) and
compile-time arguments kept compile-time.  Array arguments are passed by
reference: a buffer stays the same buffer, and an array value the callee writes into
gets a buffer that every caller name holding it is rebound to.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable

import numpy as np

from pyasc.callsite import library_file
from pyasc.errors import ArgumentError, PyascError, TypeMismatchError, UnsupportedSyntaxError
from pyasc.frontend.callee import Callee
from pyasc.frontend.custom_vjp import AUTODIFF_CALLS, inline_custom_vjp
from pyasc.frontend.fusion import marker_name
from pyasc.frontend.lowering import RET, RV, Lowering
from pyasc.frontend.numpy_registry import call_method, call_numpy
from pyasc.frontend.plainfuncs import PlainFunction, library_of
from pyasc.frontend.pybuiltins import BUILTIN_CALLS
from pyasc.frontend.sequences import LIST_METHODS
from pyasc.frontend.values import BoundMethod, Buffer, NumpyFunction, Tensor


def lower_call(lw: Lowering, node: ast.Call) -> object:
    """Lower ``f(args...)``: the callee and arguments are evaluated left to right."""
    callee = lw.expr(node.func)
    args: list[object] = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            args.extend(starred_items(lw, a))
        else:
            args.append(lw.expr(a))
    kwargs: dict[str, object] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise lw.error(UnsupportedSyntaxError, "**kwargs in a call", kw.value)
        kwargs[kw.arg] = lw.expr(kw.value)
    return _dispatch(lw, callee, args, kwargs, node)


def _dispatch(lw: Lowering, callee: object, args: list[object], kwargs: dict[str, object],
              node: ast.Call) -> object:
    if isinstance(callee, NumpyFunction):
        return call_numpy(lw, callee.name, args, kwargs)
    if isinstance(callee, BoundMethod) and isinstance(callee.obj, list):
        return LIST_METHODS[callee.name](lw, callee.obj, *args, **kwargs)
    if isinstance(callee, BoundMethod):
        return call_method(lw, callee.obj, callee.name, args, kwargs)
    if isinstance(callee, Callee):
        return inline(lw, callee, args, kwargs, node)
    builtin: Callable | None = BUILTIN_CALLS.get(callee)  # type: ignore[arg-type]
    if builtin is not None:
        return builtin(lw, *args, **kwargs)
    if isinstance(callee, type) and issubclass(callee, np.generic):
        name = np.dtype(callee).name  # ml_dtypes' bfloat16 is registered under its module
        if callee.__module__ == "ml_dtypes":
            name = f"ml_dtypes.{name}"
        return call_numpy(lw, name, args, kwargs)
    marker = marker_name(callee)
    if marker is not None:
        raise lw.error(UnsupportedSyntaxError, f"{marker} is only valid as "
                       "'with fusion_scope():' or as a decorator", node)
    if isinstance(callee, types.FunctionType):
        return inline(lw, _plain_function(lw, callee, node), args, kwargs, node)
    raise lw.error(UnsupportedSyntaxError, f"calling a {type(callee).__name__} is not "
                   "supported", node.func)


def _plain_function(lw: Lowering, fn: types.FunctionType, node: ast.Call) -> Callee:
    """An undecorated function, compiled as if decorated, unless it is a library's."""
    library = library_of(fn)
    if library is not None:
        raise lw.error(UnsupportedSyntaxError,
                       f"'{fn.__name__}' is a function of '{library}', which pyasc does "
                       "not compile", node.func,
                       hint="use a supported numpy function (pyasc.supported_numpy()), or "
                            "write the computation in a function of your own")
    if fn not in lw.unit.plain:
        lw.unit.plain[fn] = PlainFunction(fn)
    return lw.unit.plain[fn]


def inline(lw: Lowering, hf: Callee, args: list[object], kwargs: dict[str, object],
           node: ast.Call) -> object:
    """Lower the body of callee ``hf`` (``@hybrid``, plain or local) in place; returns
    its value.  An error inside it, at its own line, names this call as context."""
    try:
        grad = hf.registered_gradient() if lw.unit.options.get(AUTODIFF_CALLS) else None
        if grad is not None:  # kept whole for automatic differentiation
            return inline_custom_vjp(lw, hf, grad, args, kwargs, node, _inline)
        return _inline(lw, hf, args, kwargs, node)
    except PyascError as exc:
        raise _called_from(lw, exc, hf, node) from exc.__cause__


def _called_from(lw: Lowering, exc: PyascError, hf: Callee, node: ast.Call) -> PyascError:
    """``exc`` with a note naming the call of ``hf`` (not when the error is at that
    call, nor for a call inside pyasc's own library, which the user did not write)."""
    if exc.lineno is not None and not library_file(lw.src.filename) and \
            (exc.filename, exc.lineno) != (lw.src.filename, lw.src.lineno(node)):
        site = lw.src.location(node)
        exc.add_context(f"in '{hf.__name__}', called at {site.file}:{site.line}:"
                        f"{site.col}: {lw.src.line_text(node).strip()}")
    return exc


def _inline(lw: Lowering, hf: Callee, args: list[object], kwargs: dict[str, object],
            node: ast.Call) -> object:
    from pyasc.frontend.lowering import Lowering as _Lowering

    if hf in lw.unit.stack:
        raise lw.error(UnsupportedSyntaxError,
                       f"recursive call to function '{hf.__name__}'", node,
                       hint="rewrite the recursion as a loop")
    try:
        bound = hf.__signature__.bind(*args, **kwargs)
    except TypeError as exc:
        raise lw.error(ArgumentError, f"{hf.__name__}(): {exc}", node) from None
    bound.apply_defaults()
    src = hf.source_info()
    lw.unit.callees[hf] = src.text
    child = _Lowering(lw.unit, hf.__wrapped__, src, {RET: False})
    child.outer = hf.enclosing()  # type: ignore[assignment]
    child.scope.update(hf.bindings())
    for name in hf.shared:  # type: ignore[attr-defined]
        child.scope[name] = lw.lookup(name, node)
    for name, value in bound.arguments.items():
        if isinstance(value, Tensor) and name in child.storage:
            if value.copied_view:  # the callee would write into a copy
                raise lw.error(TypeMismatchError, f"{hf.__name__}() writes into its "
                               f"argument '{name}', which may be a view of another array "
                               "(chosen at run time) that is a copy here: the write would "
                               "be lost", node,
                               hint="write into the array in this function too (it then "
                                    "stays a view), or pass a copy (x.copy())")
            value = make_writable(lw, value)
        child.scope[name] = value
    lw.unit.stack.append(hf)
    lw.unit.sites.append((lw, node))
    try:
        return run_body(child)
    finally:
        lw.unit.stack.pop()
        lw.unit.sites.pop()


def make_writable(lw: Lowering, value: Tensor) -> Buffer:
    """A callee writes into an array the caller holds as a value: give the array a
    buffer and rebind every caller name holding it, so they all see the writes (they
    are one numpy object), also as an item of a list or tuple a name holds."""
    buf = lw.em.store_new(value)
    for name, bound in list(lw.scope.items()):
        lw.scope[name] = _rebound(bound, value, buf)
    return buf


def _rebound(bound: object, value: Tensor, buf: Buffer) -> object:
    """``bound`` with ``value`` replaced by ``buf`` (lists in place: other names and
    lists may hold the same list object)."""
    if isinstance(bound, Tensor):
        return buf if bound.value is value.value else bound
    if isinstance(bound, list):
        bound[:] = [_rebound(x, value, buf) for x in bound]
        return bound
    if isinstance(bound, tuple):
        items = tuple(_rebound(x, value, buf) for x in bound)
        return bound if all(a is b for a, b in zip(items, bound, strict=True)) else items
    return bound


def run_body(lw: Lowering) -> object:
    """Lower a whole function body; returns the returned value (None if none).

    A function that returns a value on some paths and falls off its end on others
    returns None there in Python: a value of another type, which compiled code cannot
    return, so it is a compile-time error (never a silently different result)."""
    lw.body(lw.src.tree.body)
    value = lw.scope.get(RV)
    if value is not None and lw.scope.get(RET) is not True:
        body = lw.src.tree.body
        raise lw.error(TypeMismatchError,
                       f"'{lw.src.tree.name}' returns a value on some paths but reaches the "
                       "end of the function on others (where Python returns None)",
                       body[-1] if body else lw.src.tree,
                       hint="end the function with an explicit 'return ...' that every "
                            "path reaches, or return a value from every branch")
    return value


def starred_items(lw: Lowering, node: ast.Starred) -> list[object]:
    """The items of ``*value`` (a compile-time sequence)."""
    value = lw.expr(node.value)
    if not isinstance(value, tuple | list):
        raise lw.error(UnsupportedSyntaxError, f"cannot unpack {type(value).__name__} "
                       "with *", node, hint="unpack tuples known at compile time")
    return list(value)
