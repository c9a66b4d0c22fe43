"""The Python builtins a ``@hybrid`` function may call, with Python semantics.

``range``, ``len``, ``min``, ``max``, ``abs``, ``int``, ``float``, ``bool``, ``round``
and ``pow``, and ``pyasc.static`` (its value must be known at compile time).
``int()``/``float()``/``bool()`` of a run-time value give weak Python
scalars (``index``/``f64``/``i1``); ``min``/``max`` return one of their arguments (the
first of equal ones) like Python, and fold on index values whose bounds decide.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable

from pyasc.callsite import at_caller, library_file
from pyasc.errors import ArgumentError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.compile_time import REQUIRE_ERRORS, require, static
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.iteration import Enumerate, Product, Zip
from pyasc.frontend.lowering import from_run_time_dims
from pyasc.frontend.tables import TableRow
from pyasc.frontend.values import Buffer, RangeValue, Scalar, Tensor, is_number, is_runtime
from pyasc.ir.ops import func
from pyasc.ir.ops import math as m
from pyasc.ir.types import f64, i1, index


def _range(lw, *args: object) -> RangeValue:
    if not 1 <= len(args) <= 3:
        raise ArgumentError(f"range expected 1 to 3 arguments, got {len(args)}")
    bounds = [_as_index(lw, a) for a in args]
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else \
        (*bounds, 1)[:3] if len(bounds) == 2 else bounds
    if step == 0:
        raise ArgumentError("range() arg 3 must not be zero")
    return RangeValue(start, stop, step)


def _as_index(lw, v: object) -> int | Scalar:
    """An integer operand as a compile-time int or an index Scalar."""
    if isinstance(v, bool) or (is_number(v) and not isinstance(v, int)):
        raise TypeMismatchError(f"'{type(v).__name__}' object cannot be interpreted as an "
                                "integer")
    if isinstance(v, int):
        return v
    if hasattr(v, "dtype") and not is_runtime(v):  # numpy integer scalar
        return int(v)  # type: ignore[call-overload]
    if isinstance(v, Scalar) and v.type.is_int:
        return v if v.type == index else lw.em.cast_scalar(v, index)
    raise TypeMismatchError(f"expected an integer, got {type(v).__name__}")


def _len(lw, v: object) -> object:
    if isinstance(v, tuple | list | str | TableRow):
        return len(v)
    if isinstance(v, Tensor | Buffer):
        if v.type.rank == 0:
            raise TypeMismatchError("len() of unsized object")
        return lw.em.dims(v)[0]
    raise TypeMismatchError(f"object of type '{type(v).__name__}' has no len()")


def _abs(lw, v: object) -> object:
    if is_number(v):
        return abs(v)
    if isinstance(v, Scalar) and v.weak:
        t = v.type
        if t == i1:
            return lw.em.cast_scalar(v, index)
        return Scalar(lw.em.result(m.AbsOp.new(v.value)), weak=True,
                      lo=0 if t == index else None)
    return apply_ufunc(lw.em, "absolute", [v])


def _extreme(pred: str, fold: Callable, pick: Callable) -> Callable:
    def impl(lw, *args: object, **kwargs: object) -> object:
        if kwargs:
            raise UnsupportedNumpyError(f"{pred}() keyword arguments are not supported")
        items = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple | list) \
            else list(args)
        if not items:
            raise ArgumentError("expected at least one argument")
        best = items[0]
        for v in items[1:]:
            best = _pick(lw, best, v, pred, fold, pick)
        return best
    return impl


def _pick(lw, best: object, v: object, pred: str, fold: Callable, pick: Callable) -> object:
    if any(isinstance(x, Tensor | Buffer) and x.type.rank for x in (best, v)):  # 0-d: ok
        raise TypeMismatchError("min()/max() of arrays: the truth value of an array is "
                                "ambiguous", hint="use np.minimum/np.maximum or np.min/np.max")
    if is_number(best) and is_number(v):
        return pick(best, v)
    if _index_like(best) and _index_like(v):
        return fold(lw.em, best, v)
    from pyasc.frontend.conditional import select_value

    better = apply_ufunc(lw.em, UFUNC_OF[pred], [v, best], python_op=True)
    return select_value(lw, better.value, lambda: v, lambda: best)  # type: ignore


def _index_like(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or \
        (isinstance(v, Scalar) and v.type == index)


UFUNC_OF = {"min": "less", "max": "greater"}


def _convert(to: str) -> Callable:
    target = {"int": index, "float": f64, "bool": i1}[to]
    py = {"int": int, "float": float, "bool": bool}[to]

    def impl(lw, v: object = 0) -> object:
        if not is_runtime(v):
            try:
                return py(v)  # type: ignore[operator]
            except (TypeError, ValueError) as exc:
                raise TypeMismatchError(str(exc)) from None
        if isinstance(v, Tensor | Buffer):
            from pyasc.frontend.truth import _single_element

            v = _single_element(lw, v)
        if to == "bool":
            from pyasc.frontend.truth import truth

            out = truth(lw, v)
            return Scalar(out.value, weak=True)  # type: ignore[union-attr]
        assert isinstance(v, Scalar)
        return Scalar(lw.em.cast_scalar(v, target).value, weak=True)
    return impl


def _round(lw, v: object, ndigits: object = None) -> object:
    if not is_runtime(v):
        return round(v, ndigits)  # type: ignore[call-overload]
    if ndigits is not None:
        raise UnsupportedNumpyError("round(x, ndigits) of a run-time value",
                                    hint="use np.round(x, decimals)")
    if not isinstance(v, Scalar):
        raise TypeMismatchError("round() of an array", hint="use np.round")
    if v.type.is_float:
        v = Scalar(lw.em.result(m.RoundOp.new(v.value)))
    return Scalar(lw.em.cast_scalar(v, index).value, weak=True)


def _pow(lw, a: object, b: object) -> object:
    return apply_ufunc(lw.em, "power", [a, b], python_op=True)


def _static(lw, v: object) -> object:
    return lw.static(v, "the value given to pyasc.static()")


def _require(lw, condition: object, message: object, kind: object = "shape") -> None:
    """``pyasc.require``: a library's argument check, located at the user's call."""
    if not isinstance(message, str) or kind not in REQUIRE_ERRORS:
        raise ArgumentError("pyasc.require(condition, message, kind) takes a constant "
                            f"message and a kind in {sorted(REQUIRE_ERRORS)}")
    if kind == "shape" and _runtime_shape_condition(lw, condition):
        _require_at_run_time(lw, condition, message)
        return
    ok = lw.static(condition, "the condition of pyasc.require()")
    if ok:
        return
    err = REQUIRE_ERRORS[kind](message)
    for caller, node in reversed(lw.unit.sites):  # the innermost call from user code
        if not library_file(caller.src.filename):
            raise caller.src.locate(err, node)
    raise at_caller(err)  # the library was called from Python: the user's frame


def _runtime_shape_condition(lw, condition: object) -> bool:
    """Whether ``condition`` is a run-time bool computed from array dimensions only
    (``dynamic_shape``): checked when the kernel runs instead of refused."""
    return (isinstance(condition, Scalar) and is_runtime(condition)
            and not lw.unit.params_of(condition.value)
            and from_run_time_dims(condition.value, set()))


def _require_at_run_time(lw, condition: Scalar, message: str) -> None:
    """A failed run-time ``require`` raises E50002 (ShapeInferenceError), located at
    the user's call of the library as the compile-time check is."""
    ok = lw.em.cast_scalar(condition, i1).value if condition.type != i1 else condition.value
    op = func.AssertOp([ok], [], {"message": message, "kind": "shape"})
    for caller, node in reversed(lw.unit.sites):  # the innermost call from user code
        if not library_file(caller.src.filename):
            op.loc = caller.src.location(node)
            break
    lw.em.op(op)


def _enumerate(lw, iterable: object, start: object = 0) -> Enumerate:
    return Enumerate(iterable, _as_index(lw, start))


def _zip(lw, *iterables: object, strict: bool = False) -> Zip:
    if not iterables:
        raise ArgumentError("zip() needs at least one iterable")
    return Zip(tuple(iterables))


def _product(lw, *iterables: object, repeat: object = 1) -> Product:
    """``itertools.product``: a loop nest (``iteration.nested_loops``)."""
    n = lw.static(repeat, "repeat")
    if not iterables or not isinstance(n, int) or n < 1:
        raise ArgumentError("itertools.product() needs iterables and a repeat >= 1",
                            hint="loop over itertools.product(range(h), range(w))")
    return Product(tuple(iterables) * n)


BUILTIN_CALLS: dict[object, Callable] = {
    builtins.range: _range,
    builtins.len: _len,
    builtins.abs: _abs,
    builtins.min: _extreme("min", indexmath.minimum, builtins.min),
    builtins.max: _extreme("max", indexmath.maximum, builtins.max),
    builtins.int: _convert("int"),
    builtins.float: _convert("float"),
    builtins.bool: _convert("bool"),
    builtins.round: _round,
    builtins.pow: _pow,
    builtins.enumerate: _enumerate,
    builtins.zip: _zip,
    itertools.product: _product,
    static: _static,
    require: _require,
}
"""Lowering of each supported builtin, keyed by the builtin object."""
