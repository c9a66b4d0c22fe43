"""Type promotion, following numpy 2 (NEP 50), by asking numpy itself.

An operand is described to numpy as a dtype when it is *strong* (arrays, numpy
scalars) and as the Python type ``int``/``float`` when it is *weak* (Python numbers,
known at compile time or not); numpy's ``ufunc.resolve_dtypes`` then gives the loop's
input dtypes (what the frontend casts operands to) and its output dtype, exactly as
numpy would pick them.  Python ``bool`` is described as ``np.bool_``, which gives the
same answers since bool is the lowest kind.

When every operand is weak and the operation is a Python operator, Python's own rules
apply instead (``1 / 2`` is a float, ``True + True`` is an int): the result kind is
found by applying the operator to sample values of each kind.

A compile-time Python int that does not fit the integer dtype it is converted to is an
error, as numpy raises ``OverflowError`` for it; a run-time Python int wraps instead.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from pyasc.errors import TypeMismatchError
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_number
from pyasc.ir.types import ScalarType, f64, i1, index, scalar_from_numpy

WEAK_KINDS: dict[type, ScalarType] = {bool: i1, int: index, float: f64}
_KIND_ORDER = {i1: 0, index: 1, f64: 2}
_SAMPLES = {i1: True, index: 3, f64: 2.5}


def weak_type_of(v: object) -> ScalarType:
    """The IR type a compile-time Python number becomes (``bool`` before ``int``)."""
    if isinstance(v, bool):
        return i1
    return index if isinstance(v, int) else f64


def is_weak(v: object) -> bool:
    """Python numbers, compile-time or run-time, are weakly typed under NEP 50."""
    return is_number(v) or (isinstance(v, Scalar) and v.weak)


def element_of(v: object) -> ScalarType:
    """The IR element type of a frontend value (weak numbers: ``i1``/``index``/``f64``)."""
    if isinstance(v, Scalar | Tensor | Buffer):
        t = v.type
        return t if isinstance(t, ScalarType) else t.element
    if isinstance(v, np.generic):
        return scalar_from_numpy(v.dtype)
    return weak_type_of(v)


def numpy_operand(v: object) -> np.dtype | type:
    """How numpy should see ``v`` when resolving a ufunc (``int``/``float`` = weak)."""
    t = element_of(v)
    if is_weak(v) and t != i1:
        return int if t == index else float
    return t.to_numpy()


def to_ir(dt: np.dtype) -> ScalarType:
    """The IR type of a numpy dtype (E50001 if pyasc does not support it)."""
    try:
        return scalar_from_numpy(dt)
    except TypeError as exc:
        raise TypeMismatchError(str(exc)) from None


def resolve_ufunc(ufunc: np.ufunc, operands: Sequence[object]
                  ) -> tuple[list[ScalarType], ScalarType]:
    """numpy's loop dtypes for ``ufunc`` on ``operands``: (input types, output type)."""
    dtypes = tuple(numpy_operand(v) for v in operands) + (None,) * ufunc.nout
    try:
        resolved = ufunc.resolve_dtypes(dtypes)
    except (TypeError, ValueError) as exc:
        names = ", ".join(describe(v) for v in operands)
        raise TypeMismatchError(f"numpy '{ufunc.__name__}' does not support {names}",
                                hint=_first_line(str(exc))) from None
    ins = [to_ir(d) for d in resolved[:ufunc.nin]]
    for v, t in zip(operands, ins, strict=True):
        check_fits(v, t)
    return ins, to_ir(resolved[ufunc.nin])


def python_result(op: Callable[[object, object], object], kinds: Sequence[ScalarType]
                  ) -> ScalarType:
    """The weak type of a Python operator applied to weak operands of ``kinds``."""
    result = op(*(_SAMPLES[k] for k in kinds))
    return weak_type_of(result)


def python_join(kinds: Sequence[ScalarType]) -> ScalarType:
    """The widest of weak kinds (bool < int < float)."""
    return max(kinds, key=lambda k: _KIND_ORDER[k])


def result_type(values: Sequence[object]) -> tuple[ScalarType, bool]:
    """``np.result_type`` of values (weak ones as Python samples) and the weakness."""
    if all(is_weak(v) for v in values):
        return python_join([element_of(v) for v in values]), True
    samples = [_SAMPLES[element_of(v)] if is_weak(v) and element_of(v) != i1
               else element_of(v).to_numpy() for v in values]
    try:
        dt = np.result_type(*samples)
    except TypeError as exc:
        raise TypeMismatchError(f"cannot combine {', '.join(map(describe, values))}",
                                hint=_first_line(str(exc))) from None
    return to_ir(dt), False


def join_types(a: tuple[ScalarType, bool], b: tuple[ScalarType, bool]
               ) -> tuple[ScalarType, bool]:
    """The type a value takes where two paths meet (control-flow joins)."""
    if a == b:
        return a
    if a[1] and b[1]:
        return python_join([a[0], b[0]]), True
    samples = [_SAMPLES[t] if weak and t != i1 else t.to_numpy() for t, weak in (a, b)]
    return to_ir(np.result_type(*samples)), False


def check_fits(v: object, t: ScalarType) -> None:
    """NEP 50: a compile-time Python int must fit the integer dtype it converts to."""
    if not is_number(v) or isinstance(v, bool) or not isinstance(v, int):
        return
    if t.is_int and not t.is_index:
        info = np.iinfo(t.to_numpy())
        if not info.min <= v <= info.max:
            raise TypeMismatchError(f"Python integer {v} out of bounds for {t.to_numpy()}",
                                    hint="cast explicitly, e.g. np.int64(value)")


def describe(v: object) -> str:
    """A short description of a frontend value for messages."""
    from pyasc.frontend.values import kind_name

    return kind_name(v)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


PY_OPERATORS: dict[str, Callable[[object, object], object]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "true_divide": operator.truediv, "floor_divide": operator.floordiv,
    "remainder": operator.mod, "power": operator.pow, "bitwise_and": operator.and_,
    "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
    "left_shift": operator.lshift, "right_shift": operator.rshift,
    "equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
    "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge,
}
"""The Python operator behind each binary ufunc name (for weak-weak operations)."""
