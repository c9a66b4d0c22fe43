"""Every rule module of the frontend, in one list.

The frontend is one dispatcher (``lowering.Lowering``: AST node class -> rule, plus
the context's own hooks) and the numpy registry (``numpy_registry``: name -> handler);
the modules below fill them when imported.  This is the one place that imports them:
adding a rule module means adding it here.  Rule modules import helpers
(``control``, ``merge``, ``truth``, ``operators``, ``elementwise``, ``indexing``,
``advanced``, ``slicing``, ``iteration``, ``calls``, ``pybuiltins``, ``npfuncs.common``)
and the context, never each other: a rule reaches another through the context
(``lw.expr``, ``lw.stmt``, ``lw.body``, ``lw.assign``) or the registry
(``call_numpy(lw, "transpose", ...)``).
"""

from __future__ import annotations

from types import ModuleType

from pyasc.frontend import exprs, flow, numpy_registry, raising, stmts
from pyasc.frontend.npfuncs import (
    accumulate,
    arrange,
    creation,
    einsum,
    indices,
    linalg,
    logic,
    matrices,
    nanfuncs,
    reductions,
    shapes,
    sorting,
    statistics,
    ufuncs,
    unique,
)

SYNTAX_RULES: tuple[ModuleType, ...] = (exprs, stmts, flow, raising)
"""Rules by AST node class: expressions, simple statements, control flow, ``raise``."""

NUMPY_RULES: tuple[ModuleType, ...] = (creation, ufuncs, reductions, shapes, linalg, sorting,
                                       arrange, nanfuncs, indices, einsum,
                                       statistics, accumulate, matrices, logic, unique)
"""Handlers of numpy functions, array methods and attributes, by family."""

numpy_registry.mark_filled()


def supported_numpy() -> dict[str, str]:
    """Every supported numpy function, array method and attribute with its arguments.

    Keys are spelled as in user code (``np.sum``, ``x.reshape``, ``x.shape``,
    ``math.sqrt``); values are the accepted arguments.
    """
    return {e.display.split("(")[0]: e.signature for e in numpy_registry.entries()}
