"""The AST walker: one :class:`Lowering` per function body being compiled.

Statements and expressions are lowered by rule functions registered per AST node class
in :data:`STMT_RULES` / :data:`EXPR_RULES` (the rule modules listed in
``pyasc.frontend.rules`` fill them; a rule recurses through the context,
``lw.expr(node)``, ``lw.stmt(node)``, ``lw.body(stmts)``, ``lw.assign(target, value)``,
never by importing another rule module).  :meth:`Lowering.expr` and
:meth:`Lowering.stmt` set the builder's location from the node before running its rule
(so every op carries ``loc(file:line:col)``), attach that location to any
:class:`PyascError` raised without one, and turn any other exception into a located
:class:`InternalCompilerError` chained to the original.

An inlined ``@hybrid`` callee gets its own ``Lowering`` (own scope, source and
locations) sharing the :class:`CompileUnit` (emitter, options, inline stack).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyasc.errors import (
    InternalCompilerError,
    PyascError,
    TypeMismatchError,
    UndefinedNameError,
    UnsupportedNumpyError,
    UnsupportedSyntaxError,
)
from pyasc.frontend.emit import Emitter
from pyasc.frontend.environment import resolve_free_name
from pyasc.frontend.names import (
    Loads,
    kept_names,
    local_names,
    storage_names,
    view_choices,
)
from pyasc.frontend.source import SourceInfo
from pyasc.frontend.values import Buffer, Scalar, Tensor, Undefined
from pyasc.ir.core import BlockArgument, OpResult, Value
from pyasc.ir.types import ScalarType

EXPR_RULES: dict[type, Callable[[Lowering, Any], object]] = {}
STMT_RULES: dict[type, Callable[[Lowering, Any], None]] = {}
HOOKS: dict[str, Callable[..., Any]] = {}
"""Rules the context itself calls: ``"body"`` (a statement list, guarding what follows
a jump: ``control``) and ``"assign"`` (bind an assignment target: ``stmts``)."""

RET, RV, BRK, CONT = "$ret", "$rv", "$brk", "$cont"
"""Hidden scope names: returned flag and value, break and continue flags."""


def expr_rule(*types: type) -> Callable:
    """Register the decorated function as the lowering of expression node ``types``."""
    def deco(fn: Callable) -> Callable:
        for t in types:
            EXPR_RULES[t] = fn
        return fn
    return deco


def stmt_rule(*types: type) -> Callable:
    """Register the decorated function as the lowering of statement node ``types``."""
    def deco(fn: Callable) -> Callable:
        for t in types:
            STMT_RULES[t] = fn
        return fn
    return deco


def hook(name: str) -> Callable:
    """Register the decorated function as the context's ``name`` rule (see HOOKS)."""
    def deco(fn: Callable) -> Callable:
        HOOKS[name] = fn
        return fn
    return deco


class NeedsConstant(Exception):  # noqa: N818 - control flow, not an error
    """A run-time value derived from these parameters (argument paths) was needed at
    compile time; the specializer retries with those arguments specialized by value."""

    def __init__(self, params: frozenset[tuple]) -> None:
        super().__init__(sorted(params))
        self.params = params


@dataclass
class CompileUnit:
    """State shared by the top-level function and its inlined callees."""

    em: Emitter
    options: dict[str, Any]
    param_index: dict[Value, tuple] = field(default_factory=dict)
    stack: list[object] = field(default_factory=list)
    # the call of each inlined callee of ``stack[1:]``: (the caller's lowering, node)
    sites: list[tuple[Any, ast.AST]] = field(default_factory=list)
    callees: dict[object, str] = field(default_factory=dict)
    # the callee of each undecorated function called (its source parsed once)
    plain: dict[object, Any] = field(default_factory=dict)
    # the lists made by a display and the block each may grow in (``sequences``)
    list_homes: dict[int, tuple[list, Any]] = field(default_factory=dict)
    counter: int = 0

    def fresh(self, stem: str) -> str:
        """A unique hidden name (``$iv3``)."""
        self.counter += 1
        return f"${stem}{self.counter}"

    def params_of(self, v: Value, seen: set[int] | None = None) -> frozenset[tuple] | None:
        """The parameters (argument paths) a value is computed from by pure ops, or
        ``None`` if it depends on anything else (a loop variable, a buffer read...)."""
        seen = set() if seen is None else seen
        if id(v) in seen:
            return frozenset()
        seen.add(id(v))
        if isinstance(v, BlockArgument):
            idx = self.param_index.get(v)
            # only a scalar argument is specialized by value on request: an array's
            # run-time size (dynamic_shape) stays run-time (but for a window loop's
            # trip count, which ``window_dims`` alone decides)
            scalar = isinstance(v.type, ScalarType)
            return None if idx is None or not scalar else frozenset({idx})
        assert isinstance(v, OpResult)
        if not v.op.has_trait("pure") or v.op.region_list:
            return None
        out: frozenset[tuple] = frozenset()
        for operand in v.op.operand_values:
            sub = self.params_of(operand, seen)
            if sub is None:
                return None
            out |= sub
        return out


class Lowering:
    """Lowers one function body into the unit's current insertion point."""

    def __init__(self, unit: CompileUnit, fn: Any, src: SourceInfo,
                 scope: dict[str, object]) -> None:
        self.unit = unit
        self.em = unit.em
        self.fn = fn
        self.src = src
        self.scope = scope
        self.storage = storage_names(src.tree)
        self.kept = kept_names(src.tree)
        self.view_choices = view_choices(src.tree, self.storage | self.kept)
        self.locals = local_names(src.tree)
        self.loads = Loads(src.tree)
        self.outer: Lowering | None = None  # a local function's definer (its free names)
        # run-time conditions around the code being lowered (``deferred``)
        self.guarded = 0

    # -- dispatch
    def expr(self, node: ast.expr) -> object:
        """Lower an expression; returns its frontend value."""
        return self._visit(EXPR_RULES, node)

    def stmt(self, node: ast.stmt) -> None:
        """Lower a statement."""
        self._visit(STMT_RULES, node)

    def _visit(self, rules: dict[type, Callable], node: ast.AST) -> Any:
        rule = rules.get(type(node))
        if rule is None:
            raise self.error(UnsupportedSyntaxError,
                             f"{describe_node(node)} is not supported in @hybrid functions",
                             node)
        with self.em.b.location(self.src.location(node)):
            try:
                return rule(self, node)
            except NeedsConstant:
                raise
            except PyascError as exc:
                raise self.src.locate(exc, node) from exc.__cause__
            except RecursionError as exc:
                raise self.error(UnsupportedSyntaxError, "expression nested too deeply",
                                 node) from exc
            except Exception as exc:
                err = InternalCompilerError(
                    f"unexpected {type(exc).__name__} while compiling this "
                    f"{describe_node(node)}: {exc}")
                raise self.src.locate(err, node) from exc

    def body(self, stmts: list[ast.stmt]) -> None:
        """Lower a statement list, guarding what follows a possible jump."""
        HOOKS["body"](self, stmts)

    def assign(self, target: ast.expr, value: object) -> None:
        """Bind an assignment target (a name, a subscript, a tuple to unpack)."""
        HOOKS["assign"](self, target, value)

    def error(self, cls: type[PyascError], message: str, node: ast.AST,
              hint: str | None = None) -> PyascError:
        """A coded error located at ``node`` of this function's source."""
        return self.src.error(cls, message, node, hint)

    # -- names
    def lookup(self, name: str, node: ast.AST) -> object:
        """The value of ``name``: local, closure cell, global or supported builtin."""
        if name in self.scope:
            value = self.scope[name]
            if isinstance(value, Undefined):
                raise self.error(UndefinedNameError, f"'{name}' {value.reason}", node,
                                 hint="assign it before the branch or loop, on every path")
            return value
        if name in self.locals:
            raise self.error(UndefinedNameError,
                             f"local variable '{name}' is used before it is assigned", node)
        if self.outer is not None:  # late binding, as a Python closure's cell
            return self.outer.lookup(name, node)
        return resolve_free_name(self, name, node)

    def bind(self, name: str, value: object) -> None:
        """Bind ``name``; a new array bound to a storage name gets its own buffer."""
        if isinstance(value, Tensor) and name in self.storage:
            if value.copied_view:  # a conditional expression's (merge.KEEP)
                raise TypeMismatchError(
                    f"'{name}' is a view of an array or an array of another dtype, "
                    "chosen at run time: it cannot stay a view, so writes through it or "
                    "into the array it views would be lost",
                    hint="give both sides the view's dtype (np.zeros(n, dtype=x.dtype)), "
                         "or copy the view (.copy())")
            value = self.em.store_new(value)
        self.scope[name] = value

    def static(self, value: object, what: str,
               error: type[PyascError] = UnsupportedNumpyError,
               hint: str | None = None) -> object:
        """``value`` as a compile-time Python value (else ``error`` with ``hint``:
        E50011 for a numpy argument, E50010 for Python syntax such as a tuple index).

        A run-time scalar computed only from scalar parameters asks the specializer to
        specialize on those parameters' values (see :class:`NeedsConstant`).
        """
        if isinstance(value, tuple | list):
            return type(value)(self.static(v, what, error, hint) for v in value)
        if not isinstance(value, Scalar | Tensor | Buffer):
            return value
        if isinstance(value, Scalar):
            params = self.unit.params_of(value.value)
            if params:
                raise NeedsConstant(params)
            if hint is None and from_run_time_dims(value.value, set()):
                hint = RUN_TIME_DIMS_HINT
        hint = "use a constant or a value computed from shapes" if hint is None else hint
        raise error(f"{what} must be known at compile time", hint=hint)


RUN_TIME_DIMS_HINT = ("under dynamic_shape=True array sizes are run-time values: compile "
                      "this function without dynamic_shape, or pass the size as a scalar "
                      "argument")
"""The hint of a compile-time need of an array's run-time dimension (only a window
loop's trip count is specialized by value, ``window_dims``)."""


def from_run_time_dims(v: Value, seen: set[int]) -> bool:
    """Whether ``v`` is computed (by pure ops) from a run-time dimension (``mem.dim``)."""
    if id(v) in seen or not isinstance(v, OpResult):
        return False
    seen.add(id(v))
    if v.op.name == "mem.dim":
        return True
    return v.op.has_trait("pure") and not v.op.region_list and \
        any(from_run_time_dims(x, seen) for x in v.op.operand_values)


_NODE_NAMES: dict[type, str] = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression", ast.Try: "try statement",
    ast.With: "with statement", ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement", ast.Delete: "del statement",
    ast.Yield: "yield", ast.YieldFrom: "yield from", ast.ClassDef: "class definition",
    ast.FunctionDef: "nested function definition", ast.Raise: "raise statement",
    ast.Import: "import statement", ast.ImportFrom: "import statement",
    ast.Dict: "dict display", ast.Set: "set display", ast.NamedExpr: "walrus operator",
    ast.Await: "await", ast.AsyncFor: "async for", ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "async function", ast.Match: "match statement",
}


def describe_node(node: ast.AST) -> str:
    """A readable name for an AST node class (``'lambda'``, ``'try statement'``)."""
    return _NODE_NAMES.get(type(node), type(node).__name__)
