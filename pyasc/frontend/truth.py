"""Truth values (``if x``, ``while x``, ``not x``, ``and``/``or``) of frontend values.

Compile-time values use Python's ``bool``; run-time scalars compare with zero (NaN is
true, as in Python); arrays are an error unless they have exactly one element, as in
numpy ("the truth value of an array with more than one element is ambiguous").
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pyasc.errors import PyascError, TypeMismatchError
from pyasc.frontend.values import Buffer, Scalar, Tensor
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.types import i1, index

if TYPE_CHECKING:
    from pyasc.frontend.lowering import Lowering


def truth(lw: Lowering, v: object) -> bool | Scalar:
    """``bool(v)``: a Python bool when known at compile time, else an ``i1`` Scalar."""
    if isinstance(v, Tensor | Buffer):
        v = _single_element(lw, v)
    if isinstance(v, Scalar):
        if v.type == i1:
            return v
        zero = lw.em.const(0.0 if v.type.is_float else 0, v.type).value
        return Scalar(lw.em.result(arith.CmpOp.new("ne", v.value, zero)), weak=v.weak)
    try:
        return bool(v)
    except (TypeError, ValueError) as exc:
        raise TypeMismatchError(f"cannot use {type(v).__name__} as a condition: {exc}") \
            from None


def condition(lw: Lowering, node: ast.expr) -> bool | Scalar:
    """The truth value of expression ``node`` (errors located at the expression)."""
    value = lw.expr(node)
    with lw.em.b.location(lw.src.location(node)):
        try:
            return truth(lw, value)
        except PyascError as exc:
            raise lw.src.locate(exc, node) from exc.__cause__


def _single_element(lw: Lowering, v: Tensor | Buffer) -> Scalar:
    t = v.type
    if not t.is_static or t.num_elements() != 1:
        raise TypeMismatchError(
            "the truth value of an array with more than one element is ambiguous",
            hint="use .any() or .all(), or compare a single element")
    zeros = [lw.em.const(0, index).value for _ in t.shape]
    op_cls = mem.LoadOp if isinstance(v, Buffer) else tensor.ExtractOp
    return Scalar(lw.em.result(op_cls([v.value, *zeros], [t.element])))


def logical_not(lw: Lowering, v: object) -> bool | Scalar:
    """Python ``not v``."""
    t = truth(lw, v)
    if isinstance(t, bool):
        return not t
    return Scalar(lw.em.result(arith.NotOp.new(t.value)), weak=True)
