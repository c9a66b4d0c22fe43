"""Writes into the result buffer ``out`` of a generated program: elements and slices
(``out[i] = e``, ``out[1:] += e``), views (``out[::-1]``, ``out.T[...]``, an alias
``v = out[1::2]`` then ``v[...] = e``), index arrays (``out[idx] = e``,
``out[:, idx] += e``) and boolean masks (``out[mask] = e[mask]``).

Each statement is a function ``(pg, indent)`` of a ``progen.ProgramGen``; the value is
drawn by :func:`assign`, which keeps only values whose shape broadcasts to the target
and whose dtype casts to ``out``'s with ``same_kind`` (as in-place operators require).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from progen_expr import bshape
from progen_index import mask_target, scatter_targets
from progen_views import write_targets

OPS = ("", "", "+", "*")
"""``target = e`` twice as often as ``target += e`` or ``target *= e``."""


def castable(pg: Any, value: Any, basic: bool) -> bool:
    """Whether ``value`` may be stored into ``out``: ``same_kind``, and by basic
    indexing a scalar only if it cannot overflow an integer ``out`` (numpy 2 raises
    ``OverflowError`` there; pyasc raises too for a Python int but wraps a numpy
    integer: a documented difference)."""
    dtype = value.dtype
    src = np.dtype({"int": "int64", "float": "float64", "bool": "bool"}.get(dtype, dtype))
    dst = np.dtype(pg.carried["out"].dtype)
    if basic and value.sig[0] != "array" and dst.kind in "iu":
        literal = re.fullmatch(r"-?\d+", value.text.strip("()"))
        if literal:
            return np.iinfo(dst).min <= int(literal.group()) <= np.iinfo(dst).max
        return bool(np.can_cast(src, dst, "safe"))
    return bool(np.can_cast(src, dst, "same_kind"))


def assign(pg: Any, indent: int, target: str, shape: tuple[str, ...],
           ops: tuple[str, ...] = OPS, value: str = "{e}", basic: bool = True) -> bool:
    """Emit ``target op= value(e)`` for a random fitting ``e``; False if none was found.
    ``basic``: the target is an element, slice or view (not an index array or mask)."""
    out = pg.carried["out"]
    op = pg.gen.pick(ops)
    for _ in range(4):
        e = pg.gen.expr(2, shape, exact=not out.fuzzy)
        if value != "{e}" and not e.shape:  # `(2)[mask]`: numpy rejects it anyway
            continue
        text = value.format(e=e.text)
        probe = f"{target} {op} ({text})" if op else text
        got = pg.scope.expr(probe, shape, e.fuzzy)
        if got is None or bshape(e.shape, shape) != shape or not castable(pg, got, basic):
            continue
        pg.emit(indent, f"{target} {op}= {text}")
        return True
    return False


def write(pg: Any, indent: int) -> None:
    """``out[i] = e``, ``out[i, j] = e``, ``out[1:] = e`` or ``out[::2] = e``."""
    out = pg.carried["out"]
    loops = pg.scope.loops.items()
    elements = [(f"out[{v}]", out.shape[1:]) for v, d in loops if d == "n"]
    if pg.ndim == 2:
        elements += [(f"out[{i}, {j}]", ()) for i, di in loops for j, dj in loops
                     if (di, dj) == ("n", "m")]
    targets = elements * 3 + [("out[1:]", ("n-1", *out.shape[1:])),
                              ("out[::2]", ("h", *out.shape[1:]))]
    assign(pg, indent, *pg.gen.pick(targets))


def view_write(pg: Any, indent: int) -> None:
    """A write through a view of ``out``: directly, or through an alias name."""
    target, shape = pg.gen.pick(write_targets(pg.carried["out"].shape, pg.scope.loops))
    if "[...]" in target or not pg.gen.chance(0.4):
        assign(pg, indent, target, shape)
        return
    alias = pg.fresh("v")
    pg.emit(indent, f"{alias} = {target}")
    pg.bind(alias, pg.scope.expr(target, shape, pg.carried["out"].fuzzy))
    element = [(f"{alias}[{i}]", shape[1:]) for i, d in pg.scope.loops.items()
               if shape and d == shape[0]]
    target, shape = pg.gen.pick([(f"{alias}[...]", shape), *element])
    if not assign(pg, indent, target, shape):
        pg.emit(indent, f"{alias}[...] = 0")


def scatter(pg: Any, indent: int) -> None:
    """``out[idx] = e``, ``out[idx] += e`` or a masked write ``out[mask] = e[mask]``."""
    out = pg.carried["out"]
    if pg.gen.chance(0.45):
        found = mask_target(pg.gen, out.shape)
        if found is not None:
            mask, whole = found
            if pg.gen.chance(0.7):  # `e[mask]` has a data-dependent size: device skips
                assign(pg, indent, f"out[{mask}]", (), ("", "+"), basic=False)  # a scalar
            else:
                assign(pg, indent, f"out[{mask}]", out.shape, ("",), whole, basic=False)
            return
    targets = scatter_targets(pg.gen, out.shape)
    if targets:
        target, shape = pg.gen.pick(targets)
        assign(pg, indent, target, shape, ("", "+", "+"), basic=False)
