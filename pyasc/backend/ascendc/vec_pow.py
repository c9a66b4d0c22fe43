"""Vector lowering of ``math.pow`` (C99 ``pow``: ``x ** y`` with its special values).

* a constant integral exponent (``|n| <= 64``): square-and-multiply, ``Reciprocal`` if
  negative;
* a constant non-integral exponent: from ``|x|`` (``Sqrt``/``Rsqrt`` for +-0.5, else
  ``Exp(c * Ln|x|)``), then NaN for a negative finite ``x`` and ``(-inf)**c``;
* a run-time scalar exponent ``y`` (a focal loss's ``gamma``): ``Exp(y * Ln|x|)`` with
  ``Muls`` by the scalar, then the specials, each a ``Select`` on one ``Compare``; what
  depends on ``y`` alone (integral, odd, infinite, zero) is scalar C++ computed once.

Float16 computes in float32 and rounds back once (``vec_math.composite``).
"""

from __future__ import annotations

import math

from pyasc.backend.ascendc import cexpr
from pyasc.backend.ascendc.analysis import SCALAR, NotVectorizable
from pyasc.backend.ascendc.vec_arith import compare, select, uniform_mask
from pyasc.backend.ascendc.vec_lower import LowerFn, VecLowering, VVal
from pyasc.backend.ascendc.vec_math import composite
from pyasc.ir.core import Operation
from pyasc.ir.ops import math as m
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import ScalarType, element_type, f32


def lower_pow(ctx: VecLowering, op: Operation) -> None:
    x, y = ctx.get(op.operand_values[0]), ctx.get(op.operand_values[1])
    c = constant_value(op.operand_values[1])
    if x.buf is None or y.buf is not None:
        raise NotVectorizable("power of a scalar base or to an array of exponents", op.loc)
    t = element_type(op.result.type)
    ctx.require("arith", t, "power")
    if isinstance(c, bool) or not isinstance(c, int | float):
        if not t.is_float:
            raise NotVectorizable("integer power to a run-time exponent", op.loc)
        ys = ctx.prog.scalar("float", "pow_y", cexpr.cast(y.dtype, f32, y.expr), op.loc)
        composite(ctx, op, lambda ctx, w, out: _runtime_power(ctx, w, out, ys))
        return
    if float(c).is_integer() and abs(c) <= 64:
        _int_power(ctx, op, x, int(c), t)
        return
    if not t.is_float:
        raise NotVectorizable(f"integer power {c}", op.loc)
    composite(ctx, op, lambda ctx, w, out: _fractional_power(ctx, w, out, float(c)))


def _lit(ctx: VecLowering, x: VVal, v: float | str) -> VVal:
    """A scalar operand of ``x``'s type: a number, or a C++ expression."""
    expr = v if isinstance(v, str) else ctx.literal(v, x.dtype)
    return VVal(SCALAR, x.dtype, expr=expr)


def _fractional_power(ctx: VecLowering, x: VVal, out: VVal, c: float) -> None:
    """``x ** c`` for a non-integral ``c`` with ``pow``'s special values: computed from
    ``|x|`` (``Sqrt``/``Rsqrt`` for +-0.5, else ``Exp(c * Ln|x|)``: zeros and infinities
    come out right), then NaN for a negative finite ``x`` and ``(-inf)**c`` = ``inf``
    (``c > 0``) or ``0``. ``Sqrt(x)`` alone gave ``-0`` and NaN at ``-0`` and ``-inf``."""
    ax = ctx.temp(x, hint="ax")
    ctx.call("Abs", ax, [x])
    if abs(c) == 0.5:
        ctx.call("Sqrt" if c > 0 else "Rsqrt", out, [ax])
    else:
        ctx.call("Ln", out, [ax])
        ctx.scalar_call("Muls", out, out, f"{c!r}f")
        ctx.call("Exp", out, [out])
    not_negative = compare(ctx, "ge", x, _lit(ctx, x, 0.0), x.cls, "nonneg")  # not NaN
    select(ctx, out, not_negative, out, _lit(ctx, x, math.nan))
    finite_or_above = compare(ctx, "ne", x, _lit(ctx, x, -math.inf), x.cls, "not_minf")
    select(ctx, out, finite_or_above, out, _lit(ctx, x, math.inf if c > 0 else 0.0))


_TWO23, _TWO24 = "8388608.0f", "16777216.0f"  # float32s from 2^23 on are integers, 2^24 even


def _exponent_facts(ctx: VecLowering, y: str) -> dict[str, str]:
    """Scalar C++ facts about the run-time exponent ``y`` (float), declared once: the
    integer cast runs only below 2^24, where it is exact and defined (not on NaN/inf)."""
    def decl(hint: str, expr: str) -> str:
        return ctx.prog.scalar("bool", hint, expr, ctx.loc)
    ay = ctx.prog.scalar("float", "pow_ay", f"({y} < 0.0f ? -{y} : {y})", ctx.loc)
    small = decl("pow_small", f"({ay} < {_TWO24})")
    whole = f"(static_cast<float>(static_cast<int32_t>({y})) == {y})"
    odd = decl("pow_odd", f"({small} && {whole} && "
                          f"(static_cast<int32_t>({y}) & 1) != 0)")
    inf = cexpr.literal(math.inf, f32)
    # integral or infinite: a negative base then has a real power (else NaN)
    real = decl("pow_real", f"(({small} && {whole}) || ({ay} >= {_TWO23} && {ay} == {ay}))")
    return {"y": y, "odd": odd, "real": real, "inf": inf}


def _minus_inf_power(f: dict[str, str]) -> str:
    """``(-inf) ** y``: -inf/-0 for an odd integer, else inf (``y > 0``) or 0; NaN y."""
    y, odd, inf = f["y"], f["odd"], f["inf"]
    nan = cexpr.literal(math.nan, f32)
    pos = f"({odd} ? -{inf} : {inf})"
    neg = f"({odd} ? -0.0f : 0.0f)"
    return f"({y} != {y} ? {nan} : ({y} > 0.0f ? {pos} : {neg}))"


def _runtime_power(ctx: VecLowering, x: VVal, out: VVal, y: str) -> None:
    """``x ** y`` (float32) for a run-time scalar ``y`` with every C99 special value.

    ``Exp(y * Ln|x|)`` is ``|x|**y`` except where a factor is 0 times an infinity: then
    ``|x| == 1`` selects 1 (``1**nan``, ``(-1)**inf``) and ``y == 0`` 1 (``nan**0``).
    A negative base (``-0`` and ``-inf`` too: ``x + 1/x < 0`` holds exactly for those)
    flips the sign for an odd ``y``; a negative finite base to a ``y`` neither integral
    nor infinite is NaN; ``-inf`` takes its value from ``y`` alone."""
    f = _exponent_facts(ctx, y)
    ax = ctx.temp(x, hint="ax")
    ctx.call("Abs", ax, [x])
    ctx.call("Ln", out, [ax])
    ctx.scalar_call("Muls", out, out, y)
    ctx.call("Exp", out, [out])
    not_one = compare(ctx, "ne", ax, _lit(ctx, x, 1.0), x.cls, "not_one")  # NaN: kept
    select(ctx, out, not_one, out, _lit(ctx, x, 1.0))
    inv = ctx.temp(x, hint="inv")
    ctx.call("Reciprocal", inv, [x])
    ctx.call("Add", inv, [inv, x])
    negative = compare(ctx, "lt", inv, _lit(ctx, x, 0.0), x.cls, "negative")
    flipped = ctx.temp(x, hint="flipped")
    ctx.scalar_call("Muls", flipped, out, f"({f['odd']} ? -1.0f : 1.0f)")
    select(ctx, out, negative, flipped, out)
    not_negative = compare(ctx, "ge", x, _lit(ctx, x, 0.0), x.cls, "nonneg")
    nan = cexpr.literal(math.nan, f32)
    ctx.scalar_call("Muls", flipped, out, f"({f['real']} ? 1.0f : {nan})")
    select(ctx, out, not_negative, out, flipped)
    not_minf = compare(ctx, "ne", x, _lit(ctx, x, -math.inf), x.cls, "not_minf")
    select(ctx, out, not_minf, out, _lit(ctx, x, _minus_inf_power(f)))
    nonzero_y = uniform_mask(ctx, f"{y} != 0.0f", x.cls)
    select(ctx, out, nonzero_y, out, _lit(ctx, x, 1.0))


def _int_power(ctx: VecLowering, op: Operation, x: VVal, n: int, t: ScalarType) -> None:
    """``x ** n`` by left-to-right square-and-multiply, writing each step into the result."""
    if n == 1:
        ctx.set(op.result, x)
        return
    dst = ctx.result_vec(op)
    if n == 0:
        ctx.duplicate(dst, ctx.literal(1, t))
    else:
        cur = x
        for bit in bin(abs(n))[3:]:  # the bits after the leading one
            ctx.call("Mul", dst, [cur, cur])
            cur = dst
            if bit == "1":
                ctx.call("Mul", dst, [dst, x])
        if n < 0:
            ctx.require("unary", t, "negative power")
            ctx.call("Reciprocal", dst, [cur])
    ctx.set(op.result, dst)


POW_RULES: dict[type, LowerFn] = {m.PowOp: lower_pow}
