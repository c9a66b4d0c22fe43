"""Elementwise operations with numpy semantics: one table from ufunc name to IR op.

:func:`apply_ufunc` resolves the loop dtypes with numpy (``promotion.resolve_ufunc``),
casts the operands, checks broadcasting at compile time and emits the IR op.  Python
operators use the same table (``x + y`` is ``np.add``), except that when every operand
is a weak Python number the result follows Python's rules (see ``promotion``).

A few numpy loops need a different IR op than the table default: on ``bool`` numpy's
``add``/``maximum`` are logical or and ``multiply``/``minimum`` logical and; rounding an
integer is the identity; ``isnan``/``isinf`` of an integer are constant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError
from pyasc.failures import raise_kind
from pyasc.frontend import composed as c
from pyasc.frontend import indexmath
from pyasc.frontend.emit import Emitter
from pyasc.frontend.promotion import (
    PY_OPERATORS,
    element_of,
    is_weak,
    python_join,
    python_result,
    resolve_ufunc,
)
from pyasc.frontend.values import Dim, Scalar, Tensor, is_number
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.types import DYN, ScalarType, TensorType, broadcast_shapes, f64, i1, index

Emit = Callable[[Emitter, list[Value], ScalarType], Value]


def _op(cls: type[Operation]) -> Emit:
    return lambda em, vs, t: em.result(cls.new(*vs))


def _cmp(pred: str) -> Emit:
    def emit(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
        if _elem(vs[0]) != _elem(vs[1]):
            return _mixed_sign_cmp(em, pred, vs)
        return em.result(arith.CmpOp.new(pred, *vs))
    return emit


_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _mixed_sign_cmp(em: Emitter, pred: str, vs: list[Value]) -> Value:
    """numpy 2's exact uint64-vs-int64 comparison: a negative int64 is below every
    uint64, otherwise both compare as uint64."""
    if _elem(vs[0]).is_signed:
        return _mixed_sign_cmp(em, _SWAPPED[pred], [vs[1], vs[0]])
    u, s = vs
    zero = em.const(0, _elem(s)).value
    negative = em.result(arith.CmpOp.new("lt", s, zero))
    as_unsigned = em.result(arith.CastOp.new(s, _elem(u)))
    compared = em.result(arith.CmpOp.new(pred, u, as_unsigned))
    always = em.const(pred in ("gt", "ge", "ne"), i1).value
    return em.result(arith.SelectOp.new(negative, always, compared))


def _elem(v: Value) -> ScalarType:
    return v.type.element if isinstance(v.type, TensorType) else v.type  # type: ignore


def _logical(cls: type[Operation]) -> Emit:
    def emit(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
        return em.result(cls.new(*(_to_bool(em, v) for v in vs)))
    return emit


def _to_bool(em: Emitter, v: Value) -> Value:
    t = v.type.element if isinstance(v.type, TensorType) else v.type
    return v if t == i1 else em.result(arith.CastOp.new(v, i1))


def _identity(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
    return vs[0]


def _const_like(value: bool) -> Emit:
    def emit(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
        c = em.const(value, i1).value
        if isinstance(vs[0].type, TensorType):
            shape = vs[0].type.shape
            dims = [em.result(_dim_op(vs[0], a)) for a, d in enumerate(shape) if d == DYN]
            return em.result(tensor.FillOp.new(c, TensorType(shape, i1), dims))
        return c
    return emit


def _dim_op(v: Value, axis: int) -> Operation:
    return tensor.DimOp([v], [index], {"axis": axis})


def _square(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
    return em.result(arith.MulOp.new(vs[0], vs[0]))


def _positive(em: Emitter, vs: list[Value], t: ScalarType) -> Value:
    return vs[0]


@dataclass(frozen=True)
class Ufunc:
    """One elementwise numpy function: the ufunc (for dtype rules) and its IR lowering."""

    ufunc: np.ufunc
    emit: Emit
    on_bool: Emit | None = None  # lowering when the loop dtype is bool
    on_int: Emit | None = None  # lowering when the loop dtype is an integer


_ROUNDING = {"on_int": _identity, "on_bool": _identity}
UFUNCS: dict[str, Ufunc] = {
    "add": Ufunc(np.add, _op(arith.AddOp), on_bool=_op(arith.OrOp)),
    "subtract": Ufunc(np.subtract, _op(arith.SubOp)),
    "multiply": Ufunc(np.multiply, _op(arith.MulOp), on_bool=_op(arith.AndOp)),
    "true_divide": Ufunc(np.true_divide, _op(arith.DivOp)),
    "floor_divide": Ufunc(np.floor_divide, _op(arith.FloorDivOp)),
    "remainder": Ufunc(np.remainder, _op(arith.RemOp)),
    "power": Ufunc(np.power, c.formula(c.power, narrow_in_f32=False)),
    "maximum": Ufunc(np.maximum, _op(arith.MaxOp), on_bool=_op(arith.OrOp)),
    "minimum": Ufunc(np.minimum, _op(arith.MinOp), on_bool=_op(arith.AndOp)),
    "bitwise_and": Ufunc(np.bitwise_and, _op(arith.AndOp)),
    "bitwise_or": Ufunc(np.bitwise_or, _op(arith.OrOp)),
    "bitwise_xor": Ufunc(np.bitwise_xor, _op(arith.XorOp)),
    "left_shift": Ufunc(np.left_shift, _op(arith.ShlOp)),
    "right_shift": Ufunc(np.right_shift, _op(arith.ShrOp)),
    "logical_and": Ufunc(np.logical_and, _logical(arith.AndOp)),
    "logical_or": Ufunc(np.logical_or, _logical(arith.OrOp)),
    "logical_xor": Ufunc(np.logical_xor, _logical(arith.XorOp)),
    "logical_not": Ufunc(np.logical_not, _logical(arith.NotOp)),
    "equal": Ufunc(np.equal, _cmp("eq")),
    "not_equal": Ufunc(np.not_equal, _cmp("ne")),
    "less": Ufunc(np.less, _cmp("lt")),
    "less_equal": Ufunc(np.less_equal, _cmp("le")),
    "greater": Ufunc(np.greater, _cmp("gt")),
    "greater_equal": Ufunc(np.greater_equal, _cmp("ge")),
    "negative": Ufunc(np.negative, _op(arith.NegOp)),
    "positive": Ufunc(np.positive, _positive),
    "invert": Ufunc(np.invert, _op(arith.NotOp)),
    "absolute": Ufunc(np.absolute, _op(m.AbsOp), on_bool=_identity),
    "sign": Ufunc(np.sign, _op(m.SignOp)),
    "square": Ufunc(np.square, _square),
    "exp": Ufunc(np.exp, _op(m.ExpOp)),
    "exp2": Ufunc(np.exp2, _op(m.Exp2Op)),
    "expm1": Ufunc(np.expm1, _op(m.Expm1Op)),
    "log": Ufunc(np.log, _op(m.LogOp)),
    "log2": Ufunc(np.log2, _op(m.Log2Op)),
    "log10": Ufunc(np.log10, _op(m.Log10Op)),
    "log1p": Ufunc(np.log1p, _op(m.Log1pOp)),
    "sqrt": Ufunc(np.sqrt, _op(m.SqrtOp)),
    "tanh": Ufunc(np.tanh, _op(m.TanhOp)),
    "sin": Ufunc(np.sin, _op(m.SinOp)),
    "cos": Ufunc(np.cos, _op(m.CosOp)),
    "tan": Ufunc(np.tan, _op(m.TanOp)),
    "arctan": Ufunc(np.arctan, _op(m.AtanOp)),
    # numpy has no erf (``pyasc.ops.erf`` is the array function): tanh's loops give the
    # same dtype rules (a float keeps its dtype, bool/int become float)
    "erf": Ufunc(np.tanh, _op(m.ErfOp)),
    "floor": Ufunc(np.floor, _op(m.FloorOp), **_ROUNDING),
    "ceil": Ufunc(np.ceil, _op(m.CeilOp), **_ROUNDING),
    "trunc": Ufunc(np.trunc, _op(m.TruncOp), **_ROUNDING),
    "rint": Ufunc(np.rint, _op(m.RoundOp), **_ROUNDING),
    "isnan": Ufunc(np.isnan, _op(m.IsNanOp),
                   on_int=_const_like(False), on_bool=_const_like(False)),
    "isinf": Ufunc(np.isinf, _op(m.IsInfOp),
                   on_int=_const_like(False), on_bool=_const_like(False)),
    "isfinite": Ufunc(np.isfinite, _op(m.IsFiniteOp),
                      on_int=_const_like(True), on_bool=_const_like(True)),
    # composed from the ops above (``composed.py``)
    "deg2rad": Ufunc(np.deg2rad, c.formula(c.deg2rad)),
    "rad2deg": Ufunc(np.rad2deg, c.formula(c.rad2deg)),
    "copysign": Ufunc(np.copysign, c.formula(c.copysign, narrow_in_f32=False)),
    "heaviside": Ufunc(np.heaviside, c.formula(c.heaviside, narrow_in_f32=False)),
    "hypot": Ufunc(np.hypot, c.formula(c.hypot)),
    # no rounding, only selects: the half loops' float32 detour changes nothing
    "fmax": Ufunc(np.fmax, c.formula(c.fmax, narrow_in_f32=False), on_int=_op(arith.MaxOp),
                  on_bool=_op(arith.OrOp)),
    "fmin": Ufunc(np.fmin, c.formula(c.fmin, narrow_in_f32=False), on_int=_op(arith.MinOp),
                  on_bool=_op(arith.AndOp)),
    "logaddexp": Ufunc(np.logaddexp, c.formula(c.logaddexp)),
    "logaddexp2": Ufunc(np.logaddexp2, c.formula(c.logaddexp2)),
    "sinh": Ufunc(np.sinh, c.formula(c.sinh)),
    "cosh": Ufunc(np.cosh, c.formula(c.cosh)),
    "float_power": Ufunc(np.float_power, _op(m.PowOp)),  # numpy's loops are float64
    "fmod": Ufunc(np.fmod, c.formula(c.fmod_float), on_int=c.formula(c.fmod_int)),
    "nextafter": Ufunc(np.nextafter, c.formula(c.nextafter, narrow_in_f32=False)),
    "bitwise_count": Ufunc(np.bitwise_count, c.formula(c.bitwise_count)),
    "arctan2": Ufunc(np.arctan2, c.formula(c.arctan2)),
    "arcsin": Ufunc(np.arcsin, c.formula(c.arcsin)),
    "arccos": Ufunc(np.arccos, c.formula(c.arccos)),
    "arcsinh": Ufunc(np.arcsinh, c.formula(c.arcsinh)),
    "arccosh": Ufunc(np.arccosh, c.formula(c.arccosh)),
    "arctanh": Ufunc(np.arctanh, c.formula(c.arctanh)),
    "cbrt": Ufunc(np.cbrt, c.formula(c.cbrt)),
}
"""Every elementwise function, by numpy ufunc name."""

COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater",
                         "greater_equal"})


def broadcast_dims(em: Emitter, dims: Sequence[tuple[Dim, ...]]) -> tuple[Dim, ...]:
    """numpy broadcasting of dims; E50002 when static sizes conflict."""
    shape = broadcast_shapes(*(tuple(d if isinstance(d, int) else DYN for d in ds)
                               for ds in dims))
    if shape is None:
        text = " ".join(str(tuple("?" if not isinstance(d, int) else d for d in ds))
                        for ds in dims)
        raise ShapeInferenceError(f"operands could not be broadcast together with shapes "
                                  f"{text}")
    rank = len(shape)
    out: list[Dim] = []
    for axis in range(rank):
        cands = [ds[len(ds) - rank + axis] for ds in dims if len(ds) - rank + axis >= 0]
        static = [d for d in cands if isinstance(d, int) and d != 1]
        dynamic = [d for d in cands if not isinstance(d, int)]
        out.append(static[0] if static else _runtime_dim(em, dynamic) if dynamic else 1)
    return tuple(out)


def _runtime_dim(em: Emitter, dims: list[Scalar]) -> Dim:
    """numpy's broadcast of run-time extents: the one that is not 1.

    Two different ``?`` dims are not the same size: either may be 1 at run time (``x +
    b`` with shapes (5, 8) and (1, 8)), so the result's extent is chosen at run time;
    taking the first operand's would give ``mean``, ``.shape``, ``.size`` and every
    buffer sized from the result the wrong extent.  Whether the sizes are compatible is
    checked where the op is lowered."""
    distinct: list[Scalar] = []
    for d in dims:
        if not any(_same_dim(d, e) for e in distinct):
            distinct.append(d)
    acc = distinct[0]
    for d in distinct[1:]:
        if (indexmath.bound(acc, "lo") or 0) >= 2:  # not 1: d equals acc or is 1
            continue
        if (indexmath.bound(d, "lo") or 0) >= 2:
            acc = d
            continue
        acc = indexmath.select(em, indexmath.cmp(em, "eq", acc, 1), d, acc)
    return acc


def _same_dim(a: Scalar, b: Scalar) -> bool:
    """True when two index scalars are the same extent (one value, or ``dim`` ops of
    one array and axis)."""
    if a.value is b.value:
        return True
    ops = [getattr(x.value, "op", None) for x in (a, b)]
    return all(op is not None and op.name in ("tensor.dim", "mem.dim") for op in ops) and \
        ops[0].operand_values[0] is ops[1].operand_values[0] and \
        ops[0].attributes["axis"] == ops[1].attributes["axis"]


def _loop_lowering(u: Ufunc, in_types: list[ScalarType]) -> Emit:
    t = in_types[0]
    if t == i1 and u.on_bool is not None:
        return u.on_bool
    if t.is_int and u.on_int is not None:
        return u.on_int
    return u.emit


def apply_ufunc(em: Emitter, name: str, operands: Sequence[object],
                python_op: bool = False) -> object:
    """Apply ufunc ``name`` to frontend values; compile-time operands fold in Python."""
    u = UFUNCS[name]
    if python_op and all(is_number(v) for v in operands):
        return _fold(name, operands)
    values = _zero_d_as_scalars(em, [em.operand(v) for v in operands])
    if python_op and all(is_weak(v) for v in values):
        return _python_weak(em, name, values)
    if name in COMPARISONS:
        folded = _out_of_range_comparison(em, name, values)
        if folded is not None:
            return folded
        exact = _runtime_int_comparison(em, name, values)
        if exact is not None:
            return exact
    in_types, out_type = resolve_ufunc(u.ufunc, values)
    for v, t in zip(values, in_types, strict=True):
        if isinstance(v, Scalar):  # run-time Python ints (compile-time: resolve_ufunc)
            em.check_fits(v, t)
    if name == "power":
        _check_integer_exponent(em, values[1], in_types[1])
    return _emit(em, u, values, in_types, out_type, weak=False)


NEGATIVE_POWER = "Integers to negative integer powers are not allowed."
"""numpy's message for an integer power loop given a negative exponent."""


def _check_integer_exponent(em: Emitter, exponent: object, t: ScalarType) -> None:
    """numpy's integer ``power`` loops raise ``ValueError`` for any negative exponent
    (a Python int, a numpy scalar or an array element, compile-time or run-time):
    checked here, before the power (which gives 0 for such an exponent, a silent
    wrong result where numpy raises).  Float loops, unsigned and bool exponents, and
    run-time ints known to be non-negative (a loop counter) need no check."""
    if not t.is_int or t in (i1, index) or t.to_numpy().kind == "u":
        return
    if is_number(exponent):
        ok = em.const(bool(exponent >= 0), i1).value  # type: ignore[operator]
    elif isinstance(exponent, Scalar):
        if exponent.lo is not None and exponent.lo >= 0:
            return
        zero = em.const(0, exponent.type)
        ok = em.result(arith.CmpOp.new("ge", exponent.value, zero.value))
    elif isinstance(exponent, Tensor):
        cmp = apply_ufunc(em, "greater_equal", [exponent, 0])
        ok = em.result(tensor.AllOp.new(em.operand(cmp).value,
                                        tuple(range(exponent.type.rank))))
    else:
        return
    em.op(func.AssertOp([ok], [], {"message": NEGATIVE_POWER,
                                   "kind": raise_kind("ValueError")}))


def _runtime_int_comparison(em: Emitter, name: str, values: list[object]) -> object:
    """numpy 2 compares a typed integer with a Python int exactly, also when the int is
    only known at run time (a loop counter, ``len(x) - k``): ``(1 - k) < np.uint8(8)``
    is True for k = 2, where converting the int to the narrow type (NEP 50's rule for
    arithmetic) wraps -1 to 255.  The comparison stays in the narrow type (what the
    vector units compute); an int outside the type's range, tested apart as a scalar,
    decides the result instead: it lies beyond every element."""
    weak = [i for i, v in enumerate(values)
            if isinstance(v, Scalar) and v.weak and v.type.is_int and v.type != i1]
    if len(weak) != 1:
        return None
    k, other = weak[0], values[1 - weak[0]]
    t = element_of(other)
    if not t.is_int or t == i1 or t.is_index or is_weak(other):
        return None
    in_types, out_type = resolve_ufunc(UFUNCS[name].ufunc, values)
    out = _emit(em, UFUNCS[name], values, in_types, out_type, weak=False)
    info, runtime = np.iinfo(t.to_numpy()), np.iinfo(np.int64)  # run-time ints: int64
    for beyond, bound, side, possible in (("less", info.min, -1, info.min > runtime.min),
                                          ("greater", info.max, 1, info.max < runtime.max)):
        if not possible:
            continue
        outside = apply_ufunc(em, beyond, [values[k], bound], python_op=True)
        result = bool(PY_OPERATORS[name](*[(side if i == k else 0) for i in range(2)]))
        out = apply_ufunc(em, "logical_or", [outside, out]) if result else \
            apply_ufunc(em, "logical_and", [apply_ufunc(em, "logical_not", [outside]), out])
    return out


def _zero_d_as_scalars(em: Emitter, values: list[object]) -> list[object]:
    """numpy gives a scalar when every array operand is 0-d: compute on elements."""
    arrays = [v for v in values if isinstance(v, Tensor)]
    if not arrays or any(a.type.rank for a in arrays):
        return values
    return [Scalar(em.result(tensor.ExtractOp([v.value], [v.type.element])))
            if isinstance(v, Tensor) else v for v in values]


def _out_of_range_comparison(em: Emitter, name: str, values: list[object]) -> object:
    """numpy 2 compares integers with out-of-range Python ints exactly: the result is
    constant.  Returns it (broadcast to the array's shape), or None if in range."""
    ints = [i for i, v in enumerate(values) if isinstance(v, int) and not isinstance(v, bool)]
    if len(ints) != 1:
        return None
    k = ints[0]
    other = values[1 - k]
    t = element_of(other)
    if not t.is_int or t.is_index or is_weak(other):
        return None
    info = np.iinfo(t.to_numpy())
    v = values[k]
    if info.min <= v <= info.max:
        return None
    # Every element of the array is strictly on one side of v: compare 0 with +-1.
    samples = [(1 if v > info.max else -1) if i == k else 0 for i in range(2)]
    c = em.const(bool(PY_OPERATORS[name](*samples)), i1)
    if isinstance(other, Tensor):
        return em.fill(c, em.dims(other))
    return c


_PY_UNARY = {"negative": lambda x: -x, "positive": lambda x: +x, "invert": lambda x: ~x}


def _fold(name: str, operands: Sequence[object]) -> object:
    op = _PY_UNARY.get(name) or PY_OPERATORS[name]
    try:
        return op(*operands)
    except (TypeError, ZeroDivisionError, OverflowError, ValueError) as exc:
        raise TypeMismatchError(f"{type(exc).__name__}: {exc}") from None


def _python_weak(em: Emitter, name: str, values: list[object]) -> object:
    """Python-number semantics for operators on weak run-time operands."""
    kinds = [element_of(v) for v in values]
    op = _PY_UNARY.get(name) or PY_OPERATORS[name]
    try:
        out = python_result(op, kinds)
    except TypeError as exc:
        raise TypeMismatchError(str(exc)) from None
    if out == index and name in indexmath.BINARY and all(k != f64 for k in kinds):
        ints = [v if isinstance(v, Scalar) and v.type == index else
                em.cast_scalar(em.scalar(v), index) if isinstance(v, Scalar) else int(v)
                for v in values]
        return indexmath.BINARY[name](em, *ints)
    if name in COMPARISONS:
        ins = [python_join(kinds)] * len(values)
    elif name == "true_divide":
        ins = [f64, f64]
    elif name == "power" and out != f64 and _negative_python_exponent(em, values[1]):
        out, ins = f64, [f64, f64]  # Python: an int to a negative int power is a float
    else:
        ins = [out] * len(values)
    return _emit(em, UFUNCS[name], values, ins, out, weak=True)


NEGATIVE_PYTHON_POWER = ("a Python int to a negative int power that is only known at run "
                         "time: Python's result would be a float, pyasc typed it as an int")


def _negative_python_exponent(em: Emitter, exponent: object) -> bool:
    """Whether a Python ``int ** int`` takes a negative exponent: then Python's result
    is a float.  Decided at compile time for a constant; a run-time exponent (the result
    type cannot depend on it) is checked to be non-negative when the power runs, with
    a ``ValueError`` naming the fix, instead of an integer power giving 0."""
    if is_number(exponent):
        return exponent < 0  # type: ignore[operator]
    if isinstance(exponent, Scalar) and (exponent.lo is None or exponent.lo < 0):
        ok = em.result(arith.CmpOp.new("ge", exponent.value, em.const(0, exponent.type).value))
        em.op(func.AssertOp([ok], [], {"message": NEGATIVE_PYTHON_POWER + "; write "
                                       "float(n) ** k", "kind": raise_kind("ValueError")}))
    return False


def _emit(em: Emitter, u: Ufunc, values: list[object], in_types: list[ScalarType],
          out_type: ScalarType, weak: bool) -> Scalar | Tensor:
    cast = [em.cast(em.scalar(v, t) if not isinstance(v, Scalar | Tensor) else v, t)
            for v, t in zip(values, in_types, strict=True)]
    arrays = [v for v in cast if isinstance(v, Tensor)]
    dims = broadcast_dims(em, [em.dims(a) for a in arrays]) if arrays else None
    result = _loop_lowering(u, in_types)(em, [v.value for v in cast], out_type)
    elem = result.type.element if isinstance(result.type, TensorType) else result.type
    if elem != out_type:
        result = em.result(arith.CastOp.new(result, out_type))
    if isinstance(result.type, TensorType):
        return Tensor(result, dims)
    return Scalar(result, weak=weak)
