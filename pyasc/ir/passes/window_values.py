"""Constant offsets and equal extents of the windows ``stencil-windows`` matches.

A window is a ``mem.subview`` of a base array (through plain views of it, ``y = x[1:,
2:]``: ``window_root``); the stencil kernel needs its offsets as constants (the shifts
inside the Unified Buffer) and, with run-time shapes, one extent shared by every window
(the output domain).  The frontend's canonical slice lengths
(``frontend/slicing.py``) make equal lengths equal expressions; this module reads them.
"""

from __future__ import annotations

from pyasc.ir.core import BlockArgument, OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.types import MemRefType

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
    own source (its ``mem.dim``, or its size when it is a view itself).  That is ``c``
    whenever the window is not empty: a window inside its
    source with ``size >= 1`` starts before ``D``.  The host's guard (every window
    inside its base, else the ``flat`` kernel) checks ``c + size <= D`` at run time, and
    an empty space computes nothing, so reading it as ``c`` is exact."""
    c = static_int(offset)
    if c is not None or not (isinstance(offset, OpResult) and
                             isinstance(offset.op, arith.MinOp)):
        return c
    for k, extent in ((0, 1), (1, 0)):
        c = static_int(offset.op.operand_values[k])
        if c is not None and c >= 0 and _is_extent(offset.op.operand_values[extent],
                                                   view.source, axis):
            return c
    return None


def _is_extent(d: Value, source: Value, axis: int) -> bool:
    """``d`` is ``source``'s extent on ``axis``: its ``mem.dim``, or the size the view
    ``source`` was made with (``y = x[:, 1:-1]``: its ``max(D - 2, 0)`` columns)."""
    if isinstance(source, OpResult) and isinstance(source.op, mem.SubviewOp) and \
            not source.op.attributes.get("drop") and source.op.parts()[1][axis] is d:
        return True
    return isinstance(d, OpResult) and isinstance(d.op, mem.DimOp) and \
        d.op.operand_values[0] is source and d.op.attributes.get("axis") == axis


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


def window_root(view: mem.SubviewOp) -> tuple[Value, list[int]]:
    """The buffer a plain window views through plain views (``y = x[1:, 2:]``, then
    ``y[i + a, j + b]``) and the offsets those views add to the window's, axis by
    axis.  A plain view: unit steps, no axis dropped, constant starts (or numpy's
    clamped ``min(c, D)``: ``c`` whenever the window, inside it, is not empty,
    ``window_values.window_start``); the window itself drops no axis.  Windows of
    ``x[1:, 2:]`` are then windows of ``x`` at offsets ``+1, +2``: the kernel copies
    ``x``'s rows (a view's rows are not contiguous, ``x``'s are).  Else ``(view.source,
    zeros)``."""
    source, extra = view.source, [0] * view.source.type.rank  # type: ignore[attr-defined]
    if view.attributes.get("drop"):
        return source, extra
    while isinstance(source, OpResult) and isinstance(source.op, mem.SubviewOp) and \
            not source.op.attributes.get("drop"):
        offsets, _, steps = source.op.parts()
        starts = [window_start(source.op, a, o) for a, o in enumerate(offsets)]
        if any(c is None for c in starts) or any(static_int(s) != 1 for s in steps):
            break
        extra = [e + c for e, c in zip(extra, starts, strict=True)]  # type: ignore[operator]
        source = source.op.source
    return source, extra


def passable_base(view: mem.SubviewOp) -> bool:
    """The kernel may read the window's base as a C-contiguous array of its shape: it
    is contiguous, or it is an argument of the function (a numpy view, ``x[:, 3:70]``
    or ``x[::2]``: a launch passes every array C-contiguous, ``host_runner``, the copy a
    call to the device makes anyway).  A non-contiguous view computed in the function
    (``x[:, ::2]``, ``x.T``) is not: as a base its copy would be the host's, a whole
    array copied outside the kernel's counted GM traffic; it stays ``flat``."""
    base = window_root(view)[0]
    t = base.type
    return isinstance(t, MemRefType) and (t.is_contiguous or
                                           isinstance(base, BlockArgument) and
                                           isinstance(base.block.parent_op, FuncOp))


__all__ = ["passable_base", "same_size", "static_int", "window_root", "window_start"]
