"""Emitters for ``arith`` ops on scalars, with numpy semantics and no LLVM UB or poison.

Integer division and remainder never divide by 0 or overflow (``b == 0`` gives 0, ``b ==
-1`` is done as a negation); shift amounts are range-checked before shifting; float ->
int casts are computed only for in-range inputs and otherwise give the "integer
indefinite" value x86 (and hence numpy there) produces.  ``f16``/``bf16`` ops run in
``float`` and round the result (see ``lltypes``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter
from pyasc.backend.llvm.lltypes import (
    F32,
    F64,
    compute_type,
    const,
    from_storage,
    round_to,
    storage_type,
    to_storage,
)
from pyasc.ir.ops import arith
from pyasc.ir.types import ScalarType, element_type

Binary = Callable[[FunctionEmitter, ScalarType, ir.Value, ir.Value], ir.Value]


def _zero(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, 0.0 if isinstance(ty, ir.FloatType | ir.DoubleType) else 0)


def _float_op(name: str) -> Binary:
    def emit(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
        return round_to(fe.b, getattr(fe.b, name)(a, b, flags=fe.mc.fastmath), t)
    return emit


def _int_or_float(int_name: str, float_name: str) -> Binary:
    fop = _float_op(float_name)

    def emit(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
        if t.is_float:
            return fop(fe, t, a, b)
        return getattr(fe.b, int_name)(a, b)
    return emit


# ------------------------------------------------------------------ division


def _safe_divisor(fe: FunctionEmitter, t: ScalarType, b: ir.Value) -> tuple:
    """(divisor that cannot trap, b == 0, b == -1 for signed types)."""
    bld = fe.b
    one = ir.Constant(b.type, 1)
    bz = bld.icmp_unsigned("==", b, _zero(b.type))
    if not t.is_signed and not t.is_index:
        return bld.select(bz, one, b), bz, None
    bm1 = bld.icmp_signed("==", b, ir.Constant(b.type, -1))
    return bld.select(bld.or_(bz, bm1), one, b), bz, bm1


def _int_floordiv(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
    bld = fe.b
    safe, bz, bm1 = _safe_divisor(fe, t, b)
    zero = _zero(a.type)
    if bm1 is None:
        return bld.select(bz, zero, bld.udiv(a, safe))
    q = bld.sdiv(a, safe)
    r = bld.srem(a, safe)
    adjust = bld.and_(bld.icmp_signed("!=", r, zero),
                      bld.icmp_signed("<", bld.xor(r, b), zero))
    q = bld.sub(q, bld.zext(adjust, a.type))
    q = bld.select(bm1, bld.sub(zero, a), q)
    return bld.select(bz, zero, q)


def _int_rem(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
    bld = fe.b
    safe, bz, bm1 = _safe_divisor(fe, t, b)
    zero = _zero(a.type)
    if bm1 is None:
        return bld.select(bz, zero, bld.urem(a, safe))
    r = bld.srem(a, safe)
    adjust = bld.and_(bld.icmp_signed("!=", r, zero),
                      bld.icmp_signed("<", bld.xor(r, b), zero))
    r = bld.select(adjust, bld.add(r, b), r)
    return bld.select(bld.or_(bz, bm1), zero, r)


def _float_divmod(fe: FunctionEmitter, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """numpy's ``npy_divmod`` for non-zero ``b``: (floor quotient, remainder)."""
    bld, fm = fe.b, fe.mc.fastmath
    ty = a.type
    zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
    mod = bld.frem(a, b)
    div = bld.fdiv(bld.fsub(a, mod, flags=fm), b, flags=fm)
    mod_nz = bld.fcmp_unordered("!=", mod, zero)
    signs_differ = bld.icmp_unsigned("!=", bld.fcmp_ordered("<", b, zero),
                                     bld.fcmp_ordered("<", mod, zero))
    fix = bld.and_(mod_nz, signs_differ)
    mod = bld.select(fix, bld.fadd(mod, b), mod)
    div = bld.select(fix, bld.fsub(div, one), div)
    mod = bld.select(mod_nz, mod, _copysign(fe, zero, b))
    floor = fe_intrinsic(fe, "llvm.floor", ty)(div)
    floor = bld.select(bld.fcmp_ordered(">", bld.fsub(div, floor), ir.Constant(ty, 0.5)),
                       bld.fadd(floor, one), floor)
    div_nz = bld.fcmp_unordered("!=", div, zero)
    quot = bld.select(div_nz, floor, _copysign(fe, zero, bld.fdiv(a, b)))
    return quot, mod


def _float_floordiv(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
    bz = fe.b.fcmp_ordered("==", b, ir.Constant(a.type, 0.0))
    quot, _ = _float_divmod(fe, a, b)
    return round_to(fe.b, fe.b.select(bz, fe.b.fdiv(a, b), quot), t)


def _float_rem(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
    bz = fe.b.fcmp_ordered("==", b, ir.Constant(a.type, 0.0))
    _, mod = _float_divmod(fe, a, b)
    return round_to(fe.b, fe.b.select(bz, fe.b.frem(a, b), mod), t)


def _copysign(fe: FunctionEmitter, mag: ir.Value, sign: ir.Value) -> ir.Value:
    fn = fe.mc.function(f"llvm.copysign.{_suffix(mag.type)}", mag.type, [mag.type, mag.type])
    return fe.b.call(fn, [mag, sign])


def _suffix(ty: ir.Type) -> str:
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    return f"i{ty.width}"


def fe_intrinsic(fe: FunctionEmitter, name: str, ty: ir.Type) -> Callable[..., ir.Value]:
    """A callable emitting ``name.<ty>`` (an overloaded unary/binary intrinsic)."""
    def call(*args: ir.Value) -> ir.Value:
        fn = fe.mc.function(f"{name}.{_suffix(ty)}", ty, [ty] * len(args))
        return fe.b.call(fn, list(args))
    return call


def _dispatch(int_fn: Binary, float_fn: Binary) -> Binary:
    def emit(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
        return (float_fn if t.is_float else int_fn)(fe, t, a, b)
    return emit


# ------------------------------------------------------------------ max/min, shifts


def _minmax(pred: str) -> Binary:
    kind = "max" if pred == ">" else "min"

    def emit(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
        bld = fe.b
        if t.is_float:
            # numpy: (a > b || isnan(a)) ? a : b  -- NaN in either operand propagates;
            # float16 keeps a between equal values (-0.0, 0.0): a >= b (first_wins_ties)
            op = pred + "=" if arith.first_wins_ties(t) else pred
            if _never_nan(b):  # one compare: "unordered or >" is true for a NaN a only
                take_a = bld.fcmp_unordered(op, a, b)
            elif _never_nan(a):
                take_a = bld.fcmp_ordered(op, a, b)
            else:
                take_a = bld.or_(bld.fcmp_ordered(op, a, b), bld.fcmp_unordered("uno", a, a))
            return bld.select(take_a, a, b)
        prefix = "s" if (t.is_signed or t.is_index) else "u"
        return fe_intrinsic(fe, f"llvm.{prefix}{kind}", a.type)(a, b)
    return emit


def _never_nan(v: ir.Value) -> bool:
    """``v`` is a float constant other than NaN (a clamp bound, ``maximum(x, 0)``'s 0):
    the NaN test of ``_minmax`` then needs no compare of its own, and the one compare
    left is x86's ``maxps``/``minps`` when the constant is not a zero."""
    return isinstance(v, ir.Constant) and isinstance(v.constant, float) and \
        v.constant == v.constant


def _shift(left: bool) -> Binary:
    def emit(fe: FunctionEmitter, t: ScalarType, a: ir.Value, b: ir.Value) -> ir.Value:
        bld = fe.b
        width = ir.Constant(a.type, a.type.width)
        in_range = bld.icmp_unsigned("<", b, width)
        amount = bld.select(in_range, b, _zero(a.type))
        if left:
            return bld.select(in_range, bld.shl(a, amount), _zero(a.type))
        if t.is_signed or t.is_index:
            neg = bld.icmp_signed("<", a, _zero(a.type))
            over = bld.select(neg, ir.Constant(a.type, -1), _zero(a.type))
            return bld.select(in_range, bld.ashr(a, amount), over)
        return bld.select(in_range, bld.lshr(a, amount), _zero(a.type))
    return emit


BINARY: dict[type, Binary] = {
    arith.AddOp: _int_or_float("add", "fadd"),
    arith.SubOp: _int_or_float("sub", "fsub"),
    arith.MulOp: _int_or_float("mul", "fmul"),
    arith.DivOp: _float_op("fdiv"),
    arith.FloorDivOp: _dispatch(_int_floordiv, _float_floordiv),
    arith.RemOp: _dispatch(_int_rem, _float_rem),
    arith.MaxOp: _minmax(">"),
    arith.MinOp: _minmax("<"),
    arith.AndOp: lambda fe, t, a, b: fe.b.and_(a, b),
    arith.OrOp: lambda fe, t, a, b: fe.b.or_(a, b),
    arith.XorOp: lambda fe, t, a, b: fe.b.xor(a, b),
    arith.ShlOp: _shift(True),
    arith.ShrOp: _shift(False),
}


def _emit_binary(fe: FunctionEmitter, op: arith.BinaryOp) -> None:
    t = element_type(op.lhs.type)
    fe.set(op.result, BINARY[type(op)](fe, t, fe.get(op.lhs), fe.get(op.rhs)))


# ------------------------------------------------------------------ unary, cmp, select


def _emit_neg(fe: FunctionEmitter, op: arith.NegOp) -> None:
    t = element_type(op.operand.type)
    x = fe.get(op.operand)
    fe.set(op.result, fe.b.fneg(x) if t.is_float else fe.b.sub(_zero(x.type), x))


def _emit_not(fe: FunctionEmitter, op: arith.NotOp) -> None:
    x = fe.get(op.operand)
    fe.set(op.result, fe.b.xor(x, ir.Constant(x.type, -1)))


_FCMP = {"eq": ("==", True), "ne": ("!=", False), "lt": ("<", True), "le": ("<=", True),
         "gt": (">", True), "ge": (">=", True)}
_ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _emit_cmp(fe: FunctionEmitter, op: arith.CmpOp) -> None:
    t = element_type(op.lhs.type)
    a, b = fe.get(op.lhs), fe.get(op.rhs)
    pred = op.attributes["predicate"]
    if t.is_float:
        sym, ordered = _FCMP[pred]
        cmp = fe.b.fcmp_ordered if ordered else fe.b.fcmp_unordered
        fe.set(op.result, cmp(sym, a, b))
    elif t.is_signed or t.is_index:
        fe.set(op.result, fe.b.icmp_signed(_ICMP[pred], a, b))
    else:
        fe.set(op.result, fe.b.icmp_unsigned(_ICMP[pred], a, b))


def _emit_select(fe: FunctionEmitter, op: arith.SelectOp) -> None:
    fe.set(op.result, fe.b.select(fe.get(op.cond), fe.get(op.true_value),
                                  fe.get(op.false_value)))


def _emit_constant(fe: FunctionEmitter, op: arith.ConstantOp) -> None:
    t = op.result.type
    if not isinstance(t, ScalarType):
        raise TypeError(f"tensor constant {t} in loop-level IR (use mem.constant)")
    value = op.value
    if t.name in ("f16", "bf16"):
        value = float(np.float16(value)) if t.name == "f16" else _round_bf16(float(value))
    fe.set(op.result, const(t, value))


def _round_bf16(x: float) -> float:
    bits = int(np.array([x], np.float32).view(np.uint32)[0])
    if x != x:
        return x
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array([bits], np.uint32).view(np.float32)[0])


# ------------------------------------------------------------------ casts


def _emit_cast(fe: FunctionEmitter, op: arith.CastOp) -> None:
    src, dst = element_type(op.operand.type), element_type(op.result.type)
    fe.set(op.result, cast(fe, fe.get(op.operand), src, dst))


def cast(fe: FunctionEmitter, x: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
    """numpy ``astype`` from ``src`` to ``dst`` on a compute value."""
    bld = fe.b
    if src == dst:
        return x
    to = compute_type(dst)
    if dst.is_bool:
        if src.is_float:
            return bld.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return bld.icmp_unsigned("!=", x, _zero(x.type))
    if src.is_bool:
        return bld.uitofp(x, to) if dst.is_float else bld.zext(x, to)
    if src.is_float and dst.is_float:
        return _float_to_float(fe, x, src, dst)
    if dst.is_float:
        signed = src.is_signed or src.is_index
        f = bld.sitofp(x, to) if signed else bld.uitofp(x, to)
        return round_to(bld, f, dst)
    if src.is_float:
        return float_to_int(fe, x, dst)
    return _int_to_int(bld, x, src, to)


def _float_to_float(fe: FunctionEmitter, x: ir.Value, src: ScalarType,
                    dst: ScalarType) -> ir.Value:
    bld = fe.b
    to = compute_type(dst)
    if dst.name == "f16" and src.name == "f64":
        # round once, straight from double (numpy's npy_double_to_half)
        return bld.fpext(bld.fptrunc(x, ir.HalfType()), F32)
    if x.type == to:
        return round_to(bld, x, dst)
    if isinstance(to, ir.DoubleType):
        return bld.fpext(x, F64)
    return round_to(bld, bld.fptrunc(x, F32), dst)


def _int_to_int(bld: ir.IRBuilder, x: ir.Value, src: ScalarType, to: ir.IntType) -> ir.Value:
    if to.width < x.type.width:
        return bld.trunc(x, to)
    if to.width > x.type.width:
        return bld.sext(x, to) if (src.is_signed or src.is_index) else bld.zext(x, to)
    return x


def _x86_fptosi(fe: FunctionEmitter, x: ir.Value, bits: int) -> ir.Value:
    """``cvttss2si`` semantics: truncate in-range values, else the minimum integer."""
    bld = fe.b
    ity = ir.IntType(bits)
    lo = ir.Constant(x.type, -float(2 ** (bits - 1)))
    hi = ir.Constant(x.type, float(2 ** (bits - 1)))
    in_range = bld.and_(bld.fcmp_ordered(">=", x, lo), bld.fcmp_ordered("<", x, hi))
    # fptosi of an out-of-range value is poison, but select never picks it
    return bld.select(in_range, bld.fptosi(x, ity), ir.Constant(ity, 1 << (bits - 1)))


def float_to_int(fe: FunctionEmitter, x: ir.Value, dst: ScalarType) -> ir.Value:
    """Float -> integer as numpy does on x86: via int32 for narrow types, int64 for u32."""
    bld = fe.b
    to = compute_type(dst)
    if dst.name == "ui64":
        big = ir.Constant(x.type, float(2 ** 63))
        high = bld.xor(_x86_fptosi(fe, bld.fsub(x, big), 64), ir.Constant(to, 1 << 63))
        return bld.select(bld.fcmp_ordered(">=", x, big), high, _x86_fptosi(fe, x, 64))
    if dst.bitwidth == 64:
        return _x86_fptosi(fe, x, 64)
    wide = _x86_fptosi(fe, x, 64 if dst.name == "ui32" else 32)
    return wide if wide.type == to else bld.trunc(wide, to)


def _emit_bitcast(fe: FunctionEmitter, op: arith.BitcastOp) -> None:
    """Reinterpret bits through the storage types (``f16``/``bf16`` are ``float`` in
    registers but 16 bits in memory, and the bits are the memory ones)."""
    src, dst = element_type(op.operand.type), element_type(op.result.type)
    raw = fe.b.bitcast(to_storage(fe.b, fe.get(op.operand), src), storage_type(dst))
    fe.set(op.result, from_storage(fe.b, raw, dst))


ARITH_EMITTERS = {
    **{cls: _emit_binary for cls in BINARY},
    arith.NegOp: _emit_neg,
    arith.NotOp: _emit_not,
    arith.CmpOp: _emit_cmp,
    arith.SelectOp: _emit_select,
    arith.CastOp: _emit_cast,
    arith.BitcastOp: _emit_bitcast,
    arith.ConstantOp: _emit_constant,
}
"""``{op class: emit function}`` for the ``arith`` family."""
