"""Lists and tuples of arrays whose length is known at compile time.

A list or tuple is a compile-time Python object whose items may be run-time arrays.
Three things make them usable as numpy code uses them:

* ``parts.append(x)`` / ``parts.extend(xs)`` grow a list made in this function (a
  ``[...]`` display, whose block :func:`record` notes) in straight-line code; a list
  cannot grow under a run-time branch or loop, where Python would append a number of
  times pyasc cannot know (E50010, with the way out in the hint);
* a ``for`` loop over a compile-time ``range`` whose body grows a list or indexes a
  list or tuple of arrays with the loop variable is unrolled (:func:`unrolled`): each
  iteration is lowered with the loop variable a compile-time int, so ``xs[k]`` is the
  k-th array and ``parts`` holds one array per iteration (at most
  :data:`MAX_UNROLL` iterations);
* a list comprehension over a compile-time range or sequence
  (``[f(x, k) for k in range(3)]``) is evaluated item by item the same way.
"""

from __future__ import annotations

import ast

from pyasc.errors import UnsupportedSyntaxError
from pyasc.frontend.lowering import Lowering
from pyasc.frontend.values import Buffer, RangeValue, Tensor

MAX_UNROLL = 256
"""Most iterations of a loop unrolled for its lists of arrays (code size grows with it)."""


def record(lw: Lowering, items: list) -> list:
    """Note the block where the list display ``items`` was made (where it may grow)."""
    lw.unit.list_homes[id(items)] = (items, lw.em.b.block)
    return items


def _grow(lw: Lowering, items: list) -> None:
    home = lw.unit.list_homes.get(id(items))
    if home is None or home[1] is not lw.em.b.block:
        raise UnsupportedSyntaxError(
            "a list can only grow where it is made or in a loop over a range known at "
            "compile time (unrolled), not under a run-time branch or loop",
            hint="give the loop constant bounds, or write into a preallocated array: "
                 "out = np.empty((n, ...)); out[k] = ...")


def append(lw: Lowering, items: list, value: object, /) -> None:
    """``list.append``."""
    _grow(lw, items)
    items.append(value)


def extend(lw: Lowering, items: list, values: object, /) -> None:
    """``list.extend`` by a compile-time sequence."""
    _grow(lw, items)
    if not isinstance(values, tuple | list):
        raise UnsupportedSyntaxError("list.extend needs a tuple or list")
    items.extend(values)


LIST_METHODS = {"append": append, "extend": extend}


def _holds_arrays(v: object) -> bool:
    return isinstance(v, tuple | list) and any(isinstance(x, Tensor | Buffer) for x in v)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _wants_unroll(lw: Lowering, node: ast.For) -> bool:
    """The body grows a list or indexes a sequence of arrays with the loop variable."""
    targets = _names(node.target)
    for n in (m for stmt in node.body for m in ast.walk(stmt)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr in LIST_METHODS and isinstance(n.func.value, ast.Name) and \
                isinstance(lw.scope.get(n.func.value.id), list):
            return True
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                _holds_arrays(lw.scope.get(n.value.id)) and _names(n.slice) & targets:
            return True
    return False


def unrolled(lw: Lowering, node: ast.For, rng: RangeValue) -> list[int] | None:
    """The loop variable's values if ``node`` must be unrolled (see the module
    docstring), else None."""
    if not _wants_unroll(lw, node):
        return None
    hint = "loop over range(len(arrays)), or stack the arrays into one with np.stack"
    try:  # bounds computed from scalar arguments specialize on their values
        bounds = tuple(lw.static(b, "the range of a loop that grows a list or indexes a "
                                 "list of arrays (it is unrolled)", UnsupportedSyntaxError,
                                 hint) for b in (rng.start, rng.stop, rng.step))
    except UnsupportedSyntaxError as exc:
        raise lw.src.locate(exc, node.iter) from None
    values = list(range(*bounds))  # type: ignore[arg-type]
    if len(values) > MAX_UNROLL:
        raise lw.error(UnsupportedSyntaxError, f"a loop over lists of arrays is unrolled, "
                       f"and {len(values)} iterations are more than {MAX_UNROLL}", node.iter,
                       hint="write into a preallocated array instead of a list")
    return values


def comprehension(lw: Lowering, node: ast.ListComp, items_of) -> list:
    """``[elt for target in iterable if cond...]`` over a compile-time iterable, item by
    item (``items_of(value)``: the compile-time items of the iterable, or None)."""
    if len(node.generators) != 1 or node.generators[0].is_async:
        raise lw.error(UnsupportedSyntaxError, "a list comprehension with more than one "
                       "'for'", node, hint="nest two comprehensions, or write the loops")
    gen = node.generators[0]
    items = items_of(lw.expr(gen.iter))
    if items is None or len(items) > MAX_UNROLL:
        raise lw.error(UnsupportedSyntaxError, "a list comprehension needs a range or "
                       f"sequence of at most {MAX_UNROLL} items known at compile time",
                       gen.iter, hint="write into a preallocated array in a loop")
    targets = _names(gen.target)
    saved = {n: lw.scope[n] for n in targets if n in lw.scope}
    out: list = []
    try:
        for item in items:
            lw.assign(gen.target, item)
            if all(lw.static(lw.expr(c), "a comprehension's condition",
                             UnsupportedSyntaxError) for c in gen.ifs):
                out.append(lw.expr(node.elt))
    finally:  # the loop variable is the comprehension's own, as in Python 3
        for n in targets:
            lw.scope.pop(n, None)
        lw.scope.update(saved)
    return record(lw, out)
