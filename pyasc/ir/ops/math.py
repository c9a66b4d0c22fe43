"""``math``: elementwise transcendental and rounding functions (numpy semantics).

Unary float ops: ``exp exp2 expm1 log log2 log10 log1p sqrt rsqrt tanh sin cos tan erf atan
floor ceil round trunc sigmoid``.  ``round`` rounds half to even (``np.round`` with
``decimals=0``); ``rsqrt(x) = 1/sqrt(x)``; ``sigmoid(x) = 1/(1+exp(-x))`` is produced by
pattern rewrites, not by the frontend.
``fma(a, b, c)`` is ``a * b + c`` rounded once (f32, f64; see :class:`FmaOp`).
``abs`` and ``sign`` take any numeric type; ``isnan isinf isfinite`` give ``i1``;
``pow`` is numpy ``power`` (integer ``pow`` with a negative exponent is an error in
numpy, which the frontend checks before the op; the op itself gives 0 there, except for
1 and -1 bases).
"""

from __future__ import annotations

from pyasc.ir.core import Location, Operation, Value
from pyasc.ir.ops.arith import BinaryOp, ElementwiseOp
from pyasc.ir.ops.common import check_elementwise_result, elementwise_type, require
from pyasc.ir.types import element_type, f32, f64, i1


class UnaryFloatOp(ElementwiseOp):
    operands = ("operand",)
    allowed = "float"


def _unary(op_name: str, cls_name: str, allowed: str = "float") -> type[ElementwiseOp]:
    cls = type(cls_name, (UnaryFloatOp,), {"name": op_name, "allowed": allowed,
                                           "__doc__": f"Elementwise ``{op_name}``."})
    cls.__module__ = __name__
    return cls


ExpOp = _unary("math.exp", "ExpOp")
Exp2Op = _unary("math.exp2", "Exp2Op")
Expm1Op = _unary("math.expm1", "Expm1Op")
LogOp = _unary("math.log", "LogOp")
Log2Op = _unary("math.log2", "Log2Op")
Log10Op = _unary("math.log10", "Log10Op")
Log1pOp = _unary("math.log1p", "Log1pOp")
SqrtOp = _unary("math.sqrt", "SqrtOp")
RsqrtOp = _unary("math.rsqrt", "RsqrtOp")
TanhOp = _unary("math.tanh", "TanhOp")
SinOp = _unary("math.sin", "SinOp")
CosOp = _unary("math.cos", "CosOp")
TanOp = _unary("math.tan", "TanOp")
ErfOp = _unary("math.erf", "ErfOp")
AtanOp = _unary("math.atan", "AtanOp")
FloorOp = _unary("math.floor", "FloorOp")
CeilOp = _unary("math.ceil", "CeilOp")
RoundOp = _unary("math.round", "RoundOp")
TruncOp = _unary("math.trunc", "TruncOp")
SigmoidOp = _unary("math.sigmoid", "SigmoidOp")
AbsOp = _unary("math.abs", "AbsOp", "numeric")
SignOp = _unary("math.sign", "SignOp", "numeric")


class PowOp(BinaryOp):
    """numpy ``power``."""

    name = "math.pow"


class FmaOp(ElementwiseOp):
    """``a * b + c`` rounded once (IEEE ``fusedMultiplyAdd``), ``f32`` or ``f64``.
    Emitted when the target has FMA (``PassContext.options["fma"]``) by ``expand-math``
    inside pyasc's own polynomials (f32) and by the matmul lowering (``matmul_fma``);
    user arithmetic is never contracted into it."""

    name = "math.fma"
    operands = ("a", "b", "c")
    allowed = "float"

    def verify_op(self) -> None:
        super().verify_op()
        require(element_type(self.a.type) in (f32, f64), "math.fma is defined on f32 and f64")


class ClassifyOp(Operation):
    """Base of the ``i1``-valued float predicates."""

    operands = ("operand",)
    results = ("result",)
    traits = frozenset({"pure"})

    @classmethod
    def new(cls, operand: Value, loc: Location | None = None) -> Operation:
        return cls([operand], [elementwise_type([operand.type], i1)], loc=loc)

    def verify_op(self) -> None:
        require(element_type(self.operand.type).is_float, "operand must be a float")
        check_elementwise_result(self, i1)


class IsNanOp(ClassifyOp):
    name = "math.isnan"


class IsInfOp(ClassifyOp):
    name = "math.isinf"


class IsFiniteOp(ClassifyOp):
    name = "math.isfinite"


UNARY_FLOAT_OPS = (ExpOp, Exp2Op, Expm1Op, LogOp, Log2Op, Log10Op, Log1pOp, SqrtOp,
                   RsqrtOp, TanhOp, SinOp, CosOp, TanOp, ErfOp, AtanOp, FloorOp, CeilOp, RoundOp,
                   TruncOp, SigmoidOp)
