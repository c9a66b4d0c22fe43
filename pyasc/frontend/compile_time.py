"""``pyasc.static``: asking for a compile-time value from inside a ``@hybrid`` function.

Arguments become compile-time values by themselves only where numpy needs one (an
``axis=``, a slice step...).  A size that only decides shapes (a padding, a window) can
also be a run-time value, which gives arrays of run-time shape: slower code on the CPU,
and refused on the AI Core in loops.  ``static(v)`` says that ``v`` must be known when
compiling: an argument it is computed from is specialized by value (one kernel per
value, see ``pyasc/jit/specialize.py``); a value computed from array contents is E50011.
The call lowering is ``pybuiltins``'s; run as Python it returns ``v``.

``require(condition, message)`` is an argument check of a library function written as a
``@hybrid`` body (``pyasc.ops``): its condition is a compile-time value, and when it is
false the coded error (E50002 for shapes, E50040 for other arguments) points at the
user's line that called the library, not at the library's own line.  A shape condition
computed from run-time dimensions (``dynamic_shape``) is checked when the kernel runs
(the same E50002, at the same line): array arguments of run-time shape are allowed.
"""

from __future__ import annotations

from typing import TypeVar

from pyasc.errors import ArgumentError, PyascError, ShapeInferenceError

T = TypeVar("T")

REQUIRE_ERRORS: dict[str, type[PyascError]] = {
    "shape": ShapeInferenceError, "argument": ArgumentError,
}
"""The error ``require`` raises, by its ``kind``."""


def static(value: T) -> T:
    """``value`` itself, which must be known at compile time in a ``@hybrid`` function
    (numbers, tuples of them...): the argument it comes from is specialized by value."""
    return value


def require(condition: object, message: str, kind: str = "shape") -> None:
    """Raise the coded error of ``kind`` (``"shape"``, ``"argument"``) with ``message``
    when ``condition`` is false; in a ``@hybrid`` function ``condition`` must be known
    at compile time (or, for ``"shape"``, computed from run-time array dimensions:
    checked when the kernel runs) and the error is located at the user's call of the
    library."""
    if not condition:
        raise REQUIRE_ERRORS[kind](message)
