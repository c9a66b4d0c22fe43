"""Names from outside the function (closure cells, module globals, builtins) and
attribute access (``np.float32``, ``math.pi``, ``x.shape``, ``x.sum``).

Free names are read when the function is compiled, as Triton reads ``constexpr``
globals: numbers, strings, None, tuples and lists of those (a list is copied: the
kernel sees its contents at compile time, see ``tables``), numpy dtypes and scalar types,
numpy scalars, small numpy arrays (embedded as dense constants), the ``numpy`` and
``math`` modules, other ``@hybrid`` functions, plain functions (compiled where they are
called, see ``plainfuncs``) and the fusion markers; any other module
is a namespace whose members follow the same rules (``pyasc.ops.conv2d``).  Anything else
is an error at the point of use.  A compiled specialization does not see later changes
of a global's value.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
import types

import numpy as np

from pyasc.errors import UndefinedNameError, UnsupportedNumpyError, UnsupportedSyntaxError
from pyasc.failures import RAISABLE
from pyasc.frontend.callee import Callee
from pyasc.frontend.fusion import marker_name
from pyasc.frontend.numpy_registry import find
from pyasc.frontend.values import BoundMethod, Buffer, NumpyFunction, Scalar, Tensor

MAX_EMBEDDED_ELEMENTS = 1 << 16
"""Largest global numpy array embedded as a constant."""

_INFO_ATTRIBUTES = frozenset({"eps", "max", "min", "tiny", "smallest_normal", "resolution",
                              "bits", "dtype", "precision"})

SUPPORTED_BUILTINS = frozenset({
    "range", "len", "min", "max", "abs", "int", "float", "bool", "round", "pow",
    "enumerate", "zip",
})


def resolve_free_name(lw, name: str, node: ast.AST) -> object:
    """The compile-time value of a name that is not local."""
    fn = lw.fn
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__:
        cell = fn.__closure__[code.co_freevars.index(name)]
        try:
            return _convert(lw, name, cell.cell_contents, node)
        except ValueError:
            raise lw.error(UndefinedNameError, f"free variable '{name}' is not bound yet",
                           node) from None
    if name in fn.__globals__:
        return _convert(lw, name, fn.__globals__[name], node)
    if hasattr(builtins, name):
        if name in SUPPORTED_BUILTINS or name in RAISABLE:  # exceptions: for ``raise``
            return getattr(builtins, name)
        raise lw.error(UnsupportedSyntaxError, f"the builtin '{name}' is not supported in "
                       "@hybrid functions", node,
                       hint="supported builtins: " + ", ".join(sorted(SUPPORTED_BUILTINS)))
    raise lw.error(UndefinedNameError, f"name '{name}' is not defined", node)


def _convert(lw, name: str, value: object, node: ast.AST) -> object:
    if isinstance(value, bool | int | float | str | type(None) | np.dtype | np.generic):
        return value
    if isinstance(value, tuple | list):  # a list: its value when compiled (a copy)
        return type(value)(_convert(lw, name, v, node) for v in value)
    if isinstance(value, types.ModuleType | Callee) or \
            marker_name(value) is not None:
        return value  # a module is a namespace: its members are read on access
    if isinstance(value, type) and issubclass(value, np.generic | bool | int | float):
        return value
    if value is itertools.product:  # a loop nest (``pybuiltins``)
        return value
    if isinstance(value, np.ndarray):
        if value.size > MAX_EMBEDDED_ELEMENTS:
            raise lw.error(UnsupportedSyntaxError, f"global array '{name}' is too large to "
                           "embed in the kernel", node, hint="pass it as an argument")
        return lw.em.constant_array(value) if value.ndim else value[()]
    imported = _imported_function(value)
    if imported is not None:
        return imported
    if isinstance(value, types.FunctionType):
        return value
    raise lw.error(UnsupportedSyntaxError, f"'{name}' is a {type(value).__name__}, which "
                   "@hybrid functions cannot use", node,
                   hint="use numbers, tuples, lists, numpy dtypes, small arrays or "
                        "functions from the enclosing scope")


def _module_attribute(lw, module: types.ModuleType, attr: str, node: ast.AST) -> object:
    """``module.attr`` (``pyasc.ops.conv2d``, ``mylib.EPS``): read when the function is
    compiled and taken by the rules of a global name."""
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise lw.error(UndefinedNameError, f"module '{module.__name__}' has no attribute "
                       f"'{attr}'", node) from None
    return _convert(lw, f"{module.__name__}.{attr}", value, node)


def _imported_function(value: object) -> NumpyFunction | None:
    """``from numpy import exp`` / ``from math import sqrt`` / ``pyasc.ops.erf`` (a
    function marked ``__pyasc_intrinsic__``): the registry entry."""
    intrinsic = getattr(value, "__pyasc_intrinsic__", None)
    if isinstance(intrinsic, str) and find(intrinsic) is not None:
        return NumpyFunction(intrinsic)
    name = getattr(value, "__name__", None)
    if not isinstance(name, str):
        return None
    if getattr(np, name, None) is value and find(name) is not None:
        return NumpyFunction(name)
    if getattr(np.linalg, name, None) is value and find(f"linalg.{name}") is not None:
        return NumpyFunction(f"linalg.{name}")
    if getattr(math, name, None) is value and find(f"math.{name}") is not None:
        return NumpyFunction(f"math.{name}")
    return None


def get_attribute(lw, obj: object, attr: str, node: ast.AST) -> object:
    """``obj.attr`` at compile time (``node``: the attribute expression)."""
    if obj is np:
        return _numpy_attribute(attr)
    if obj is np.linalg:
        return _submodule_attribute("linalg", attr)
    if obj is math:
        return _math_attribute(attr)
    if isinstance(obj, types.ModuleType):
        return _module_attribute(lw, obj, attr, node)
    if isinstance(obj, Tensor | Buffer | Scalar):
        key = f"ndarray.{attr}"
        entry = find(key)
        if entry is None:
            raise UnsupportedNumpyError(f"array attribute or method '.{attr}' is not "
                                        "supported")
        if entry.kind == "attribute":
            return entry.handler(lw, obj)
        return BoundMethod(obj, attr)
    if isinstance(obj, NumpyFunction) and find(f"{obj.name}.{attr}") is not None:
        return NumpyFunction(f"{obj.name}.{attr}")  # a ufunc method: np.add.at
    if isinstance(obj, NumpyFunction):
        raise UnsupportedNumpyError(f"{_spelled(obj.name)}.{attr} is not supported",
                                    hint=_UFUNC_METHOD_HINTS.get(attr, "call the function "
                                                                 "itself"))
    if isinstance(obj, list) and attr in ("append", "extend"):
        return BoundMethod(obj, attr)  # called through sequences.LIST_METHODS
    if isinstance(obj, np.dtype) and attr in ("itemsize", "kind", "name", "char", "type"):
        return getattr(obj, attr)
    if isinstance(obj, np.finfo | np.iinfo) and attr in _INFO_ATTRIBUTES:
        return getattr(obj, attr)
    raise UnsupportedSyntaxError(f"attribute '.{attr}' of {_describe(obj)} is not "
                                 "supported")


_UFUNC_METHOD_HINTS = {
    "at": "np.add, subtract, multiply, maximum and minimum have .at; for another "
          "ufunc write the loop, which applies it at repeated indices each time as .at "
          "does: for k in range(len(idx)): x[idx[k]] = f(x[idx[k]], v[k])",
    "reduce": "use the reduction function: np.sum, np.prod, np.max, np.min, np.all, np.any",
    "accumulate": "use np.cumsum, or a loop",
    "outer": "broadcast: a[:, None] * b",
}
"""What to write instead of a ufunc method (``np.add.at``...)."""


def _spelled(name: str) -> str:
    return name if name.startswith(("math.", "pyasc.")) else f"np.{name}"


def _describe(obj: object) -> str:
    """How the user would name the kind of ``obj`` (never a pyasc class name)."""
    if isinstance(obj, BoundMethod):
        return f"the method '.{obj.name}'"
    if isinstance(obj, Callee | types.FunctionType):
        return f"the function '{getattr(obj, '__name__', '?')}'"
    if isinstance(obj, tuple | list | str | int | float | bool | type(None)):
        return f"a {type(obj).__name__}"
    return _KIND_WORDS.get(type(obj).__name__, f"a {type(obj).__name__} value")


_KIND_WORDS = {
    "RangeValue": "a range", "TableRow": "a row of a constant table",
    "Product": "a loop-nest iterable (np.ndindex, itertools.product)",
    "Enumerate": "an enumerate object", "Zip": "a zip object",
}
"""Frontend values of the layers above, by class name, as the user knows them."""


def _numpy_attribute(attr: str) -> object:
    value = getattr(np, attr, None)
    if attr == "newaxis":
        return None
    if attr == "linalg":
        return np.linalg
    if isinstance(value, type) and issubclass(value, np.generic):
        return value  # a scalar type: a dtype, and callable as a conversion
    if find(attr) is not None:
        return NumpyFunction(attr)
    if isinstance(value, float | int) and not isinstance(value, bool):
        return value
    raise UnsupportedNumpyError(f"np.{attr} is not supported")


def _submodule_attribute(module: str, attr: str) -> object:
    """``np.linalg.norm``: the registry entry ``linalg.norm``."""
    if find(f"{module}.{attr}") is not None:
        return NumpyFunction(f"{module}.{attr}")
    raise UnsupportedNumpyError(f"np.{module}.{attr} is not supported")


def _math_attribute(attr: str) -> object:
    if find(f"math.{attr}") is not None:
        return NumpyFunction(f"math.{attr}")
    value = getattr(math, attr, None)
    if isinstance(value, float):
        return value
    raise UnsupportedNumpyError(f"math.{attr} is not supported")
