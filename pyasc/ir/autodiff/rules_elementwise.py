"""Gradient rules of the elementwise ops (``arith``, ``math``): one small function each.

Adjoints are computed at the op's (broadcast) result shape; the sweep sums them back to
each operand's shape.  Ties of ``maximum``/``minimum`` split the gradient evenly between
the two operands (as torch and JAX do); piecewise-constant functions (``floor``,
``ceil``, ``round``, ``trunc``, ``sign``) have the zero gradient, as in torch and JAX.
"""

from __future__ import annotations

import math as pymath

from pyasc.ir.autodiff.registry import vjp_rule
from pyasc.ir.autodiff.sweep import Sweep
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, math
from pyasc.ir.types import element_type, shape_of

Douts = list[Value | None]


@vjp_rule(arith.AddOp)
def _add(sw: Sweep, op: Operation, d: Douts) -> list:
    return [d[0], d[0]]


@vjp_rule(arith.SubOp)
def _sub(sw: Sweep, op: Operation, d: Douts) -> list:
    return [d[0], sw.em.neg(d[0])]


@vjp_rule(arith.NegOp)
def _neg(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.neg(d[0])]


@vjp_rule(arith.MulOp)
def _mul(sw: Sweep, op: Operation, d: Douts) -> list:
    a, b = sw.v(op.lhs), sw.v(op.rhs)
    return [sw.em.mul(d[0], b), sw.em.mul(d[0], a)]


@vjp_rule(arith.DivOp)
def _div(sw: Sweep, op: Operation, d: Douts) -> list:
    em, b, out = sw.em, sw.v(op.rhs), sw.v(op.result)
    if shape_of(b.type) != shape_of(out.type):  # b broadcast: a row scalar, a scalar
        return _div_by_broadcast(sw, op, d[0])
    ga = em.div(d[0], b)
    return [ga, em.neg(em.mul(ga, out))]  # d(a/b)/db = -(a/b)/b


def _div_by_broadcast(sw: Sweep, op: Operation, dout: Value) -> list:
    """``a / b`` with ``b`` broadcast along some axes: ``r = 1 / b`` at ``b``'s own
    shape, ``da = dout * r`` and ``db = -sum(dout * a) * r * r``, the sum over the
    broadcast axes taken before scaling (``b`` is constant along them).  One division
    per element of ``b`` instead of three per element of the result, and the forward's
    quotient is no longer needed (its recomputation is dead in the backward)."""
    em, a, b = sw.em, sw.v(op.lhs), sw.v(op.rhs)
    r = em.div(em.scalar_like(1.0, b), b)
    summed = em.fit(em.mul(dout, a), b)
    return [em.mul(dout, r), em.neg(em.mul(em.mul(summed, r), r))]


@vjp_rule(arith.SelectOp)
def _select(sw: Sweep, op: Operation, d: Douts) -> list:
    em, c = sw.em, sw.v(op.cond)
    zero = em.scalar_like(0.0, d[0])
    return [None, em.select(c, d[0], zero), em.select(c, zero, d[0])]


@vjp_rule(arith.MaxOp, arith.MinOp)
def _extremum(sw: Sweep, op: Operation, d: Douts) -> list:
    """The gradient goes to the operand that is the result; half to each on a tie."""
    em = sw.em
    a, b = sw.v(op.lhs), sw.v(op.rhs)
    wins = "gt" if isinstance(op, arith.MaxOp) else "lt"
    one, half, zero = (em.scalar_like(k, d[0]) for k in (1.0, 0.5, 0.0))
    wa = em.select(em.cmp(wins, a, b), one, em.select(em.cmp("eq", a, b), half, zero))
    ga = em.mul(d[0], wa)
    return [ga, em.sub(d[0], ga)]


@vjp_rule(arith.CastOp)
def _cast(sw: Sweep, op: Operation, d: Douts) -> list:
    src = element_type(op.operand.type)
    return [sw.em.cast(d[0], src) if src.is_float else None]


@vjp_rule(math.ExpOp)
def _exp(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.mul(d[0], sw.v(op.result))]


@vjp_rule(math.Exp2Op)
def _exp2(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.scale(sw.em.mul(d[0], sw.v(op.result)), pymath.log(2.0))]


@vjp_rule(math.Expm1Op)
def _expm1(sw: Sweep, op: Operation, d: Douts) -> list:
    em = sw.em
    return [em.mul(d[0], em.add(sw.v(op.result), em.scalar_like(1.0, d[0])))]


@vjp_rule(math.LogOp)
def _log(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.div(d[0], sw.v(op.operand))]


@vjp_rule(math.Log2Op, math.Log10Op)
def _log_base(sw: Sweep, op: Operation, d: Douts) -> list:
    base = 2.0 if isinstance(op, math.Log2Op) else 10.0
    em = sw.em
    return [em.div(d[0], em.scale(sw.v(op.operand), pymath.log(base)))]


@vjp_rule(math.Log1pOp)
def _log1p(sw: Sweep, op: Operation, d: Douts) -> list:
    em = sw.em
    return [em.div(d[0], em.add(sw.v(op.operand), em.scalar_like(1.0, d[0])))]


@vjp_rule(math.SqrtOp)
def _sqrt(sw: Sweep, op: Operation, d: Douts) -> list:
    em = sw.em
    return [em.div(em.scale(d[0], 0.5), sw.v(op.result))]


@vjp_rule(math.RsqrtOp)
def _rsqrt(sw: Sweep, op: Operation, d: Douts) -> list:
    em = sw.em  # d x^-1/2 = -1/2 x^-3/2 = -1/2 out / x
    return [em.mul(em.scale(d[0], -0.5), em.div(sw.v(op.result), sw.v(op.operand)))]


@vjp_rule(math.TanhOp)
def _tanh(sw: Sweep, op: Operation, d: Douts) -> list:
    em, y = sw.em, sw.v(op.result)
    return [em.mul(d[0], em.sub(em.scalar_like(1.0, y), em.mul(y, y)))]


@vjp_rule(math.SigmoidOp)
def _sigmoid(sw: Sweep, op: Operation, d: Douts) -> list:
    em, y = sw.em, sw.v(op.result)
    return [em.mul(d[0], em.mul(y, em.sub(em.scalar_like(1.0, y), y)))]


@vjp_rule(math.ErfOp)
def _erf(sw: Sweep, op: Operation, d: Douts) -> list:
    em, x = sw.em, sw.v(op.operand)
    gauss = em.exp(em.neg(em.mul(x, x)))
    return [em.mul(d[0], em.scale(gauss, 2.0 / pymath.sqrt(pymath.pi)))]


@vjp_rule(math.SinOp)
def _sin(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.mul(d[0], sw.em.unary(math.CosOp, sw.v(op.operand)))]


@vjp_rule(math.CosOp)
def _cos(sw: Sweep, op: Operation, d: Douts) -> list:
    return [sw.em.neg(sw.em.mul(d[0], sw.em.unary(math.SinOp, sw.v(op.operand))))]


@vjp_rule(math.TanOp)
def _tan(sw: Sweep, op: Operation, d: Douts) -> list:
    em, y = sw.em, sw.v(op.result)
    return [em.mul(d[0], em.add(em.scalar_like(1.0, y), em.mul(y, y)))]


@vjp_rule(math.AtanOp)
def _atan(sw: Sweep, op: Operation, d: Douts) -> list:
    em, x = sw.em, sw.v(op.operand)
    return [em.div(d[0], em.add(em.scalar_like(1.0, x), em.mul(x, x)))]


@vjp_rule(math.AbsOp)
def _abs(sw: Sweep, op: Operation, d: Douts) -> list:
    """``sign(x)``: the gradient at 0 is 0 (as in torch and JAX)."""
    return [sw.em.mul(d[0], sw.em.unary(math.SignOp, sw.v(op.operand)))]


@vjp_rule(math.FloorOp, math.CeilOp, math.RoundOp, math.TruncOp, math.SignOp)
def _piecewise_constant(sw: Sweep, op: Operation, d: Douts) -> list:
    return [None]


@vjp_rule(math.PowOp)
def _pow(sw: Sweep, op: Operation, d: Douts) -> list:
    """``d x**y = y x**(y-1) dx + x**y log(x) dy`` (the ``dy`` term only when ``y`` is
    differentiated: it is NaN for a negative ``x``)."""
    em = sw.em
    x, y, out = sw.v(op.lhs), sw.v(op.rhs), sw.v(op.result)
    gx = em.mul(d[0], em.mul(y, em.pow(x, em.sub(y, em.scalar_like(1.0, y)))))
    gy = em.mul(d[0], em.mul(out, em.log(x))) if op.rhs in sw.active else None
    return [gx, gy]


@vjp_rule(math.FmaOp)
def _fma(sw: Sweep, op: Operation, d: Douts) -> list:
    a, b = sw.v(op.a), sw.v(op.b)
    return [sw.em.mul(d[0], b), sw.em.mul(d[0], a), d[0]]
