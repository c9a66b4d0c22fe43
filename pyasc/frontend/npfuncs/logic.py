"""Tests and selections: ``count_nonzero select isclose allclose``, each written as
numpy writes it (``numpy/_core/numeric.py``, ``numpy/lib/_function_base_impl.py``) in
terms of ufuncs, ``where`` and reductions, so dtypes, NaN and infinities follow."""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, TypeMismatchError
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Scalar, Tensor, is_runtime
from pyasc.ir.types import i1


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


@register("count_nonzero")
def count_nonzero(lw, a, axis=None, *, keepdims=False):
    """number of non-zero elements (int64 counts, as numpy 2)"""
    x = array_arg(lw, a)
    nonzero = _u(lw, "not_equal", x, 0) if x.type.element != i1 else x
    return call_numpy(lw, "sum", [nonzero], {"axis": axis, "keepdims": keepdims,
                                              "dtype": "int64"})


@register("select")
def select(lw, condlist, choicelist, default=0):
    """the first choice whose condition holds, else `default` (numpy's result dtype)"""
    if not isinstance(condlist, tuple | list) or not isinstance(choicelist, tuple | list):
        raise TypeMismatchError("np.select takes a list of conditions and a list of "
                                "choices")
    if len(condlist) != len(choicelist):
        raise ShapeInferenceError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ShapeInferenceError("select with an empty condition list is not possible")
    conds = [array_arg(lw, c) for c in condlist]
    for i, c in enumerate(conds):
        if c.type.element != i1:
            raise TypeMismatchError(f"invalid entry {i} in condlist: should be boolean "
                                    "ndarray")
    # numpy: Python numbers stay weak in the result dtype, anything else is an array
    items = [v if type(v) in (int, float) else array_arg(lw, v)
             for v in (*choicelist, default)]
    t, _ = result_type([lw.em.operand(v) for v in items])
    em = lw.em
    choices = [em.cast(em.scalar(v, t) if not is_runtime(v) else em.operand(v), t)
               for v in items]
    out: object = choices.pop()
    for c, choice in zip(reversed(conds), reversed(choices), strict=True):
        out = call_numpy(lw, "where", [c, choice, out], {})
    return out


def _close(lw, a, b, rtol, atol, equal_nan) -> object:
    em = lw.em
    x = a if not is_runtime(em.operand(a)) else em.operand(a)
    y = em.operand(b)
    if isinstance(y, Tensor | Scalar):  # numpy: y as an inexact array first
        t = apply_ufunc(em, "add", [y, 0.0])  # the dtype of result_type(y, 1.0)
        elem = t.type if isinstance(t, Scalar) else t.type.element
        y = em.cast(y, elem)
    elif isinstance(y, int) and not isinstance(y, bool):
        y = float(y)
    size = _u(lw, "less_equal", _u(lw, "absolute", _u(lw, "subtract", x, y)),
              _u(lw, "add", atol, _u(lw, "multiply", rtol, _u(lw, "absolute", y))))
    result = _u(lw, "logical_or", _u(lw, "logical_and", size, _u(lw, "isfinite", y)),
                _u(lw, "equal", x, y))
    if lw.static(equal_nan, "equal_nan"):
        both = _u(lw, "logical_and", _u(lw, "isnan", x), _u(lw, "isnan", y))
        result = _u(lw, "logical_or", result, both)
    return result


@register("isclose")
def isclose(lw, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """`abs(a - b) <= atol + rtol * abs(b)` elementwise (numpy's formula and dtypes)"""
    return _close(lw, a, b, rtol, atol, equal_nan)


@register("allclose")
def allclose(lw, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """every element `isclose` (a Python bool)"""
    every = call_numpy(lw, "all", [_close(lw, a, b, rtol, atol, equal_nan)], {})
    if isinstance(every, Scalar):
        return Scalar(every.value, weak=True)
    return bool(every)
