"""What a ``@hybrid`` function compiles to, besides its call signature: its cache key.

A specialization's code is fixed by the function's source, the values of the names it
reads from outside (closure cells and module globals: constants, tuples, dtypes, small
arrays embedded as constants, other ``@hybrid`` functions, which are inlined), the call
signature, the options and the versions of pyasc, numpy and Python.  :func:`program_key`
digests all of them WITHOUT building any IR, so a kernel can be found in the disk cache
before the frontend runs.

Captured names are found in the code object: every name the body reads as a global or
attribute (``co_names``, a superset of the globals it uses) and every free variable, in
nested code objects too; of a captured module, the members named in ``co_names``
(``mylib.helper``: a helper compiled where it is called, or a constant).  Each value
is digested by kind (a table, below); an inlined ``@hybrid`` callee contributes its
own digest, recursively (a cycle, which the frontend rejects anyway, contributes its
name).  A value of a kind the frontend cannot use
contributes only its type: using it is a compile error, so no kernel depends on it.
"""

from __future__ import annotations

import inspect
import linecache
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import pyasc.version as version
from pyasc.frontend.callee import Callee

MAX_HASHED_BYTES = 1 << 22
"""Arrays larger than this (far beyond what the frontend embeds) contribute only their
dtype and shape."""

_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def program_key(hf: Any, spec_key: tuple, options: dict[str, Any]) -> str:
    """The cache key of one specialization of ``hf`` (``Program.cache_key``)."""
    import hashlib  # imported on first use: ``import pyasc`` stays light
    import json

    h = hashlib.sha256()
    h.update(function_digest(hf).encode())
    h.update(repr(spec_key).encode())
    h.update(json.dumps({k: v for k, v in options.items() if k != "cache"},
                        sort_keys=True, default=repr).encode())
    h.update(f"pyasc {version.__version__} numpy {np.__version__} "
             f"python {sys.version_info[:2]}".encode())
    return h.hexdigest()


def function_digest(hf: Any, _stack: tuple[int, ...] = ()) -> str:
    """Digest of ``hf``'s source, defaults and captured values (and its callees')."""
    import hashlib

    fn = hf.__wrapped__
    code = fn.__code__
    h = hashlib.sha256()
    h.update(f"{fn.__module__}.{fn.__qualname__}@{code.co_filename}:"
             f"{code.co_firstlineno}\n".encode())
    h.update(hf.key_source().encode())
    stack = (*_stack, id(fn))  # the plain function: a hybrid one and it are one cycle
    for name, default in _defaults(hf):
        h.update(f"\ndefault {name}=".encode() + value_digest(default, stack))
    for name, value in captured(fn):
        h.update(f"\n{name}=".encode() + value_digest(value, stack))
    for name, value in getattr(hf, "related", list)():  # an operator's methods
        h.update(f"\nmethod {name}=".encode() + value_digest(value, stack))
    grad = getattr(hf, "_grad", None)  # automatic differentiation of a caller uses it
    if grad is not None:
        h.update(b"\ndef_grad=" + value_digest(grad, stack))
    if getattr(fn, "__pyasc_fusion_group__", False):
        h.update(b"\nfusion_group")
    return h.hexdigest()


def _defaults(hf: Any) -> Iterator[tuple[str, object]]:
    for name, p in hf.__signature__.parameters.items():
        if p.default is not inspect.Parameter.empty:
            yield name, p.default


_UNBOUND = object()  # an unbound closure cell (digested as a plain ``object``)


def captured(fn: types.FunctionType) -> list[tuple[str, object]]:
    """``(name, value)`` of every closure cell and global the function may read, sorted
    by name; names not bound in either (builtins, attributes) are left out."""
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=False))
    out: dict[str, object] = {}
    names = _names(code)
    for name in names:
        if name in cells:
            try:
                out[name] = cells[name].cell_contents
            except ValueError:  # an unbound cell: the frontend reports it if used
                out[name] = _UNBOUND
        elif name in fn.__globals__:
            out[name] = fn.__globals__[name]
    for name, value in list(out.items()):
        if isinstance(value, types.ModuleType):
            out.update(_module_members(name, value, names, MODULE_DEPTH))
    return sorted(out.items())


MODULE_DEPTH = 3
"""How deep ``a.b.c.f`` a captured module's members are digested."""


def _module_members(prefix: str, module: types.ModuleType, names: set[str],
                    depth: int) -> dict[str, object]:
    """``{"mod.attr": value}`` for the names the code reads that ``module`` defines
    (``mylib.helper(x)``: the helper's source is in the key, as a global's is); read
    from the module's ``__dict__``, so no lazy import or ``__getattr__`` runs."""
    out: dict[str, object] = {}
    members = vars(module)
    for attr in names & members.keys():
        value = members[attr]
        out[f"{prefix}.{attr}"] = value
        if isinstance(value, types.ModuleType) and depth > 1:
            out.update(_module_members(f"{prefix}.{attr}", value, names, depth - 1))
    return out


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def value_digest(value: object, stack: tuple[int, ...] = ()) -> bytes:
    """A digest of one captured value, by kind (see the module docstring)."""
    encode = _BY_TYPE.get(type(value)) or _by_base(value)
    return encode(value, stack)


def _by_base(value: object) -> Callable[[Any, tuple[int, ...]], bytes]:
    if isinstance(value, Callee):  # a @hybrid function
        return _hybrid
    found = next((fn for cls, fn in _BY_BASE if isinstance(value, cls)), None)
    if found is not None:
        return found
    # numpy's functions are dispatcher objects: their names tell them apart
    return _named if callable(value) else _by_type_only


def _plain(value: object, stack: tuple[int, ...]) -> bytes:
    return f"{type(value).__name__}:{value!r}".encode()


def _sequence(value: Any, stack: tuple[int, ...]) -> bytes:
    parts = b",".join(value_digest(v, stack) for v in value)
    return type(value).__name__.encode() + b"(" + parts + b")"


def _array(value: Any, stack: tuple[int, ...]) -> bytes:
    head = f"ndarray:{value.dtype.str}:{value.shape}".encode()
    if value.nbytes > MAX_HASHED_BYTES or value.dtype.hasobject:
        return head
    import hashlib

    data = np.ascontiguousarray(value).tobytes()
    return head + b":" + hashlib.sha256(data).hexdigest().encode()


def _dtype(value: Any, stack: tuple[int, ...]) -> bytes:
    return f"dtype:{value.str}:{value.descr}".encode()


def _generic(value: Any, stack: tuple[int, ...]) -> bytes:
    return f"np:{value.dtype.str}:".encode() + value.tobytes()


def _type(value: Any, stack: tuple[int, ...]) -> bytes:
    return f"type:{value.__module__}.{value.__qualname__}".encode()


def _module(value: Any, stack: tuple[int, ...]) -> bytes:
    return f"module:{value.__name__}".encode()


def _function(value: Any, stack: tuple[int, ...]) -> bytes:
    """A plain function: its source and captures, as for a ``@hybrid`` one (the frontend
    compiles a plain helper where it is called: ``frontend/plainfuncs.py``)."""
    if id(value) in stack:
        return f"cycle:{value.__qualname__}".encode()
    return b"function:" + function_digest(_PlainFunction(value), stack).encode()


def _hybrid(value: Any, stack: tuple[int, ...]) -> bytes:
    if id(value.__wrapped__) in stack:
        return f"cycle:{value.__qualname__}".encode()
    return b"hybrid:" + function_digest(value, stack).encode()


def _named(value: Any, stack: tuple[int, ...]) -> bytes:
    """Builtins, ufuncs and other callables with a stable qualified name."""
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
    return f"callable:{module}.{name}".encode()


def _by_type_only(value: object, stack: tuple[int, ...]) -> bytes:
    return f"object:{type(value).__module__}.{type(value).__qualname__}".encode()


class _PlainFunction:
    """The attributes :func:`function_digest` reads, for a function without ``@hybrid``."""

    def __init__(self, fn: types.FunctionType) -> None:
        self.__wrapped__ = fn
        try:
            self.__signature__ = inspect.signature(fn)
        except (TypeError, ValueError):  # pragma: no cover - exotic callables
            self.__signature__ = inspect.Signature()

    def key_source(self) -> str:
        return source_text(self.__wrapped__)


def source_text(fn: types.FunctionType) -> str:
    """The lines of ``fn``'s definition in its file: from its first line (decorators
    included) to the last line its code has a position for, if the next code line of
    the file is not indented deeper (the definition really ends there); else, and when
    the file cannot be read, ``inspect``'s reading (which tokenizes the file, ~10 ms
    on first use).  Both give the same text for any function whose last line carries
    code, which is what :func:`parse_source` and the frontend compile."""
    code = fn.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    first, last = code.co_firstlineno, _last_line(code)
    block = lines[first - 1:last]
    if block and _ends_after(lines, last, _indent(block[0])):
        return "".join(block)
    try:
        return "".join(inspect.getsourcelines(fn)[0])
    except (OSError, TypeError):
        return ""


def _indent(line: str) -> int:
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


def _ends_after(lines: list[str], last: int, indent: int) -> bool:
    """Whether the first code line after line ``last`` is indented at most ``indent``."""
    for line in lines[last:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return _indent(line) <= indent
    return True


def parse_source(fn: types.FunctionType) -> Any:
    """``SourceInfo`` for ``fn`` from :func:`source_text` (the frontend's reading
    without ``inspect``), or ``None`` when that text is not exactly one function
    definition (``source.load_source`` then reads it, and reports any problem)."""
    import ast

    from pyasc.frontend.source import SourceInfo, parse_python

    text = source_text(fn)
    lines = text.splitlines(True)
    if not lines:
        return None
    wrapped = lines[0][:1] in (" ", "\t")
    filename = fn.__code__.co_filename
    try:
        module = parse_python("if 1:\n" + text if wrapped else text, filename)
    except (SyntaxError, ValueError):
        return None
    body = module.body[0].body if wrapped else module.body  # type: ignore[attr-defined]
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef):
        return None
    return SourceInfo(filename, max(fn.__code__.co_firstlineno, 1), lines, body[0], text,
                      wrapped)


def _last_line(code: types.CodeType) -> int:
    last = code.co_firstlineno
    for _, end, _, _ in code.co_positions():
        if end is not None and end > last:
            last = end
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


_BY_TYPE: dict[type, Callable[[Any, tuple[int, ...]], bytes]] = {
    **{t: _plain for t in _PLAIN}, tuple: _sequence, list: _sequence,
    np.ndarray: _array, types.ModuleType: _module, types.FunctionType: _function,
    types.BuiltinFunctionType: _named, np.ufunc: _named, object: _by_type_only,
}
"""Digest function of a captured value by exact type."""

_BY_BASE: list[tuple[type, Callable[[Any, tuple[int, ...]], bytes]]] = [
    (np.generic, _generic), (np.dtype, _dtype), (type, _type), (np.ndarray, _array),
]
"""... and by base class (numpy scalars, dtype classes, subclasses)."""

