"""Python's binary operators on frontend values, and numpy's ``out=`` writes.

Helpers shared by the expression rules (``a + b``), the statement rules (``a += b``),
indexing (``x[i] += v``) and the numpy handlers (``out=``): :func:`binary` applies
Python operator semantics (numpy ufuncs for run-time values, Python itself for
compile-time ones), :func:`in_place` and :func:`write_out` follow numpy's
``same_kind`` casting and broadcasting rules for a destination buffer.
"""

from __future__ import annotations

import ast

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedSyntaxError
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.lowering import Lowering
from pyasc.frontend.numpy_registry import call_numpy
from pyasc.frontend.promotion import PY_OPERATORS, element_of
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime
from pyasc.ir.types import ScalarType

BINOP_UFUNCS: dict[type, str] = {
    ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide",
    ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "power",
    ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
    ast.LShift: "left_shift", ast.RShift: "right_shift",
}
"""The numpy ufunc behind each Python binary operator (``@`` is handled apart)."""


def binary(lw: Lowering, op: ast.operator, a: object, b: object) -> object:
    """``a <op> b`` with Python operator semantics."""
    if isinstance(op, ast.MatMult):
        return call_numpy(lw, "matmul", [a, b], {})
    if not is_runtime(a) and not is_runtime(b) and not (_numberish(a) and _numberish(b)):
        return _python_binary(op, a, b)
    if isinstance(op, ast.Pow) and is_runtime(a):
        return _power(lw, a, b)
    return apply_ufunc(lw.em, BINOP_UFUNCS[type(op)], [a, b], python_op=True)


def _power(lw: Lowering, a: object, b: object) -> object:
    """``a ** b`` as numpy computes it: an array to the Python int 2 is ``np.square``
    (``ndarray.__pow__``'s fast path, so a bool array squared is int8, not int64); an
    integer power to a negative exponent raises numpy's ``ValueError`` when it runs
    (``elementwise.apply_ufunc`` checks it)."""
    if isinstance(a, Tensor | Buffer) and type(b) is int and b == 2:
        return apply_ufunc(lw.em, "square", [a])
    base = element_of(a)
    p = apply_ufunc(lw.em, "power", [a, b], python_op=True)
    if isinstance(a, Tensor | Buffer) and base.name == "f16" and _weak_float(b):
        # ndarray.__pow__ takes sqrt for a Python float 0.5 before any loop runs (float16
        # too, whose loop has no such path): (-0)**0.5 = -0, (-inf)**0.5 = nan
        if not is_runtime(b):
            return apply_ufunc(lw.em, "sqrt", [a]) if b == 0.5 else p
        half = apply_ufunc(lw.em, "equal", [b, 0.5])
        return call_numpy(lw, "where", [half, apply_ufunc(lw.em, "sqrt", [a]), p], {})
    return p


def _weak_float(v: object) -> bool:
    """A Python float, compile-time or run-time (numpy's ``**`` fast path takes those)."""
    return type(v) is float or (isinstance(v, Scalar) and v.weak and element_of(v).is_float)


def _numberish(v: object) -> bool:
    return isinstance(v, int | float | np.generic)


def _python_binary(op: ast.operator, a: object, b: object) -> object:
    """Compile-time operators on other Python values (``(1,) * n``, tuple concatenation,
    string formatting)."""
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
