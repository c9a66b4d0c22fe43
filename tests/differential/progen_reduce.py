"""Reductions in generated programs: ``sum mean max min prod argmax argmin any all``
over every axis, one axis (positive or negative) or a tuple of axes, with and without
``keepdims``, as methods (``x.sum(axis=0)``) or functions (``np.sum(x, axis=0)``).

What a reduction may take and costs (:data:`REDUCERS`):

* the index and truth reductions (``argmax``, ``any``...) are discontinuous in their
  input: they take exact values only;
* ``max``/``min``/``argmax``/``argmin`` of an empty selection raise ``ValueError`` in
  numpy; they are drawn only when every reduced dim is non-empty at the program's sizes
  (an *unused* empty ``max`` is a known open bug, see ``test_found_programs``);
* float ``sum``/``mean``/``prod`` add (or multiply) in an order of their own: their
  result is fuzzy and each reduced element adds a term to the program's budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from progen_expr import Expr, ExprGen, bshape, dim_size


@dataclass(frozen=True)
class Reducer:
    """How one reduction may be drawn."""

    exact_input: bool = False  # discontinuous in its input (argmax, any, all)
    nonempty: bool = False  # numpy raises on an empty selection
    orders: bool = False  # float results depend on the order of the operations
    tuple_axis: bool = True  # accepts a tuple of axes


REDUCERS: dict[str, Reducer] = {
    "sum": Reducer(orders=True), "mean": Reducer(orders=True),
    "prod": Reducer(orders=True),
    "max": Reducer(nonempty=True), "min": Reducer(nonempty=True),
    "argmax": Reducer(exact_input=True, nonempty=True, tuple_axis=False),
    "argmin": Reducer(exact_input=True, nonempty=True, tuple_axis=False),
    "any": Reducer(exact_input=True), "all": Reducer(exact_input=True),
}
FUNCTION_FORM = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all"}


def axes_for(ndim: int) -> list[int | tuple[int, ...] | None]:
    """The ``axis=`` values drawn for an array of ``ndim`` dims."""
    one = [0, -1] if ndim == 1 else [0, 1, -1, -2]
    return [None, *one] + ([(0, 1), (1, 0)] if ndim == 2 else [])


def reduced_shape(shape: tuple[str, ...], axis: int | tuple[int, ...] | None,
                  keep: bool) -> tuple[str, ...]:
    """The symbolic shape of a reduction of ``shape`` over ``axis``."""
    axes = set(range(len(shape))) if axis is None else \
        {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple("1" if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)


def reduced_dims(shape: tuple[str, ...], axis: int | tuple[int, ...] | None) -> list[str]:
    """The dims a reduction over ``axis`` collapses."""
    if axis is None:
        return list(shape)
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return [d for i, d in enumerate(shape) if i in axes]


def reduce_rule(gen: ExprGen, depth: int, within, exact: bool) -> Expr | None:
    """A reduction of a random array expression (see the module docstring)."""
    fn = gen.pick(REDUCERS)
    spec = REDUCERS[fn]
    x = gen.expr(depth - 1, None, exact or spec.exact_input)
    if not x.shape or len(x.shape) > 2 or (spec.exact_input and x.fuzzy):
        return None
    axis = gen.pick([a for a in axes_for(len(x.shape))
                     if spec.tuple_axis or not isinstance(a, tuple)])
    count = int(np.prod([dim_size(d, gen.sizes) for d in reduced_dims(x.shape, axis)]))
    if spec.nonempty and count == 0:
        return None
    keep = gen.chance(0.3)
    shape = reduced_shape(x.shape, axis, keep)
    if within is not None and bshape(shape, within) != within:
        return None
    fuzzy = x.fuzzy or (spec.orders and "float" in x.dtype)
    if fuzzy and exact:
        return None
    args = ([] if axis is None else [f"axis={axis}"]) + (["keepdims=True"] if keep else [])
    if fn in FUNCTION_FORM and gen.chance(0.3):
        text = f"np.{fn}({', '.join([x.text, *args])})"
    else:
        text = f"{x.text}.{fn}({', '.join(args)})"
    e = gen.scope.expr(text, shape, fuzzy)
    if e is not None and spec.orders:
        gen.terms += max(count, 1)
        gen.work.add(e.dtype)
    return e
