"""Formula-style IR building for the math expansions.

A :class:`Val` wraps an IR value and overloads Python operators to insert elementwise
``arith``/``math`` ops (through a :class:`Emitter`, which owns the rewriter), so an
expansion reads like the C it replaces::

    y = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI

Evaluation order is Python's (left to right), which is what makes such a sum accurate;
nothing is reassociated.  Python numbers mix with values and become scalar constants
of the value's element type (scalars broadcast against tensors, so the same expansion
works on a scalar at loop level and on a whole tensor).  Comparisons are methods
(``x.lt(0.0)``) since ``==`` must stay identity for Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.ops import math as m
from pyasc.ir.rewrite import Rewriter
from pyasc.ir.types import ScalarType, element_type, f32, f64, i32, i64

Number = float | int
Operand = "Val | float | int"

INT_OF = {f32: i32, f64: i64}
"""The integer type holding a float's bits."""


class Emitter:
    """Inserts the ops of one expansion before the op being replaced."""

    def __init__(self, rw: Rewriter, fastmath: bool = False, fma: bool = False) -> None:
        self.rw = rw
        self.fastmath = fastmath
        self.fma = fma  # the target has FMA: polynomial steps are one ``math.fma``
        self._consts: dict[tuple[ScalarType, object], Val] = {}

    def wrap(self, v: Value) -> Val:
        return Val(self, v)

    def const(self, value: Number, t: ScalarType) -> Val:
        """A scalar constant of ``t`` (floats rounded to ``t``, ints wrapped to signed)."""
        if t.is_float:
            value = float(np.asarray(value, dtype=t.to_numpy()))
        else:
            bits = t.bitwidth
            value = (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        key = (t, repr(value))  # repr keeps -0.0 apart from 0.0 and makes NaN equal itself
        if key not in self._consts:
            self._consts[key] = self.emit(arith.ConstantOp.new(value, t))
        return self._consts[key]

    def emit(self, op: Operation) -> Val:
        if self.fastmath and "strict" in op.attrs:
            # The polynomial's evaluation order is part of its accuracy: keep the backend's
            # fast-math reassociation away from it.
            op.attributes["strict"] = True
        return Val(self, self.rw.insert(op).result)

    def special(self, cond: Val, value: Operand, y: Val) -> Val:
        """``where(cond, value, y)`` for inf/nan/denormal/signed-zero inputs; dropped
        under ``fastmath``, which promises that such inputs do not occur."""
        return y if self.fastmath else where(cond, value, y)


class Val:
    """An IR value plus the emitter that builds ops on it."""

    __slots__ = ("em", "value")

    def __init__(self, em: Emitter, value: Value) -> None:
        self.em, self.value = em, value

    @property
    def elem(self) -> ScalarType:
        return element_type(self.value.type)

    def _v(self, other: Operand) -> Val:
        return other if isinstance(other, Val) else self.em.const(other, self.elem)

    def _bin(self, cls: type[Operation], a: Operand, b: Operand) -> Val:
        lhs, rhs = self._v(a), self._v(b)
        return self.em.emit(cls.new(lhs.value, rhs.value))  # type: ignore[attr-defined]

    def _un(self, cls: type[Operation]) -> Val:
        return self.em.emit(cls.new(self.value))  # type: ignore[attr-defined]

    # arithmetic (``r``-variants keep the Python operand first: order is semantics)
    def __add__(self, o: Operand) -> Val: return self._bin(arith.AddOp, self, o)
    def __radd__(self, o: Operand) -> Val: return self._bin(arith.AddOp, o, self)
    def __sub__(self, o: Operand) -> Val: return self._bin(arith.SubOp, self, o)
    def __rsub__(self, o: Operand) -> Val: return self._bin(arith.SubOp, o, self)
    def __mul__(self, o: Operand) -> Val: return self._bin(arith.MulOp, self, o)
    def __rmul__(self, o: Operand) -> Val: return self._bin(arith.MulOp, o, self)
    def __truediv__(self, o: Operand) -> Val: return self._bin(arith.DivOp, self, o)
    def __rtruediv__(self, o: Operand) -> Val: return self._bin(arith.DivOp, o, self)
    def __neg__(self) -> Val: return self._un(arith.NegOp)

    # bitwise / logical (integers and i1)
    def __and__(self, o: Operand) -> Val: return self._bin(arith.AndOp, self, o)
    def __or__(self, o: Operand) -> Val: return self._bin(arith.OrOp, self, o)
    def __xor__(self, o: Operand) -> Val: return self._bin(arith.XorOp, self, o)
    def __lshift__(self, o: Operand) -> Val: return self._bin(arith.ShlOp, self, o)
    def __rshift__(self, o: Operand) -> Val: return self._bin(arith.ShrOp, self, o)

    # A float constant bound (a clamp) costs one ``maxps``/``minps``: the CPU backend
    # drops the NaN test of an operand that is a constant (``emit_arith._never_nan``).
    def max(self, o: Operand) -> Val:
        """numpy ``maximum(self, o)``: NaN in either operand propagates."""
        return self._bin(arith.MaxOp, self, o)

    def min(self, o: Operand) -> Val:
        """numpy ``minimum(self, o)``: NaN in either operand propagates."""
        return self._bin(arith.MinOp, self, o)

    def clamp(self, lo: Number, hi: Number) -> Val:
        return self.max(lo).min(hi)

    # comparisons (ordered: false when either side is NaN, except ``ne``)
    def _cmp(self, pred: str, o: Operand) -> Val:
        rhs = self._v(o)
        return self.em.emit(arith.CmpOp.new(pred, self.value, rhs.value))

    def eq(self, o: Operand) -> Val: return self._cmp("eq", o)
    def ne(self, o: Operand) -> Val: return self._cmp("ne", o)
    def lt(self, o: Operand) -> Val: return self._cmp("lt", o)
    def le(self, o: Operand) -> Val: return self._cmp("le", o)
    def gt(self, o: Operand) -> Val: return self._cmp("gt", o)
    def ge(self, o: Operand) -> Val: return self._cmp("ge", o)

    # unary math that stays (vectorizes to single instructions)
    def abs(self) -> Val: return self._un(m.AbsOp)
    def round(self) -> Val: return self._un(m.RoundOp)  # half to even (rint)
    def floor(self) -> Val: return self._un(m.FloorOp)
    def sqrt(self) -> Val: return self._un(m.SqrtOp)

    # conversions
    def cast(self, t: ScalarType) -> Val:
        return self if t == self.elem else self.em.emit(arith.CastOp.new(self.value, t))

    def bits(self) -> Val:
        """The float's bits as the signed integer of the same width."""
        return self.em.emit(arith.BitcastOp.new(self.value, INT_OF[self.elem]))

    def as_float(self, t: ScalarType) -> Val:
        """Integer bits reinterpreted as the float type ``t``."""
        return self.em.emit(arith.BitcastOp.new(self.value, t))


def where(cond: Val, a: Operand, b: Operand) -> Val:
    """Elementwise ``a if cond else b`` (``arith.select``)."""
    like = a if isinstance(a, Val) else b
    assert isinstance(like, Val), "where() needs at least one IR value among a, b"
    av, bv = like._v(a), like._v(b)
    return cond.em.emit(arith.SelectOp.new(cond.value, av.value, bv.value))


def horner(x: Val, coeffs: Sequence[float]) -> Val:
    """``c0 + x*(c1 + x*(c2 + ...))``; each step one fused multiply-add when the
    emitter's target has FMA (one rounding instead of two: never less accurate, and
    half the instructions)."""
    acc: Val | float = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = fma(x, acc, c) if x.em.fma else (x * acc) + c
    assert isinstance(acc, Val)
    return acc


def fma(a: Val, b: Operand, c: Operand) -> Val:
    """``a * b + c`` rounded once (``math.fma``)."""
    return a.em.emit(m.FmaOp.new(a.value, a._v(b).value, a._v(c).value))


def mul_add(a: Val, b: Operand, c: Operand) -> Val:
    """``a * b + c``: one ``math.fma`` when the target has FMA, else a rounded product
    and a rounded sum (for steps whose accuracy does not need the single rounding)."""
    return fma(a, b, c) if a.em.fma else a * b + c


def copysign(y: Val, x: Val) -> Val:
    """``|y|`` with the sign bit of ``x`` (bit operations: exact for zeros, NaN kept)."""
    sign = -(1 << (y.elem.bitwidth - 1))
    return ((y.bits() & ~sign) | (x.bits() & sign)).as_float(y.elem)


def split(value: float, bits: int) -> tuple[float, float]:
    """``value`` as ``hi + lo``: ``hi`` has at most ``bits`` significant bits (so its
    products with small integers are exact in float32), ``lo`` is the float32 rest."""
    mant, exp = math.frexp(value)
    hi = math.ldexp(round(math.ldexp(mant, bits)), exp - bits)
    return hi, float(np.float32(value - hi))


def pow2(k: Val, t: ScalarType = f32) -> Val:
    """``2.0**k`` for an integer ``k`` in the normal exponent range, built from bits."""
    mant_bits = {f32: 23, f64: 52}[t]
    bias = {f32: 127, f64: 1023}[t]
    return ((k + bias) << mant_bits).as_float(t)


def ldexp(u: Val, k: Val) -> Val:
    """``u * 2**k`` for float32 ``u`` in [0.5, 2] and ``|k| <= 252``: two exact scalings
    whose second rounds once into the denormal range or overflows to inf, as it must."""
    h = k >> 1
    return u * pow2(h) * pow2(k - h)
