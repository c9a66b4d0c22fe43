"""Constant offsets and equal extents of the windows ``stencil-windows`` matches.

A window is a ``mem.subview`` of a base array; the stencil kernel needs its offsets as
constants (the shifts inside the Unified Buffer) and, with run-time shapes, one extent
shared by every window (the output domain).  The frontend's canonical slice lengths
(``frontend/slicing.py``) make equal lengths equal expressions; this module reads them.
"""

from __future__ import annotations

from pyasc.ir.core import OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.passes.batch_nest import constant_int

_FOLD = {arith.AddOp: lambda a, b: a + b, arith.SubOp: lambda a, b: a - b,
         arith.MulOp: lambda a, b: a * b}


def static_int(v: Value, depth: int = 8) -> int | None:
    """``v``'s value when it is an integer constant or ``+ - *`` of such (the nest's
    ``lo + di`` offsets are not folded yet when the backend runs), else None."""
    c = constant_int(v)
    if c is not None or depth == 0 or not isinstance(v, OpResult):
        return c
    fold = _FOLD.get(type(v.op))  # type: ignore[arg-type]
    if fold is None:
        return None
    a, b = (static_int(x, depth - 1) for x in v.op.operand_values)
    return None if a is None or b is None else fold(a, b)


def window_start(view: mem.SubviewOp, axis: int, offset: Value) -> int | None:
    """The window's constant start on ``axis``: a constant, or numpy's clamped start
    ``min(c, D)`` of ``x[c:...]`` (``c >= 0``) on a run-time extent ``D`` of the view's
    own source.  That is ``c`` whenever the window is not empty: a window inside its
    source with ``size >= 1`` starts before ``D``.  The host's guard (every window
    inside its base, else the ``flat`` kernel) checks ``c + size <= D`` at run time, and
    an empty space computes nothing, so reading it as ``c`` is exact."""
    c = static_int(offset)
    if c is not None or not (isinstance(offset, OpResult) and
                             isinstance(offset.op, arith.MinOp)):
        return c
    for k, extent in ((0, 1), (1, 0)):
        c = static_int(offset.op.operand_values[k])
        d = offset.op.operand_values[extent]
        if c is not None and c >= 0 and isinstance(d, OpResult) and \
                isinstance(d.op, mem.DimOp) and d.op.operand_values[0] is view.source and \
                d.op.attributes.get("axis") == axis:
            return c
    return None


def same_size(a: Value, b: Value, depth: int = 8) -> bool:
    """``a`` and ``b`` are one extent: the same value, the same constant, or the same
    scalar expression of such (each loop's ``max(hi - lo, 0)`` is its own op)."""
    if a is b:
        return True
    x, y = static_int(a), static_int(b)
    if x is not None or y is not None:
        return x == y
    if depth == 0 or not (isinstance(a, OpResult) and isinstance(b, OpResult)) or \
            type(a.op) is not type(b.op) or a.op.attributes != b.op.attributes or \
            type(a.op).__module__ != arith.__name__ or a.index != b.index:
        return False
    xs, ys = a.op.operand_values, b.op.operand_values
    return len(xs) == len(ys) and all(same_size(p, q, depth - 1)
                                      for p, q in zip(xs, ys, strict=True))


__all__ = ["same_size", "static_int", "window_start"]
