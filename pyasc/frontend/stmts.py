"""Statement rules: assignments (plain, tuple, subscript, augmented), expression
statements, ``pass``, ``assert`` and nested ``def`` (a local function).

Augmented assignment follows Python's protocol: on a buffer name ``a += b`` is numpy's
in-place ``np.add(a, b, out=a)`` (``same_kind`` casting, the result must broadcast to
``a``'s shape); on anything else it rebinds the name to ``a + b``.
"""

from __future__ import annotations

import ast

from pyasc.errors import (
    PyascError,
    TypeMismatchError,
    UnsupportedSyntaxError,
)
from pyasc.frontend.control import as_i1
from pyasc.frontend.lowering import Lowering, hook, stmt_rule
from pyasc.frontend.operators import BINOP_UFUNCS, binary, in_place
from pyasc.frontend.plainfuncs import local_function
from pyasc.frontend.truth import condition
from pyasc.frontend.values import Buffer, Scalar, Tensor
from pyasc.ir.ops import func


@stmt_rule(ast.Assign)
def lower_assign(lw: Lowering, node: ast.Assign) -> None:
    """``a = b = value`` and tuple/subscript targets."""
    value = lw.expr(node.value)
    for target in node.targets:
        assign_target(lw, target, value)


@stmt_rule(ast.AnnAssign)
def lower_ann_assign(lw: Lowering, node: ast.AnnAssign) -> None:
    """``x: T = value`` (the annotation is ignored)."""
    if node.value is not None:
        assign_target(lw, node.target, lw.expr(node.value))


@hook("assign")
def assign_target(lw: Lowering, target: ast.expr, value: object) -> None:
    """Bind ``value`` to an assignment target (name, tuple, subscript)."""
    with lw.em.b.location(lw.src.location(target)):
        if isinstance(target, ast.Name):
            lw.bind(target.id, value)
        elif isinstance(target, ast.Tuple | ast.List):
            _unpack(lw, target, value)
        elif isinstance(target, ast.Subscript):
            from pyasc.frontend.indexing import store_subscript

            try:
                store_subscript(lw, target, value)
            except PyascError as exc:
                raise lw.src.locate(exc, target) from exc.__cause__
        else:
            raise lw.error(UnsupportedSyntaxError,
                           f"cannot assign to {type(target).__name__.lower()}", target,
                           hint="assign to names, tuples of names or array elements")


def _unpack(lw: Lowering, target: ast.Tuple | ast.List, value: object) -> None:
    items = _sequence(lw, value, target)
    stars = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
    n = len(target.elts)
    # (two starred names are Python's own SyntaxError: such a function never exists)
    if (not stars and len(items) != n) or len(items) < n - len(stars):
        raise lw.error(TypeMismatchError, _arity_message(len(items), n - len(stars), stars),
                       target, hint=f"the right side has {len(items)} value"
                       f"{'s' if len(items) != 1 else ''} here (a shape has one per "
                       "dimension): write as many names, or collect the rest with a "
                       "starred name (a, *rest = ...)")
    if stars:
        k = stars[0]
        tail = n - k - 1
        items = [*items[:k], list(items[k:len(items) - tail]), *items[len(items) - tail:]]
    for t, v in zip(target.elts, items, strict=True):
        assign_target(lw, t.value if isinstance(t, ast.Starred) else t, v)


def _arity_message(got: int, want: int, starred: list[int]) -> str:
    """Python's own words for an unpacking of the wrong length."""
    if got < want:
        more = " at least" if starred else ""
        return f"not enough values to unpack (expected{more} {want}, got {got})"
    return f"too many values to unpack (expected {want}, got {got})"


def _sequence(lw: Lowering, value: object, node: ast.AST) -> list[object]:
    if isinstance(value, tuple | list):
        return list(value)
    if isinstance(value, Tensor | Buffer) and value.type.rank and \
            isinstance(lw.em.dims(value)[0], int):
        from pyasc.frontend.indexing import load_index

        return [load_index(lw, value, (i,)) for i in range(lw.em.dims(value)[0])]
    raise lw.error(TypeMismatchError, f"cannot unpack {type(value).__name__}", node,
                   hint="unpack tuples, or arrays whose first dimension is static")


@stmt_rule(ast.AugAssign)
def lower_aug_assign(lw: Lowering, node: ast.AugAssign) -> None:
    """``a op= b``: in place on buffers, rebinding otherwise."""
    name = BINOP_UFUNCS.get(type(node.op))
    if isinstance(node.target, ast.Subscript):
        from pyasc.frontend.indexing import augmented_subscript

        augmented_subscript(lw, node, name)
        return
    if not isinstance(node.target, ast.Name):
        raise lw.error(UnsupportedSyntaxError, "augmented assignment to an attribute",
                       node.target)
    current = lw.lookup(node.target.id, node.target)
    rhs = lw.expr(node.value)
    if isinstance(current, Buffer):
        in_place(lw, name, current, rhs)
        return
    lw.bind(node.target.id, binary(lw, node.op, current, rhs))


@stmt_rule(ast.Expr)
def lower_expr_stmt(lw: Lowering, node: ast.Expr) -> None:
    """Expression statements (calls with ``out=``...); docstrings are skipped."""
    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return  # docstring
    lw.expr(node.value)


@stmt_rule(ast.Pass)
def lower_pass(lw: Lowering, node: ast.Pass) -> None:
    """``pass``."""
    return None


@stmt_rule(ast.Assert)
def lower_assert(lw: Lowering, node: ast.Assert) -> None:
    """``assert``: a run-time ``func.assert`` unless decided at compile time."""
    cond = condition(lw, node.test)
    if cond is True:
        return
    message = f"assertion failed: {ast.unparse(node.test)}"
    if node.msg is not None:
        msg = lw.expr(node.msg)
        if isinstance(msg, Scalar | Tensor | Buffer):
            raise lw.error(UnsupportedSyntaxError, "assert messages must be known at "
                           "compile time", node.msg)
        message = str(msg)
    lw.em.op(func.AssertOp([as_i1(lw, cond)], [], {"message": message, "kind": "assert"}))


@stmt_rule(ast.FunctionDef)
def lower_function_def(lw: Lowering, node: ast.FunctionDef) -> None:
    """A nested ``def``: a local function, inlined where it is called (``plainfuncs``);
    its defaults are evaluated here, as in Python."""
    if node.decorator_list:
        raise lw.error(UnsupportedSyntaxError, "a decorated nested function",
                       node.decorator_list[0], hint="define it without a decorator")
    lw.bind(node.name, local_function(lw, node))

