"""Vector lowering of ``math`` ops, reductions, broadcasts and fills.

Direct APIs: ``Exp Ln Sqrt Rsqrt Abs Reciprocal`` and the advanced ``Sigmoid``.  The
rest is composed from them (in float32 for half inputs, rounded back once):

* ``tanh(x) = 1 - 2 / (exp(2x) + 1)`` (saturates to +-1, no overflow);
* ``erf``: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) with the sign restored as
  ``c / (|c| + 1e-30)``, ``c`` = ``x`` clamped to [-1, 1] (exact +-1 at +-inf);
* ``exp2/expm1/log2/log10/log1p`` from ``Exp``/``Ln`` (``expm1``/``log1p`` lose relative
  accuracy near 0);
* ``floor/ceil/round/trunc``: ``Cast`` float -> float with ``CAST_FLOOR/CEIL/RINT/TRUNC``;
* ``pow``: ``vec_pow``;
* ``isnan/isinf/isfinite/sign`` through ``Compare``/``Select``.

Reductions over the last axis run per row into a ``col`` buffer (``ReduceSum/Max/Min``;
half sums accumulate in float32); reductions over every axis accumulate whole tiles into
an ``acc`` buffer whose per-block result the kernel writes out (see ``emit_vector``).
"""

from __future__ import annotations

import math

from pyasc.backend.ascendc.analysis import COL, FULL, PARTIAL, NotVectorizable
from pyasc.backend.ascendc.tiles import Instr, Ref
from pyasc.backend.ascendc.vec_arith import cast_value, compare, select
from pyasc.backend.ascendc.vec_lower import LowerFn, Partial, VecLowering, VVal
from pyasc.ir.core import Operation
from pyasc.ir.ops import math as m
from pyasc.ir.ops import tensor
from pyasc.ir.types import element_type, f32

_DIRECT = {m.ExpOp: "Exp", m.LogOp: "Ln", m.SqrtOp: "Sqrt", m.RsqrtOp: "Rsqrt",
           m.SigmoidOp: "Sigmoid"}


def _unary_input(ctx: VecLowering, op: Operation) -> VVal:
    x = ctx.get(op.operand_values[0])
    if x.buf is None:
        raise NotVectorizable(f"scalar '{op.name}' inside a kernel", op.loc)
    return x


def lower_direct(ctx: VecLowering, op: Operation) -> None:
    x = _unary_input(ctx, op)
    ctx.require("unary", x.dtype, op.name)
    dst = ctx.result_vec(op)
    ctx.call(_DIRECT[type(op)], dst, [x])
    ctx.set(op.result, dst)


def lower_abs(ctx: VecLowering, op: Operation) -> None:
    x = _unary_input(ctx, op)
    dst = ctx.result_vec(op)
    if x.dtype.is_float:
        ctx.require("unary", x.dtype, "abs")
        ctx.call("Abs", dst, [x])
    else:  # |x| = max(x, -x); wraps at the minimum like numpy
        ctx.require("arith", x.dtype, "abs")
        ctx.scalar_call("Muls", dst, x, ctx.literal(-1, x.dtype))
        ctx.call("Max", dst, [x, dst])
    ctx.set(op.result, dst)


def composite(ctx: VecLowering, op: Operation, body) -> None:  # noqa: ANN001
    """Run ``body(ctx, wide_in, wide_out)`` in float32; round back to the result type."""
    x = _unary_input(ctx, op)
    wide, widened = ctx.float_compute(x)
    out = ctx.temp(wide, f32, "wide_out") if widened else ctx.result_vec(op)
    body(ctx, wide, out)
    if widened:
        dst = ctx.result_vec(op)
        ctx.cast(dst, out, "CAST_RINT")
        out = dst
    ctx.set(op.result, out)


def _tanh(ctx: VecLowering, x: VVal, out: VVal) -> None:
    ctx.scalar_call("Muls", out, x, "2.0f")
    ctx.call("Exp", out, [out])
    ctx.scalar_call("Adds", out, out, "1.0f")
    ctx.call("Reciprocal", out, [out])
    ctx.scalar_call("Muls", out, out, "-2.0f")
    ctx.scalar_call("Adds", out, out, "1.0f")


_ERF = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(ctx: VecLowering, x: VVal, out: VVal) -> None:
    ax = ctx.temp(x, hint="ax")
    ctx.call("Abs", ax, [x])
    t = ctx.temp(x, hint="t")                       # t = 1 / (1 + p|x|)
    ctx.scalar_call("Muls", t, ax, "0.3275911f")
    ctx.scalar_call("Adds", t, t, "1.0f")
    ctx.call("Reciprocal", t, [t])
    ctx.scalar_call("Muls", out, t, f"{_ERF[4]}f")  # Horner: ((((a5 t + a4) t + a3) t ...
    for a in reversed(_ERF[:4]):
        ctx.scalar_call("Adds", out, out, f"{a}f")
        ctx.call("Mul", out, [out, t])
    e = ctx.temp(x, hint="e")                       # exp(-x^2)
    ctx.call("Mul", e, [x, x])
    ctx.scalar_call("Muls", e, e, "-1.0f")
    ctx.call("Exp", e, [e])
    ctx.call("Mul", out, [out, e])
    ctx.scalar_call("Muls", out, out, "-1.0f")
    ctx.scalar_call("Adds", out, out, "1.0f")       # erf(|x|)
    # sign(x) = c / (|c| + tiny) with c = x clamped to [-1, 1]: x / (|x| + tiny) was
    # inf / inf = NaN at x = +-inf (erf(+-inf) came out NaN).  A NaN x gives a NaN erf(|x|)
    # above, so whatever the clamp makes of it the product stays NaN.
    ctx.scalar_call("Maxs", ax, x, "-1.0f")
    ctx.scalar_call("Mins", ax, ax, "1.0f")
    ctx.call("Abs", t, [ax])
    ctx.scalar_call("Adds", t, t, "1e-30f")
    ctx.call("Div", ax, [ax, t])
    ctx.call("Mul", out, [out, ax])


def _scaled(api: str, scale: float, before: bool):  # noqa: ANN202
    def body(ctx: VecLowering, x: VVal, out: VVal) -> None:
        if before:
            ctx.scalar_call("Muls", out, x, f"{scale!r}f")
            ctx.call(api, out, [out])
        else:
            ctx.call(api, out, [x])
            ctx.scalar_call("Muls", out, out, f"{scale!r}f")
    return body


def _shifted(api: str, shift: float, before: bool):  # noqa: ANN202
    def body(ctx: VecLowering, x: VVal, out: VVal) -> None:
        if before:
            ctx.scalar_call("Adds", out, x, f"{shift!r}f")
            ctx.call(api, out, [out])
        else:
            ctx.call(api, out, [x])
            ctx.scalar_call("Adds", out, out, f"{shift!r}f")
    return body


def _rounding(mode: str):  # noqa: ANN202
    def body(ctx: VecLowering, x: VVal, out: VVal) -> None:
        ctx.cast(out, x, mode)
    return body


_COMPOSITES = {
    m.TanhOp: _tanh, m.ErfOp: _erf,
    m.Exp2Op: _scaled("Exp", math.log(2.0), True),
    m.Log2Op: _scaled("Ln", 1.0 / math.log(2.0), False),
    m.Log10Op: _scaled("Ln", 1.0 / math.log(10.0), False),
    m.Expm1Op: _shifted("Exp", -1.0, False),
    m.Log1pOp: _shifted("Ln", 1.0, True),
    m.FloorOp: _rounding("CAST_FLOOR"), m.CeilOp: _rounding("CAST_CEIL"),
    m.RoundOp: _rounding("CAST_RINT"), m.TruncOp: _rounding("CAST_TRUNC"),
}


def lower_composite(ctx: VecLowering, op: Operation) -> None:
    composite(ctx, op, _COMPOSITES[type(op)])


def lower_classify(ctx: VecLowering, op: Operation) -> None:
    x = _unary_input(ctx, op)
    inf = VVal("scalar", x.dtype, expr=ctx.literal(math.inf, x.dtype))
    if isinstance(op, m.IsNanOp):
        mask = compare(ctx, "ne", x, x, x.cls, "isnan")
    else:
        ax = ctx.temp(x, hint="ax")
        ctx.call("Abs", ax, [x])
        pred = "eq" if isinstance(op, m.IsInfOp) else "lt"
        mask = compare(ctx, pred, ax, inf, x.cls, "isinf" if pred == "eq" else "isfinite")
    ctx.set(op.result, mask)


def lower_sign(ctx: VecLowering, op: Operation) -> None:
    x = _unary_input(ctx, op)
    zero = VVal("scalar", x.dtype, expr=ctx.literal(0, x.dtype))
    pos = compare(ctx, "gt", x, zero, x.cls, "pos")
    neg = compare(ctx, "lt", x, zero, x.cls, "neg")
    dst = ctx.result_vec(op)
    select(ctx, dst, neg, VVal("scalar", x.dtype, expr=ctx.literal(-1, x.dtype)), x)
    select(ctx, dst, pos, VVal("scalar", x.dtype, expr=ctx.literal(1, x.dtype)), dst)
    ctx.set(op.result, dst)


# -------------------------------------------------------------------- reductions

_REDUCE = {tensor.SumOp: ("ReduceSum", "sum", "Add"),
           tensor.ReduceMaxOp: ("ReduceMax", "max", "Max"),
           tensor.ReduceMinOp: ("ReduceMin", "min", "Min")}


def lower_reduce(ctx: VecLowering, op: Operation) -> None:
    x = ctx.get(op.operand_values[0])
    api, kind, combine = _REDUCE[type(op)]
    # a whole-array reduction of a type ReduceX does not take (int16, int32) folds its
    # accumulator by halves instead, when its result keeps the type (max, min)
    tree = op not in ctx.info.row_reductions and not ctx.soc.supports("reduce", x.dtype.name) \
        and element_type(op.result.type) == x.dtype
    ctx.require("arith" if tree else "reduce", x.dtype, op.name)
    src = x
    if kind == "sum" and x.dtype.name == "f16":  # accumulate half sums in float, like numpy
        src = cast_value(ctx, x, f32)
    if op in ctx.info.row_reductions:
        col = ctx.new_vec(COL, src.dtype, op.result.name_hint or kind)
        assert col.buf is not None and src.buf is not None
        ctx.prog.reduce_tmp_types.add(src.dtype.name)
        ctx.prog.emit(Instr(api, Ref(col.buf, True), (Ref(src.buf, True),
                                                      f"reduceTmp_{src.dtype.name}"), (),
                            "cols", True, op.loc))
        ctx.set(op.result, cast_value(ctx, col, x.dtype) if src is not x else col)
        return
    acc = ctx.new_vec(PARTIAL, src.dtype, op.result.name_hint or kind)
    assert acc.buf is not None and src.buf is not None
    acc.buf.role = "acc"
    ctx.prog.emit(Instr(combine, Ref(acc.buf), (Ref(acc.buf), Ref(src.buf)), (), "tile",
                        False, op.loc))
    ctx.partials[op.result] = Partial(kind, acc.buf, x.dtype, tree)
    ctx.set(op.result, acc)


def lower_broadcast(ctx: VecLowering, op: Operation) -> None:
    src = ctx.get(op.operand_values[0])
    cls = ctx.info.classes[op.result]
    if src.buf is not None and src.cls == cls:
        ctx.set(op.result, src)
        return
    if cls not in (FULL, COL) and src.buf is not None:
        raise NotVectorizable(f"broadcast of a {src.cls} value", op.loc)
    out = ctx.materialize(src, cls, op.result.name_hint or "bcast")
    ctx.set(op.result, out)


def lower_fill(ctx: VecLowering, op: Operation) -> None:
    value = ctx.get(op.operand_values[0])
    dst = ctx.result_vec(op)
    ctx.duplicate(dst, value)
    ctx.set(op.result, dst)


MATH_RULES: dict[type, LowerFn] = {
    **{cls: lower_direct for cls in _DIRECT},
    **{cls: lower_composite for cls in _COMPOSITES},
    m.AbsOp: lower_abs,
    m.SignOp: lower_sign,
    m.IsNanOp: lower_classify, m.IsInfOp: lower_classify, m.IsFiniteOp: lower_classify,
    tensor.SumOp: lower_reduce, tensor.ReduceMaxOp: lower_reduce,
    tensor.ReduceMinOp: lower_reduce,
    tensor.BroadcastOp: lower_broadcast,
    tensor.FillOp: lower_fill,
}
