"""Statement rules: assignments (plain, tuple, subscript, augmented), expression
statements, ``pass`` and ``assert``.

Augmented assignment follows Python's protocol: on a buffer name ``a += b`` is numpy's
in-place ``np.add(a, b, out=a)`` (``same_kind`` casting, the result must broadcast to
``a``'s shape); on anything else it rebinds the name to ``a + b``.
"""

from __future__ import annotations

import ast

import numpy as np

from pyasc.errors import (
    PyascError,
    ShapeInferenceError,
    TypeMismatchError,
    UnsupportedSyntaxError,
)
from pyasc.frontend.control import as_i1
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.lowering import Lowering, stmt_rule
from pyasc.frontend.promotion import element_of, is_weak
from pyasc.frontend.truth import condition
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime
from pyasc.ir.ops import func
from pyasc.ir.types import ScalarType, i1

BINOP_UFUNCS: dict[type, str] = {
    ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide",
    ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "power",
    ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
    ast.LShift: "left_shift", ast.RShift: "right_shift",
}
"""The numpy ufunc behind each Python binary operator (``@`` is handled apart)."""


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
    if len(stars) > 1 or (not stars and len(items) != n) or len(items) < n - len(stars):
        raise lw.error(TypeMismatchError,
                       f"cannot unpack {len(items)} values into {n} targets", target)
    if stars:
        k = stars[0]
        tail = n - k - 1
        items = [*items[:k], list(items[k:len(items) - tail]), *items[len(items) - tail:]]
    for t, v in zip(target.elts, items, strict=True):
        assign_target(lw, t.value if isinstance(t, ast.Starred) else t, v)


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


def binary(lw: Lowering, op: ast.operator, a: object, b: object) -> object:
    """``a <op> b`` with Python operator semantics."""
    if isinstance(op, ast.MatMult):
        from pyasc.frontend.numpy_registry import call_numpy

        return call_numpy(lw, "matmul", [a, b], {})
    if not is_runtime(a) and not is_runtime(b) and not (_numberish(a) and _numberish(b)):
        return _python_binary(op, a, b)
    if isinstance(op, ast.Pow) and is_runtime(a):
        return _power(lw, a, b)
    return apply_ufunc(lw.em, BINOP_UFUNCS[type(op)], [a, b], python_op=True)


def _power(lw: Lowering, a: object, b: object) -> object:
    """``a ** b`` as numpy computes it: an array to the Python int 2 is ``np.square``
    (``ndarray.__pow__``'s fast path, so a bool array squared is int8, not int64), and
    an integer base (not a Python int) to a negative Python int raises numpy's
    ``ValueError`` when it runs."""
    if isinstance(a, Tensor | Buffer) and type(b) is int and b == 2:
        return apply_ufunc(lw.em, "square", [a])
    base = element_of(a)
    if type(b) is int and b < 0 and not is_weak(a) and (base.is_int or base == i1):
        never = lw.em.const(False, i1)
        lw.em.op(func.AssertOp([never.value], [], {
            "message": "Integers to negative integer powers are not allowed.",
            "kind": "shape"}))
    return apply_ufunc(lw.em, "power", [a, b], python_op=True)


def _numberish(v: object) -> bool:
    return isinstance(v, int | float | np.generic)


def _python_binary(op: ast.operator, a: object, b: object) -> object:
    """Compile-time operators on other Python values (``(1,) * n``, tuple concatenation,
    string formatting)."""
    from pyasc.frontend.promotion import PY_OPERATORS

    try:
        return PY_OPERATORS[BINOP_UFUNCS[type(op)]](a, b)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise TypeMismatchError(f"{type(exc).__name__}: {exc}") from None


def in_place(lw: Lowering, name: str | None, buf: Buffer, rhs: object) -> None:
    """``buf <op>= rhs`` written into ``buf`` (numpy's ``out=`` rules)."""
    if name is None:
        raise UnsupportedSyntaxError("in-place matrix multiplication")
    result = apply_ufunc(lw.em, name, [buf, rhs])
    write_out(lw, result, buf, name)


def write_out(lw: Lowering, result: object, out: Buffer, what: str) -> None:
    """Write ``result`` into ``out`` as numpy's ``out=`` does (``same_kind`` casting)."""
    src = result.type if isinstance(result, Scalar) else result.type.element  # type: ignore
    dst: ScalarType = out.type.element
    if not np.can_cast(src.to_numpy(), dst.to_numpy(), "same_kind"):
        raise TypeMismatchError(
            f"cannot cast ufunc '{what}' output from {src.to_numpy()} to "
            f"{dst.to_numpy()} with casting rule 'same_kind'",
            hint="use an explicit .astype(...) and assignment")
    if isinstance(result, Tensor):
        dims = broadcast_dims(lw.em, [lw.em.dims(result), lw.em.dims(out)])
        if len(dims) != out.type.rank or any(
                isinstance(d, int) and isinstance(o, int) and d != o
                for d, o in zip(dims, lw.em.dims(out), strict=True)):
            raise ShapeInferenceError(
                f"non-broadcastable output operand with shape {out.type.shape} doesn't "
                f"match the broadcast shape {tuple(result.type.shape)}")
    lw.em.write(lw.em.cast(result, dst), out)  # type: ignore[arg-type]


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
