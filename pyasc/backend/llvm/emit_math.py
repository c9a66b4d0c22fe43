"""Emitters for ``math`` ops on scalars (numpy semantics).

Functions with an LLVM intrinsic use it (``llvm.exp``, ``llvm.sqrt``, ``llvm.roundeven``
...); the others call libm (``expm1f``, ``log1p``, ``tanhf``, ``erf``, ``tanf``), which the
JIT resolves in the running process.  Neither vectorizes well yet: LLVM turns a vector
``llvm.exp`` into one libm call per lane.  Expanding them into polynomial code the
vectorizer can see is a pass of its own (issue 5).  Integer ``pow`` calls a small helper
function emitted once per module and type (repeated squaring, wrapping like numpy).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter
from pyasc.backend.llvm.emit_arith import fe_intrinsic
from pyasc.backend.llvm.lltypes import I1, round_to
from pyasc.ir.ops import math as m
from pyasc.ir.types import ScalarType, element_type

Unary = Callable[[FunctionEmitter, ScalarType, ir.Value], ir.Value]

_INTRINSIC = {
    m.ExpOp: "llvm.exp", m.Exp2Op: "llvm.exp2", m.LogOp: "llvm.log", m.Log2Op: "llvm.log2",
    m.Log10Op: "llvm.log10", m.SqrtOp: "llvm.sqrt", m.SinOp: "llvm.sin",
    m.CosOp: "llvm.cos", m.FloorOp: "llvm.floor", m.CeilOp: "llvm.ceil",
    m.TruncOp: "llvm.trunc", m.RoundOp: "llvm.roundeven",
}
_LIBM = {m.Expm1Op: "expm1", m.Log1pOp: "log1p", m.TanhOp: "tanh", m.TanOp: "tan",
         m.AtanOp: "atan",
         m.ErfOp: "erf"}


def _libm(fe: FunctionEmitter, name: str, x: ir.Value) -> ir.Value:
    symbol = name + ("f" if isinstance(x.type, ir.FloatType) else "")
    fn = fe.mc.function(symbol, x.type, [x.type], ("nounwind", "readnone"))
    return fe.b.call(fn, [x])


def _unary_float(fe: FunctionEmitter, op: m.UnaryFloatOp) -> None:
    t = element_type(op.operand.type)
    x = fe.get(op.operand)
    cls = type(op)
    if cls in _INTRINSIC:
        y = fe_intrinsic(fe, _INTRINSIC[cls], x.type)(x)
    elif cls in _LIBM:
        y = _libm(fe, _LIBM[cls], x)
    else:
        y = _COMPOSITE[cls](fe, t, x)
    fe.set(op.result, round_to(fe.b, y, t))


def _rsqrt(fe: FunctionEmitter, t: ScalarType, x: ir.Value) -> ir.Value:
    root = fe_intrinsic(fe, "llvm.sqrt", x.type)(x)
    return fe.b.fdiv(ir.Constant(x.type, 1.0), root, flags=fe.mc.fastmath)


def _sigmoid(fe: FunctionEmitter, t: ScalarType, x: ir.Value) -> ir.Value:
    e = fe_intrinsic(fe, "llvm.exp", x.type)(fe.b.fneg(x))
    one = ir.Constant(x.type, 1.0)
    return fe.b.fdiv(one, fe.b.fadd(one, e, flags=fe.mc.fastmath), flags=fe.mc.fastmath)


_COMPOSITE: dict[type, Unary] = {m.RsqrtOp: _rsqrt, m.SigmoidOp: _sigmoid}


def _emit_abs(fe: FunctionEmitter, op: m.AbsOp) -> None:
    t = element_type(op.operand.type)
    x = fe.get(op.operand)
    if t.is_float:
        y = fe_intrinsic(fe, "llvm.fabs", x.type)(x)
    elif t.is_unsigned:
        y = x
    else:
        # numpy: abs(INT_MIN) == INT_MIN, so the "is_int_min_poison" flag is false
        fn = fe.mc.function(f"llvm.abs.i{x.type.width}", x.type, [x.type, I1])
        y = fe.b.call(fn, [x, ir.Constant(I1, 0)])
    fe.set(op.result, y)


def _emit_sign(fe: FunctionEmitter, op: m.SignOp) -> None:
    t = element_type(op.operand.type)
    x = fe.get(op.operand)
    b = fe.b
    if t.is_float:
        zero, one = ir.Constant(x.type, 0.0), ir.Constant(x.type, 1.0)
        # numpy: x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x  (NaN stays NaN)
        y = b.select(b.fcmp_ordered("==", x, zero), zero, x)
        y = b.select(b.fcmp_ordered("<", x, zero), ir.Constant(x.type, -1.0), y)
        y = b.select(b.fcmp_ordered(">", x, zero), one, y)
    elif t.is_unsigned:
        y = b.zext(b.icmp_unsigned("!=", x, ir.Constant(x.type, 0)), x.type)
    else:
        zero = ir.Constant(x.type, 0)
        pos = b.zext(b.icmp_signed(">", x, zero), x.type)
        neg = b.zext(b.icmp_signed("<", x, zero), x.type)
        y = b.sub(pos, neg)
    fe.set(op.result, y)


def _emit_classify(fe: FunctionEmitter, op: m.ClassifyOp) -> None:
    x = fe.get(op.operand)
    b = fe.b
    if isinstance(op, m.IsNanOp):
        fe.set(op.result, b.fcmp_unordered("uno", x, x))
        return
    mag = fe_intrinsic(fe, "llvm.fabs", x.type)(x)
    inf = ir.Constant(x.type, float("inf"))
    pred = "==" if isinstance(op, m.IsInfOp) else "<"
    fe.set(op.result, b.fcmp_ordered(pred, mag, inf))


def _emit_pow(fe: FunctionEmitter, op: m.PowOp) -> None:
    t = element_type(op.lhs.type)
    a, e = fe.get(op.lhs), fe.get(op.rhs)
    if t.is_float:
        y = round_to(fe.b, fe_intrinsic(fe, "llvm.pow", a.type)(a, e), t)
    else:
        y = fe.b.call(_ipow_function(fe, t, a.type), [a, e])
    fe.set(op.result, y)


def _ipow_function(fe: FunctionEmitter, t: ScalarType, ty: ir.IntType) -> ir.Function:
    """``pyasc.ipow.<t>(base, exp)``: numpy integer power with wrap-around."""
    name = f"__pyasc_ipow_{t.name}"
    existing = fe.mc.module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(fe.mc.module, ir.FunctionType(ty, [ty, ty]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    _build_ipow(fn, ty, signed=not t.is_unsigned)
    return fn


def _build_ipow(fn: ir.Function, ty: ir.IntType, signed: bool) -> None:
    base, exp = fn.args
    zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loop, body, done, negative = (fn.append_basic_block(n)
                                  for n in ("loop", "body", "done", "negative"))
    if signed:
        b.cbranch(b.icmp_signed("<", exp, zero), negative, loop)
    else:
        b.branch(loop)
    entry = b.block
    b.position_at_end(loop)
    acc = b.phi(ty)
    cur = b.phi(ty)
    e = b.phi(ty)
    acc.add_incoming(one, entry)
    cur.add_incoming(base, entry)
    e.add_incoming(exp, entry)
    b.cbranch(b.icmp_unsigned("!=", e, zero), body, done)
    b.position_at_end(body)
    odd = b.trunc(e, I1)
    acc2 = b.select(odd, b.mul(acc, cur), acc)
    cur2 = b.mul(cur, cur)
    e2 = b.lshr(e, one)
    for phi, v in ((acc, acc2), (cur, cur2), (e, e2)):
        phi.add_incoming(v, body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(acc)
    # negative exponent: 1 ** e == 1, (-1) ** e == +-1, anything else 0 (numpy raises)
    b.position_at_end(negative)
    odd_e = b.trunc(exp, I1)
    minus_one = ir.Constant(ty, -1)
    for_m1 = b.select(odd_e, minus_one, one)
    y = b.select(b.icmp_signed("==", base, one), one, zero)
    b.ret(b.select(b.icmp_signed("==", base, minus_one), for_m1, y))


def _emit_fma(fe: FunctionEmitter, op: m.FmaOp) -> None:
    """``llvm.fma``: one rounding (the host has FMA: ``expand-math`` emits the op only
    then, so this never becomes a libm call)."""
    a, b, c = (fe.get(v) for v in op.operand_values)
    fe.set(op.result, fe_intrinsic(fe, "llvm.fma", a.type)(a, b, c))


MATH_EMITTERS = {
    **{cls: _unary_float for cls in m.UNARY_FLOAT_OPS},
    m.AbsOp: _emit_abs,
    m.SignOp: _emit_sign,
    m.IsNanOp: _emit_classify,
    m.IsInfOp: _emit_classify,
    m.IsFiniteOp: _emit_classify,
    m.PowOp: _emit_pow,
    m.FmaOp: _emit_fma,
}
"""``{op class: emit function}`` for the ``math`` family."""
