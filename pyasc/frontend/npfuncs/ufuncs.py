"""Elementwise numpy functions (every ufunc of the ``elementwise`` table and common
aliases), ``where``, ``clip``, ``round``, and the scalar functions of ``math``.

``dtype=`` on a ufunc casts the operands to that dtype before computing (numpy's
``signature`` for the common case); ``out=`` writes the result with ``same_kind``
casting.  ``math.*`` functions follow Python: they take and return Python floats
(``math.floor``/``ceil``/``trunc`` return Python ints).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pyasc.errors import TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend.custom_vjp import AUTODIFF_CALLS
from pyasc.frontend.elementwise import UFUNCS, apply_ufunc
from pyasc.frontend.npfuncs.common import as_dtype, finish, python_dtype, static_int, strong
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime
from pyasc.ir.ops import arith
from pyasc.ir.ops import math as m
from pyasc.ir.ops.autodiff import StopGradientOp
from pyasc.ir.types import f64, i1, index

INTRINSIC_UFUNCS = {"erf": "pyasc.ops.erf"}
"""Elementwise functions numpy lacks: the name of the pyasc function users call (it
carries ``__pyasc_intrinsic__``, so the compiler sees this entry; plain Python runs it)."""

ALIASES = {"abs": "absolute", "divide": "true_divide", "mod": "remainder", "pow": "power",
           "radians": "deg2rad", "degrees": "rad2deg", "atan": "arctan", "atan2": "arctan2",
           "asin": "arcsin", "acos": "arccos", "asinh": "arcsinh", "acosh": "arccosh",
           "atanh": "arctanh"}


def _cast_operands(lw, operands: list[object], dtype: object) -> list[object]:
    t = as_dtype(lw, dtype)
    if t is None:
        return operands
    return [lw.em.cast(lw.em.value(v) if is_runtime(v) else lw.em.scalar(v, t), t)
            for v in operands]


def _unary(name: str):
    def handler(lw, x, /, out=None, *, dtype=None):
        return finish(lw, apply_ufunc(lw.em, name, _cast_operands(lw, [x], dtype)), out,
                      name)
    handler.__doc__ = f"elementwise `{name}` (numpy dtype rules)"
    return handler


def _binary(name: str):
    def handler(lw, x1, x2, /, out=None, *, dtype=None):
        operands = _cast_operands(lw, [x1, x2], dtype)
        return finish(lw, apply_ufunc(lw.em, name, operands), out, name)
    handler.__doc__ = f"elementwise `{name}` with broadcasting (numpy dtype rules)"
    return handler


def _register_ufuncs() -> None:
    for name, u in UFUNCS.items():
        if name in INTRINSIC_UFUNCS:
            continue
        maker = _unary if u.ufunc.nin == 1 else _binary
        names = [name] + [a for a, target in ALIASES.items() if target == name]
        register(*names)(maker(name))


_register_ufuncs()
for _name, _public in INTRINSIC_UFUNCS.items():
    register(_public)(_unary(_name))


@register("pyasc.ops.stop_gradient")
def stop_gradient(lw, x, /):
    """`x` itself, through which automatic differentiation passes no gradient (JAX's
    `lax.stop_gradient`)"""
    if not lw.unit.options.get(AUTODIFF_CALLS):
        return x  # a forward compiled to run: the very value (an array: the same buffer)
    v = lw.em.operand(x)
    if not isinstance(v, Tensor | Scalar):
        return v
    return dataclasses.replace(v, value=lw.em.result(StopGradientOp([v.value],
                                                                     [v.value.type])))


@register("where")
def where(lw, condition, x=None, y=None, /):
    """`np.where(c, x, y)`; `np.where(c)` is `np.nonzero(c)`"""
    if x is None and y is None:
        return call_numpy(lw, "nonzero", [condition], {})
    if x is None or y is None:
        raise TypeMismatchError("either both or neither of x and y should be given")
    em = lw.em
    c = em.operand(condition)
    c = em.cast(c if is_runtime(c) else em.scalar(c, i1), i1)
    xs = [em.operand(v) for v in (x, y)]
    t, weak = result_type(xs)
    if isinstance(c, Tensor) or any(isinstance(v, Tensor) for v in xs):
        t = strong(t)
    a, b = (em.cast(v if is_runtime(v) else em.scalar(_wrapped(v, t), t), t) for v in xs)
    dims = _result_dims(lw, [c, a, b])
    result = em.result(arith.SelectOp.new(c.value, a.value, b.value))
    return Tensor(result, dims) if dims is not None else Scalar(result, weak=False)


def _wrapped(v: object, t) -> object:
    """``np.where`` is no ufunc: numpy casts a Python int that does not fit the result's
    integer dtype with wrap-around (``np.where(c, uint8_array, -4)`` holds 252) instead
    of raising ``OverflowError``."""
    if type(v) is not int or not t.is_int or t.is_index:
        return v
    info = np.iinfo(t.to_numpy())
    if info.min <= v <= info.max or not -2**63 <= v < 2**64:
        return v  # fits, or not even an int64 for numpy (then it raises too)
    return int(np.array(v, dtype=np.uint64 if v >= 2**63 else np.int64).astype(t.to_numpy()))


def _result_dims(lw, values: list[object]):
    from pyasc.frontend.elementwise import broadcast_dims

    arrays = [v for v in values if isinstance(v, Tensor)]
    return broadcast_dims(lw.em, [lw.em.dims(a) for a in arrays]) if arrays else None


@register("sinc")
def sinc(lw, x, /):
    """numpy's formula `sin(y) / y`, `y = pi * x` (`eps` where `y` is 0), in `y`'s dtype"""
    em = lw.em
    v = em.operand(x)
    if not isinstance(v, Tensor):  # numpy: np.asanyarray(x) first, a strong dtype
        v = em.scalar(v, python_dtype(v)) if not is_runtime(v) else \
            em.cast_scalar(v, python_dtype(v))
    y = apply_ufunc(em, "multiply", [v, math.pi])
    t = y.type if isinstance(y, Scalar) else y.type.element
    eps = em.const(float(np.finfo(t.to_numpy()).eps), t)
    y = where(lw, apply_ufunc(em, "not_equal", [y, 0]), y, eps)
    return apply_ufunc(em, "true_divide", [apply_ufunc(em, "sin", [y]), y])


@register("clip", "ndarray.clip")
def clip(lw, a, a_min=None, a_max=None, out=None):
    """`np.clip`: `minimum(maximum(a, a_min), a_max)` in the promoted dtype"""
    em = lw.em
    bounds = [v for v in (a_min, a_max) if v is not None]
    if not bounds:
        raise UnsupportedNumpyError("np.clip needs a_min or a_max")
    x = em.operand(a)
    t, _ = result_type([x, *(em.operand(v) for v in bounds)])
    if isinstance(x, Tensor):
        t = strong(t)
    value = em.cast(x if is_runtime(x) else em.scalar(x, t), t)
    if a_min is not None:
        value = apply_ufunc(em, "maximum", [value, _as(lw, a_min, t)])
    if a_max is not None:
        value = apply_ufunc(em, "minimum", [value, _as(lw, a_max, t)])
    return finish(lw, value, out, "clip")


def _as(lw, v: object, t) -> object:
    x = lw.em.operand(v)
    return lw.em.cast(x if is_runtime(x) else lw.em.scalar(x, t), t)


@register("round", "around", "ndarray.round")
def round_(lw, a, decimals=0, out=None):
    """round half to even; `decimals` scales by 10**decimals as numpy does"""
    em = lw.em
    d = static_int(lw, decimals, "decimals")
    x = em.operand(a)
    x = x if is_runtime(x) else em.scalar(x, python_dtype(x))
    t = x.type if isinstance(x, Scalar) else x.type.element
    if not t.is_float:
        if d < 0:
            raise UnsupportedNumpyError("np.round of integers with negative decimals")
        return finish(lw, x, out, "round")
    if d == 0:
        return finish(lw, apply_ufunc(em, "rint", [x]), out, "round")
    scale = em.scalar(10.0 ** abs(d), t)
    up, down = ("multiply", "true_divide") if d > 0 else ("true_divide", "multiply")
    y = apply_ufunc(em, down, [apply_ufunc(em, "rint", [apply_ufunc(em, up, [x, scale])]),
                               scale])
    return finish(lw, y, out, "round")


# ---------------------------------------------------------------------------- math

_MATH_FLOAT = {"sqrt": m.SqrtOp, "exp": m.ExpOp, "log": m.LogOp, "log2": m.Log2Op,
               "log10": m.Log10Op, "log1p": m.Log1pOp, "expm1": m.Expm1Op, "sin": m.SinOp,
               "cos": m.CosOp, "tan": m.TanOp, "tanh": m.TanhOp, "fabs": m.AbsOp,
               "erf": m.ErfOp}
_MATH_INT = {"floor": m.FloorOp, "ceil": m.CeilOp, "trunc": m.TruncOp}
_MATH_PRED = {"isnan": m.IsNanOp, "isinf": m.IsInfOp, "isfinite": m.IsFiniteOp}


def _math_operand(lw, name: str, x: object) -> Scalar | None:
    """``None`` for compile-time operands (folded by Python), else an f64 Scalar."""
    if isinstance(x, Tensor | Buffer):
        raise TypeMismatchError(f"math.{name}() takes a scalar, not an array",
                                hint=f"use np.{name}")
    if not is_runtime(x):
        return None
    return lw.em.cast_scalar(x, f64)  # type: ignore[arg-type]


def _math(name: str, table: dict, result):
    def handler(lw, x, /):
        s = _math_operand(lw, name, x)
        if s is None:
            try:
                return getattr(math, name)(x)
            except (ValueError, TypeError, OverflowError) as exc:
                raise TypeMismatchError(f"math.{name}: {exc}") from None
        v = lw.em.result(table[name].new(s.value))
        return result(lw, v)
    handler.__doc__ = f"Python `math.{name}` on a scalar"
    return handler


def _as_float(lw, v):
    return Scalar(v, weak=True)


def _as_int(lw, v):
    return Scalar(lw.em.result(arith.CastOp.new(v, index)), weak=True)


def _as_bool(lw, v):
    return Scalar(v, weak=True)


for _name in _MATH_FLOAT:
    register(f"math.{_name}")(_math(_name, _MATH_FLOAT, _as_float))
for _name in _MATH_INT:
    register(f"math.{_name}")(_math(_name, _MATH_INT, _as_int))
for _name in _MATH_PRED:
    register(f"math.{_name}")(_math(_name, _MATH_PRED, _as_bool))


@register("math.pow")
def math_pow(lw, x, y, /):
    """Python `math.pow` (floats)"""
    if not is_runtime(x) and not is_runtime(y):
        return math.pow(x, y)
    a, b = (lw.em.cast_scalar(lw.em.scalar(v), f64) for v in (x, y))
    return Scalar(lw.em.result(m.PowOp.new(a.value, b.value)), weak=True)

