"""Reference semantics of the scalar and elementwise ops (``arith``, ``math``), and the
coercion of numpy results to IR types that every evaluator shares.

Part of the reference semantics (``semantics`` holds the tensor and memory ops and the
table the interpreter and the constant folder look ops up in).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from pyasc.ir.core import DenseArray, Operation
from pyasc.ir.ops import arith
from pyasc.ir.ops import math as m
from pyasc.ir.types import DYN, ScalarType, ShapedType, Type, element_type

Evaluator = Callable[..., object]

_DTYPES: dict[str, np.dtype] = {}
"""numpy dtype per scalar type name: the interpreter asks for one per evaluated op."""


def np_dtype(t: Type) -> np.dtype:
    """The numpy dtype of a type's elements."""
    scalar = element_type(t)
    dt = _DTYPES.get(scalar.name)
    if dt is None:
        dt = _DTYPES[scalar.name] = scalar.to_numpy()
    return dt


def as_type(value: object, t: Type) -> object:
    """Coerce a numpy result to the IR type ``t``: a numpy scalar or an array."""
    dt = np_dtype(t)
    if isinstance(t, ScalarType):
        if type(value) is dt.type:  # already exact: most results (and eval_op checks twice)
            return value
        return dt.type(np.asarray(value).reshape(())[()]) if np.ndim(value) == 0 else \
            _not_scalar(value, t)
    arr = np.asarray(value)
    if arr.dtype != dt:
        arr = arr.astype(dt)
    return arr


def _not_scalar(value: object, t: Type) -> object:
    raise ValueError(f"expected a scalar of type {t}, got shape {np.shape(value)}")


def _result_shape(op: Operation, dims: list) -> tuple[int, ...]:
    """Concrete shape of ``op``'s single shaped result, given its dynamic-dim operands."""
    t = op.result.type
    assert isinstance(t, ShapedType)
    it = iter(int(d) for d in dims)
    return tuple(next(it) if d == DYN else d for d in t.shape)


# ---------------------------------------------------------------------------- arith / math

def _binary(fn: Callable) -> Evaluator:
    def ev(op: Operation, a: object, b: object) -> object:
        with np.errstate(all="ignore"):
            return as_type(fn(a, b), op.result.type)
    return ev


def _unary(fn: Callable) -> Evaluator:
    def ev(op: Operation, a: object) -> object:
        with np.errstate(all="ignore"):
            return as_type(fn(a), op.result.type)
    return ev


def _shift(left: bool) -> Evaluator:
    """numpy shift semantics: counts outside [0, width) give 0 (or -1 for negative shr)."""
    def ev(op: Operation, a: object, b: object) -> object:
        width = np_dtype(op.result.type).itemsize * 8
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        ok = (b_arr >= 0) & (b_arr < width)
        safe_b = np.where(ok, b_arr, 0).astype(a_arr.dtype)
        shifted = np.left_shift(a_arr, safe_b) if left else np.right_shift(a_arr, safe_b)
        fallback = np.zeros_like(shifted) if left else np.where(a_arr < 0, -1, 0).astype(
            a_arr.dtype)
        return as_type(np.where(ok, shifted, fallback), op.result.type)
    return ev


def _pow(op: Operation, a: object, b: object) -> object:
    dt = np_dtype(op.result.type)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            a_arr, b_arr = np.broadcast_arrays(np.asarray(a), np.asarray(b))
            neg = b_arr < 0
            res = np.power(a_arr, np.where(neg, 0, b_arr).astype(dt))
            # Negative exponents: only 1 and -1 have integer results; the rest give 0.
            special = np.where(a_arr == 1, 1, np.where(a_arr == -1, 1 - 2 * (b_arr % 2), 0))
            return as_type(np.where(neg, special.astype(dt), res), op.result.type)
        # C99 pow for every element: numpy's loop takes sqrt for a stride-0 exponent of
        # 0.5 ((-0)**0.5 = -0); the frontend emits that fast path as math.sqrt itself
        a_arr, b_arr = (np.array(v, ndmin=1) for v in np.broadcast_arrays(a, b))
        res = np.power(a_arr, b_arr).reshape(np.shape(np.broadcast(a, b)))
        return as_type(res, op.result.type)


def _fma(op: Operation, a: object, b: object, c: object) -> object:
    """``a * b + c`` rounded once to float32: the product is exact in float64, the sum
    rounded to float64 (``s``, with its exact error ``e`` by TwoSum); rounding ``s`` to
    float32 is then right unless ``s`` is a float32 midpoint that ``e`` moves off.
    float64: exactly, in rationals (non-finite operands as float64 arithmetic gives)."""
    if np.asarray(a).dtype == np.float64:
        return as_type(np.vectorize(_fma64, otypes=[np.float64])(a, b, c), op.result.type)
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        bv = s - p
        e = (p - (s - bv)) + (c64 - bv)
        r = np.asarray(s.astype(np.float32))
        up = s > r
        nb = np.nextafter(r, np.where(up, np.float32(np.inf), np.float32(-np.inf)))
        mid = (r.astype(np.float64) + nb.astype(np.float64)) / 2
        fix = np.isfinite(s) & np.isfinite(nb) & (s == mid) & (e != 0)
        toward = np.where(up, e > 0, e < 0)  # the exact value lies beyond the midpoint
        out = np.where(fix & toward, nb, r)
    return as_type(out.astype(np.float32), op.result.type)


def _fma64(a: float, b: float, c: float) -> float:
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE: -0 only for (-0) + (-0), else +0 (round to nearest)
        product_negative = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        both = (a == 0 or b == 0) and product_negative and math.copysign(1.0, c) < 0
        return -0.0 if both else 0.0
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _erf(x: object) -> object:
    arr = np.asarray(x)
    return np.vectorize(math.erf, otypes=[np.float64])(arr.astype(np.float64)).astype(arr.dtype)


def _sigmoid(x: object) -> object:
    arr = np.asarray(x)
    one = arr.dtype.type(1)
    return one / (one + np.exp(-arr))


def _rsqrt(x: object) -> object:
    arr = np.asarray(x)
    return arr.dtype.type(1) / np.sqrt(arr)


def _cmp(op: Operation, a: object, b: object) -> object:
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}[op.attributes["predicate"]]
    return as_type(fn(a, b), op.result.type)


def _cast(op: Operation, a: object) -> object:
    with np.errstate(all="ignore"):
        return as_type(np.asarray(a).astype(np_dtype(op.result.type)), op.result.type)


def _bitcast(op: Operation, a: object) -> object:
    # a same-itemsize view works on any strides, and on 0-d arrays for scalars
    return as_type(np.asarray(a).view(np_dtype(op.result.type)), op.result.type)


def _constant(op: Operation) -> object:
    v = op.attributes["value"]
    if isinstance(v, DenseArray):
        return v.array.astype(np_dtype(op.result.type)).copy()
    return np_dtype(op.result.type).type(v)


ARITH: dict[type[Operation], Evaluator] = {
    arith.ConstantOp: _constant,
    arith.AddOp: _binary(np.add),
    arith.SubOp: _binary(np.subtract),
    arith.MulOp: _binary(np.multiply),
    arith.DivOp: _binary(np.true_divide),
    arith.FloorDivOp: _binary(np.floor_divide),
    arith.RemOp: _binary(np.remainder),
    arith.MaxOp: _binary(np.maximum),
    arith.MinOp: _binary(np.minimum),
    arith.AndOp: _binary(np.bitwise_and),
    arith.OrOp: _binary(np.bitwise_or),
    arith.XorOp: _binary(np.bitwise_xor),
    arith.ShlOp: _shift(left=True),
    arith.ShrOp: _shift(left=False),
    arith.NegOp: _unary(np.negative),
    arith.NotOp: _unary(np.invert),
    arith.CmpOp: _cmp,
    arith.SelectOp: lambda op, c, a, b: as_type(np.where(c, a, b), op.result.type),
    arith.CastOp: _cast,
    arith.BitcastOp: _bitcast,
}

MATH: dict[type[Operation], Evaluator] = {
    m.ExpOp: _unary(np.exp), m.Exp2Op: _unary(np.exp2), m.Expm1Op: _unary(np.expm1),
    m.LogOp: _unary(np.log), m.Log2Op: _unary(np.log2), m.Log10Op: _unary(np.log10),
    m.Log1pOp: _unary(np.log1p), m.SqrtOp: _unary(np.sqrt), m.RsqrtOp: _unary(_rsqrt),
    m.TanhOp: _unary(np.tanh), m.SinOp: _unary(np.sin), m.CosOp: _unary(np.cos),
    m.TanOp: _unary(np.tan), m.AtanOp: _unary(np.arctan), m.ErfOp: _unary(_erf),
    m.FloorOp: _unary(np.floor),
    m.CeilOp: _unary(np.ceil), m.RoundOp: _unary(np.rint), m.TruncOp: _unary(np.trunc),
    m.SigmoidOp: _unary(_sigmoid), m.AbsOp: _unary(np.abs), m.SignOp: _unary(np.sign),
    m.PowOp: _pow, m.IsNanOp: _unary(np.isnan), m.IsInfOp: _unary(np.isinf),
    m.IsFiniteOp: _unary(np.isfinite), m.FmaOp: _fma,
}
