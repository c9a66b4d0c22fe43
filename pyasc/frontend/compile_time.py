"""``pyasc.static``: asking for a compile-time value from inside a ``@hybrid`` function.

Arguments become compile-time values by themselves only where numpy needs one (an
``axis=``, a slice step...).  A size that only decides shapes (a padding, a window) can
also be a run-time value, which gives arrays of run-time shape: slower code on the CPU,
and refused on the AI Core in loops.  ``static(v)`` says that ``v`` must be known when
compiling: an argument it is computed from is specialized by value (one kernel per
value, see ``pyasc/jit/specialize.py``); a value computed from array contents is E50011.
The call lowering is ``pybuiltins``'s; run as Python it returns ``v``.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def static(value: T) -> T:
    """``value`` itself, which must be known at compile time in a ``@hybrid`` function
    (numbers, tuples of them...): the argument it comes from is specialized by value."""
    return value
