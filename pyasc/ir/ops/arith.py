"""``arith``: constants, arithmetic, comparison, selection and casts.

All ops here are elementwise over scalars or tensors with numpy broadcasting (see
``common``) and follow numpy's semantics for the operand dtype:

* ``add sub mul``: wrap around on integer overflow; not defined on ``i1``.
* ``div``: true division, floats only (the frontend casts ints first).
* ``floordiv`` / ``rem``: numpy ``floor_divide`` / ``remainder`` (the result of ``rem``
  takes the divisor's sign); integer division by zero gives 0, as numpy does.
* ``max`` / ``min``: numpy ``maximum`` / ``minimum`` (NaN propagates).
* ``and or xor``: bitwise on integers, logical on ``i1``.  ``shl shr``: integers;
  ``shr`` is arithmetic for signed types; shifting by >= bit width gives 0 (or -1 for a
  negative signed ``shr``), as numpy does.
* ``cmp``: ``predicate`` in eq/ne/lt/le/gt/ge, result ``i1``; NaN compares unequal.
* ``select(c, a, b)``: numpy ``where``.
* ``cast``: numpy ``astype`` (float->int truncates toward zero, int->int wraps, any->i1
  is ``!= 0``); out-of-range float->int is implementation-defined, as in C.
* ``bitcast``: same-width reinterpretation of the bits (numpy ``view``), e.g. f32 <-> i32.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pyasc.ir.core import DenseArray, Location, Operation, Value, attr
from pyasc.ir.ops.common import (
    check_elementwise_result,
    elementwise_type,
    require,
    same_element,
)
from pyasc.ir.types import ScalarType, TensorType, Type, element_type, i1

PURE = frozenset({"pure"})


class ConstantOp(Operation):
    """A scalar constant (``value`` int/float/bool) or a dense tensor constant."""

    name = "arith.constant"
    results = ("result",)
    attrs = {"value": attr(int, float, bool, DenseArray)}
    traits = frozenset({"pure", "constant"})

    @classmethod
    def new(cls, value: object, type_: Type, loc: Location | None = None) -> ConstantOp:
        if isinstance(type_, ScalarType):
            value = _coerce_scalar(value, type_)
        return cls([], [type_], {"value": value}, loc=loc)

    @property
    def value(self) -> object:
        return self.attributes["value"]

    def verify_op(self) -> None:
        t, v = self.result.type, self.value
        if isinstance(v, DenseArray):
            require(isinstance(t, TensorType) and v.type == t,
                    f"dense value of type {v.type} does not match result {t}")
            return
        require(isinstance(t, ScalarType), f"scalar value needs a scalar result, got {t}")
        assert isinstance(t, ScalarType)
        if t.is_bool:
            require(isinstance(v, bool), f"i1 constant must be true/false, got {v!r}")
        elif t.is_float:
            require(isinstance(v, float), f"{t} constant must be a float, got {v!r}")
        else:
            require(isinstance(v, int) and not isinstance(v, bool),
                    f"{t} constant must be an integer, got {v!r}")
            info = np.iinfo(t.to_numpy())
            require(info.min <= v <= info.max, f"{v} is out of range for {t}")


def _coerce_scalar(value: object, t: ScalarType) -> object:
    if t.is_bool:
        return bool(value)
    if t.is_float:
        return float(value)  # type: ignore[arg-type]
    return int(value)  # type: ignore[call-overload]


class ElementwiseOp(Operation):
    """Base of elementwise ops whose result element type equals the operands'.

    ``strict = true`` forbids reassociation and contraction of this op even when the
    function is compiled with ``fastmath=True``: expand-math marks the carefully ordered
    polynomial code it emits, whose accuracy depends on the evaluation order.
    """

    results = ("result",)
    attrs = {"strict": attr(bool, optional=True)}
    traits = PURE
    allowed: ClassVar[str] = "numeric"  # numeric | float | integer | logical | any

    @classmethod
    def new(cls, *operands: Value, loc: Location | None = None) -> Operation:
        elem = same_element([v.type for v in operands])
        return cls(list(operands), [elementwise_type([v.type for v in operands], elem)],
                   loc=loc)

    def verify_op(self) -> None:
        elem = same_element([v.type for v in self.operand_values])
        require(_kind_ok(elem, self.allowed), f"element type {elem} not allowed")
        check_elementwise_result(self, elem)


def _kind_ok(t: ScalarType, allowed: str) -> bool:
    return {
        "numeric": not t.is_bool,
        "float": t.is_float,
        "integer": t.is_int,
        "logical": t.is_int or t.is_bool,
        "any": True,
    }[allowed]


class BinaryOp(ElementwiseOp):
    operands = ("lhs", "rhs")


class AddOp(BinaryOp):
    name = "arith.add"
    traits = frozenset({"pure", "commutative"})


class SubOp(BinaryOp):
    name = "arith.sub"


class MulOp(BinaryOp):
    name = "arith.mul"
    traits = frozenset({"pure", "commutative"})


class DivOp(BinaryOp):
    name = "arith.div"
    allowed = "float"


class FloorDivOp(BinaryOp):
    name = "arith.floordiv"


class RemOp(BinaryOp):
    name = "arith.rem"


class MaxOp(BinaryOp):
    """numpy ``maximum``: NaN propagates; between equal values (``-0.0`` and ``0.0``) the
    operand :func:`first_wins_ties` says.  Not "commutative" for that reason."""

    name = "arith.max"


class MinOp(BinaryOp):
    """numpy ``minimum``: NaN propagates; ties as for :class:`MaxOp`."""

    name = "arith.min"


def first_wins_ties(t: ScalarType) -> bool:
    """Which operand numpy's ``maximum``/``minimum`` (and ``max``/``min`` reductions, the
    accumulator being first) return between equal floats, i.e. ``-0.0`` and ``0.0``:
    the first for float16 (numpy's generic loop, ``a >= b || isnan(a) ? a : b``), the
    second for float32 and float64 (its SIMD loops, ``a > b || isnan(a) ? a : b``)."""
    return t.name == "f16"


class AndOp(BinaryOp):
    name = "arith.and"
    allowed = "logical"
    traits = frozenset({"pure", "commutative"})


class OrOp(BinaryOp):
    name = "arith.or"
    allowed = "logical"
    traits = frozenset({"pure", "commutative"})


class XorOp(BinaryOp):
    name = "arith.xor"
    allowed = "logical"
    traits = frozenset({"pure", "commutative"})


class ShlOp(BinaryOp):
    name = "arith.shl"
    allowed = "integer"


class ShrOp(BinaryOp):
    name = "arith.shr"
    allowed = "integer"


class NegOp(ElementwiseOp):
    name = "arith.neg"
    operands = ("operand",)


class NotOp(ElementwiseOp):
    """Bitwise not on integers, logical not on ``i1``."""

    name = "arith.not"
    operands = ("operand",)
    allowed = "logical"


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


class CmpOp(Operation):
    """Elementwise comparison with result element type ``i1``."""

    name = "arith.cmp"
    operands = ("lhs", "rhs")
    results = ("result",)
    attrs = {"predicate": attr(str)}
    traits = PURE

    @classmethod
    def new(cls, predicate: str, lhs: Value, rhs: Value,
            loc: Location | None = None) -> CmpOp:
        same_element([lhs.type, rhs.type])
        return cls([lhs, rhs], [elementwise_type([lhs.type, rhs.type], i1)],
                   {"predicate": predicate}, loc=loc)

    def verify_op(self) -> None:
        require(self.attributes["predicate"] in CMP_PREDICATES,
                f"unknown predicate {self.attributes['predicate']!r}")
        same_element([v.type for v in self.operand_values])
        check_elementwise_result(self, i1)


class SelectOp(Operation):
    """``where(cond, a, b)`` with broadcasting of all three."""

    name = "arith.select"
    operands = ("cond", "true_value", "false_value")
    results = ("result",)
    traits = PURE

    @classmethod
    def new(cls, cond: Value, a: Value, b: Value, loc: Location | None = None) -> SelectOp:
        elem = same_element([a.type, b.type])
        t = elementwise_type([cond.type, a.type, b.type], elem)
        return cls([cond, a, b], [t], loc=loc)

    def verify_op(self) -> None:
        require(element_type(self.cond.type) == i1, "select condition must be i1")
        elem = same_element([self.true_value.type, self.false_value.type])
        check_elementwise_result(self, elem)


class CastOp(Operation):
    """Element type conversion with numpy ``astype`` semantics."""

    name = "arith.cast"
    operands = ("operand",)
    results = ("result",)
    traits = PURE

    @classmethod
    def new(cls, operand: Value, to: ScalarType, loc: Location | None = None) -> CastOp:
        t = operand.type
        result = to if isinstance(t, ScalarType) else TensorType(t.shape, to)  # type: ignore
        return cls([operand], [result], loc=loc)

    def verify_op(self) -> None:
        src, dst = self.operand.type, self.result.type
        to = element_type(dst)
        check_elementwise_result_shape = elementwise_type([src], to)
        require(check_elementwise_result_shape == dst,
                f"cast from {src} cannot produce {dst}")


class BitcastOp(CastOp):
    """Reinterpret the bits of each element as another type of the same bit width.

    Between float and integer types (and integers of equal width), e.g. ``f32 <-> i32``,
    ``f64 <-> i64``, ``f16 <-> i16``; not ``i1``.  A subclass of ``cast`` so that passes
    treating casts as elementwise ops (``lower-to-loops``) handle it; its semantics and
    emitters are its own (ops are dispatched on their exact class).
    """

    name = "arith.bitcast"

    def verify_op(self) -> None:
        super().verify_op()
        src, dst = element_type(self.operand.type), element_type(self.result.type)
        require(not src.is_bool and not dst.is_bool, "bitcast of i1 is not allowed")
        require(src.bitwidth == dst.bitwidth,
                f"bitcast needs equal bit widths, got {src} and {dst}")
