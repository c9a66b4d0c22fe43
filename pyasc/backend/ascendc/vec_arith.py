"""Vector lowering of ``arith`` ops: arithmetic, negation, comparison, selection, casts.

Tensor-tensor ops use the count-form APIs (``Add``, ``Sub``, ``Mul``, ``Div``, ``Max``,
``Min``); a scalar operand uses the scalar forms ``Adds``/``Muls``/``Maxs``/``Mins``.
dav-c220 has no ``Subs``/``Divs`` and ``Neg`` is ISASI, so ``x - s`` is ``Adds(x, -s)``,
``x / s`` is ``Muls(x, 1/s)`` when ``1/s`` is exact (a power of two) and ``Div`` by the
broadcast divisor otherwise (numpy rounds a division once), ``s - x`` is ``Muls(x, -1)``
then ``Adds(s)`` and ``s / x`` is ``Duplicate(s)`` then ``Div``.  Comparisons produce
``Compare`` bit masks (counts padded to whole 256-byte repeats); casts pick the
``RoundMode`` numpy's ``astype`` needs from the c220 pair table, going through float
where there is no direct pair.
"""

from __future__ import annotations

import math

from pyasc.backend.ascendc import cexpr
from pyasc.backend.ascendc.analysis import COL, FULL, SCALAR, NotVectorizable
from pyasc.backend.ascendc.tiles import ctype
from pyasc.backend.ascendc.vec_lower import LowerFn, VecLowering, VVal
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import ScalarType, element_type, f16, f32

_VECTOR_API = {arith.AddOp: "Add", arith.SubOp: "Sub", arith.MulOp: "Mul",
               arith.DivOp: "Div", arith.MaxOp: "Max", arith.MinOp: "Min"}
_SCALAR_API = {arith.AddOp: "Adds", arith.MulOp: "Muls", arith.MaxOp: "Maxs",
               arith.MinOp: "Mins"}


def neg_fmt(t: ScalarType) -> str:
    """Format string negating a scalar of type ``t`` without changing its C++ type."""
    return f"{ctype(t)}(-({{}}))" if t.name in ("i16", "i8") else "(-({}))"


def _is_vector(v: VVal, result_cls: str) -> bool:
    """A tensor operand of the API (column values feeding full results are scalars)."""
    return v.buf is not None and not (v.cls == COL and result_cls == FULL)


def lower_binary(ctx: VecLowering, op: Operation) -> None:
    a, b = ctx.get(op.operand_values[0]), ctx.get(op.operand_values[1])
    t = element_type(op.result.type)
    cls = ctx.info.classes[op.result]
    if cls == SCALAR:
        expr = cexpr.BINARY[type(op)](t, ctx.scalar_value(a), ctx.scalar_value(b))
        ctx.set(op.result, VVal(SCALAR, t, expr=ctx.prog.scalar(ctype(t), _hint(op), expr,
                                                                 op.loc)))
        return
    if a.is_mask or b.is_mask or t.is_bool:
        raise NotVectorizable(f"'{op.name}' on booleans", op.loc)
    ctx.require("div" if isinstance(op, arith.DivOp) else "arith", t, op.name)
    dst = ctx.result_vec(op)
    if _is_vector(a, cls) and _is_vector(b, cls):
        ctx.call(_VECTOR_API[type(op)], dst, [a, b])
    elif _is_vector(a, cls):
        _scalar_right(ctx, op, dst, a, b, t)
    elif _is_vector(b, cls):
        _scalar_left(ctx, op, dst, b, a, t)
    else:
        raise NotVectorizable(f"'{op.name}' of two broadcast operands", op.loc)
    ctx.set(op.result, dst)


def _hint(op: Operation) -> str:
    return op.result.name_hint or "s"


def _scalar_right(ctx: VecLowering, op: Operation, dst: VVal, x: VVal, s: VVal,
                  t: ScalarType) -> None:
    """``x op s`` for a vector ``x`` and a scalar (or column element) ``s``."""
    if type(op) in _SCALAR_API:
        ctx.scalar_call(_SCALAR_API[type(op)], dst, x, s)
    elif isinstance(op, arith.SubOp):
        if s.buf is None:
            ctx.scalar_call("Adds", dst, x, cexpr.neg(t, s.expr))
        else:
            ctx.scalar_call("Adds", dst, x, s, neg_fmt(t))
    elif _power_of_two(op.operand_values[1]):  # 1/s is exact: Muls(x, 1/s) == x / s
        ctx.scalar_call("Muls", dst, x, reciprocal(ctx, s, t))
    else:  # Muls(x, 1/s) would round twice; divide by the broadcast divisor instead
        ctx.call("Div", dst, [x, ctx.materialize(s, dst.cls, "divisor")])


def _power_of_two(v: Value) -> bool:
    c = constant_value(v)
    if not isinstance(c, float) or c == 0 or c != c or abs(c) == float("inf"):
        return False
    return math.frexp(c)[0] in (0.5, -0.5)


def reciprocal(ctx: VecLowering, s: VVal, t: ScalarType) -> VVal | str:
    """``1 / s`` as a scalar expression, or as a column vector for column values."""
    if s.buf is not None:
        inv = ctx.temp(s, hint="inv")
        ctx.call("Reciprocal", inv, [s])
        return inv
    if t.name == "f32":
        expr = f"1.0f / {s.expr}"
    else:
        expr = f"{ctype(t)}(1.0f / float({s.expr}))"
    if expr not in ctx.memo:  # one reciprocal per divisor
        ctx.memo[expr] = ctx.prog.scalar(ctype(t), "inv", expr, ctx.loc)
    return ctx.memo[expr]


def _scalar_left(ctx: VecLowering, op: Operation, dst: VVal, x: VVal, s: VVal,
                 t: ScalarType) -> None:
    """``s op x`` for a scalar (or column element) ``s`` and a vector ``x``."""
    if type(op) in _SCALAR_API:  # add, mul, max, min: operand order does not matter
        ctx.scalar_call(_SCALAR_API[type(op)], dst, x, s)
    elif isinstance(op, arith.SubOp):
        ctx.scalar_call("Muls", dst, x, ctx.literal(-1, t))
        ctx.scalar_call("Adds", dst, dst, s)
    else:
        num = ctx.temp(dst, hint="num")
        ctx.duplicate(num, s)
        ctx.call("Div", dst, [num, x])


def lower_neg(ctx: VecLowering, op: Operation) -> None:
    x = ctx.get(op.operand_values[0])
    t = element_type(op.result.type)
    if x.buf is None:
        ctx.set(op.result, VVal(SCALAR, t, expr=f"({cexpr.neg(t, x.expr)})"))
        return
    ctx.require("arith", t, "negation")
    dst = ctx.result_vec(op)
    ctx.scalar_call("Muls", dst, x, ctx.literal(-1, t))
    ctx.set(op.result, dst)


# -------------------------------------------------------------------- compare / select

_CMP = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def compare(ctx: VecLowering, pred: str, a: VVal, b: VVal, cls: str, hint: str) -> VVal:
    """A ``Compare`` bit mask of class ``cls`` (both operands made tensors of that class)."""
    t = a.dtype
    if not ctx.soc.supports("compare_eq" if pred == "eq" else "compare", t.name):
        raise NotVectorizable(f"comparison of {t} values", ctx.loc)
    mask = ctx.new_vec(cls, ScalarType("i1"), hint)
    ctx.call("Compare", mask, [ctx.materialize(a, cls), ctx.materialize(b, cls)],
             [f"CMPMODE::{_CMP[pred]}"], padded=True)
    return mask


def lower_cmp(ctx: VecLowering, op: Operation) -> None:
    a, b = ctx.get(op.operand_values[0]), ctx.get(op.operand_values[1])
    cls = ctx.info.classes[op.result]
    if cls == SCALAR:
        ctx.set(op.result, VVal(SCALAR, element_type(op.result.type),
                                expr=cexpr.scalar_expr(op, [a.expr, b.expr]) or ""))
        return
    mask = compare(ctx, op.attributes["predicate"], a, b, cls, op.result.name_hint or "mask")
    ctx.set(op.result, mask)


def uniform_mask(ctx: VecLowering, cond: str, cls: str) -> VVal:
    """A bit mask of class ``cls`` whose every bit is the run-time scalar ``cond``: a
    float32 tile ``Duplicate``d with ``cond ? 0 : NaN`` compared equal to itself (NaN is
    the one value unequal to itself): two vector calls, counted like any other."""
    flag = ctx.new_vec(cls, f32, "flag")
    nan = cexpr.literal(math.nan, f32)
    ctx.duplicate(flag, f"(({cond}) ? 0.0f : {nan})")
    return compare(ctx, "eq", flag, flag, cls, "uniform")


def as_mask(ctx: VecLowering, v: VVal) -> VVal:
    """A boolean value as a bit mask (bool arrays from GM are bytes: compare with 0)."""
    if v.is_mask:
        return v
    if v.buf is None:
        raise NotVectorizable("a scalar condition in a vector select", ctx.loc)
    wide = ctx.temp(v, f16, "flag")
    ctx.cast(wide, v, "CAST_NONE")
    zero = VVal(SCALAR, f16, expr=ctx.literal(0.0, f16))
    return compare(ctx, "ne", wide, zero, v.cls, "mask")


def select(ctx: VecLowering, dst: VVal, mask: VVal, a: VVal, b: VVal) -> None:
    """``dst = mask ? a : b`` (``a`` becomes a tensor; ``b`` may stay a scalar)."""
    ctx.require("select", dst.dtype, "Select")
    src0 = ctx.materialize(a, dst.cls, "on_true")
    if b.buf is None:
        ctx.call("Select", dst, [mask, src0, b.expr], ["SELMODE::VSEL_TENSOR_SCALAR_MODE"],
                 padded=True)
    else:
        ctx.call("Select", dst, [mask, src0, ctx.materialize(b, dst.cls, "on_false")],
                 ["SELMODE::VSEL_TENSOR_TENSOR_MODE"], padded=True)


def lower_select(ctx: VecLowering, op: Operation) -> None:
    c, a, b = (ctx.get(v) for v in op.operand_values)
    cls = ctx.info.classes[op.result]
    if cls == SCALAR:
        ctx.set(op.result, VVal(SCALAR, element_type(op.result.type),
                                expr=f"({c.expr} ? {a.expr} : {b.expr})"))
        return
    if element_type(op.result.type).is_bool:
        raise NotVectorizable("select between booleans", op.loc)
    # a scalar condition picks one operand for the whole tile (numpy's power selects
    # sqrt on a run-time exponent of 0.5): a uniform mask, not a broadcast bool
    mask = uniform_mask(ctx, c.expr, cls) if c.buf is None else as_mask(ctx, c)
    dst = ctx.result_vec(op)
    select(ctx, dst, mask, a, b)
    ctx.set(op.result, dst)


# -------------------------------------------------------------------- casts

# (src, dst) -> steps of (intermediate type, RoundMode); numpy astype semantics.
_CASTS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("f32", "f16"): (("f16", "CAST_RINT"),),
    ("f16", "f32"): (("f32", "CAST_NONE"),),
    ("f32", "i32"): (("i32", "CAST_TRUNC"),),
    ("f16", "i32"): (("i32", "CAST_TRUNC"),),
    ("i32", "f32"): (("f32", "CAST_NONE"),),
    ("i32", "f16"): (("f32", "CAST_NONE"), ("f16", "CAST_RINT")),
    ("f32", "i16"): (("i16", "CAST_TRUNC"),),
    ("f16", "i16"): (("i16", "CAST_TRUNC"),),
    ("i16", "f32"): (("f32", "CAST_NONE"),),
    ("i16", "f16"): (("f16", "CAST_NONE"),),
    ("i16", "i32"): (("f32", "CAST_NONE"), ("i32", "CAST_TRUNC")),
    # bfloat16 (ml_dtypes converts through float32 too: each step exact but the last)
    ("bf16", "f32"): (("f32", "CAST_NONE"),),
    ("f32", "bf16"): (("bf16", "CAST_RINT"),),
    ("bf16", "f16"): (("f32", "CAST_NONE"), ("f16", "CAST_RINT")),
    ("f16", "bf16"): (("f32", "CAST_NONE"), ("bf16", "CAST_RINT")),
    ("bf16", "i32"): (("i32", "CAST_TRUNC"),),
}


def cast_value(ctx: VecLowering, x: VVal, to: ScalarType, dst: VVal | None = None) -> VVal:
    """``x.astype(to)`` for vector ``x``; writes into ``dst`` when given."""
    if to.is_bool:
        zero = VVal(SCALAR, x.dtype, expr=ctx.literal(0, x.dtype))
        return compare(ctx, "ne", x, zero, x.cls, "nonzero")
    if x.dtype.is_bool:
        return _bool_to(ctx, x, to, dst)
    steps = _CASTS.get((x.dtype.name, to.name))
    if steps is None:
        raise NotVectorizable(f"cast from {x.dtype} to {to}", ctx.loc)
    cur = x
    for i, (name, mode) in enumerate(steps):
        last = i == len(steps) - 1
        out = dst if (last and dst is not None) else ctx.temp(x, ScalarType(name), "cast")
        ctx.cast(out, cur, mode)
        cur = out
    return cur


def _bool_to(ctx: VecLowering, x: VVal, to: ScalarType, dst: VVal | None) -> VVal:
    mask = as_mask(ctx, x)
    mid = to if to.name in ("f16", "f32") else f16
    out = dst if (dst is not None and mid == to) else ctx.temp(x, mid, "as_num")
    select(ctx, out, mask, VVal(SCALAR, mid, expr=ctx.literal(1, mid)),
           VVal(SCALAR, mid, expr=ctx.literal(0, mid)))
    return out if mid == to else cast_value(ctx, out, to, dst)


def lower_cast(ctx: VecLowering, op: Operation) -> None:
    x = ctx.get(op.operand_values[0])
    to = element_type(op.result.type)
    if x.buf is None:
        ctx.set(op.result, VVal(SCALAR, to, expr=cexpr.cast(x.dtype, to, x.expr)))
        return
    if x.dtype == to:
        ctx.set(op.result, x)
        return
    dst = None if to.is_bool else ctx.result_vec(op)
    ctx.set(op.result, cast_value(ctx, x, to, dst))


def lower_constant(ctx: VecLowering, op: Operation) -> None:
    t = element_type(op.result.type)
    if not isinstance(op.result.type, ScalarType):
        raise NotVectorizable("an array constant inside a kernel", op.loc)
    ctx.set(op.result, VVal(SCALAR, t, expr=cexpr.literal(op.attributes["value"], t)))


ARITH_RULES: dict[type, LowerFn] = {
    **{cls: lower_binary for cls in _VECTOR_API},
    arith.NegOp: lower_neg,
    arith.CmpOp: lower_cmp,
    arith.SelectOp: lower_select,
    arith.CastOp: lower_cast,
    arith.ConstantOp: lower_constant,
}

__all__ = ["ARITH_RULES", "as_mask", "cast_value", "compare", "reciprocal", "select",
           "uniform_mask"]
