"""Loops with data-dependent control in generated programs.

* :func:`scan` — ``while j < a.shape[0] and x[j] > t: j += 1``: the trip count is
  decided by the data (a search), then ``if j < a.shape[0]:`` uses ``j`` as an index;
* :func:`find` — ``for i in range(...): if x[i] > t: ...; break``: a data-dependent
  ``break`` (or ``continue``) out of a counted loop;
* :func:`converge` — ``while k < L and v > t: v = v / 2``: a loop on a value (a scalar,
  or ``(row > t).any()`` on a carried array) that the loop itself changes.

Conditions read exact values only (a fuzzy value could flip a comparison).  Every loop
is bounded: the scan by the size it runs over, the value loop by a counter bumped as
the first statement of its body (so a ``continue`` cannot spin).  Each is a function
``(pg, indent, depth, in_loop)`` of a ``progen.ProgramGen``.
"""

from __future__ import annotations

from typing import Any

from progen_expr import Expr, dim_size
from progen_index import SIZE_TEXT
from progen_views import indexed_texts

COMPARISONS = (">", "<", ">=", "<=", "!=")
STEPS = {"float": ("{v} / 2", "{v} * 0.5", "{v} - 1"), "int": ("{v} // 2", "{v} - 1")}
"""Type-preserving updates of the converging value, by kind."""


def element_condition(pg: Any, index: str, dim: str) -> str | None:
    """A scalar condition on an exact array's element (or row) at ``index``."""
    names = [(n, s) for n, s in pg.scope.shapes.items()
             if s[:1] == (dim,) and not pg.scope.fuzzy[n] and len(s) <= 2]
    if not names:
        return None
    name, shape = pg.gen.pick(names)
    text, rest = pg.gen.pick(indexed_texts(name, shape, {index: dim})[:1] or [(name, shape)])
    if rest:  # a row: one of its values decides
        text = f"{text}.{pg.gen.pick(('max', 'min', 'sum'))}()"
    rhs = pg.gen.leaf((), exact=True)
    cond = f"{text} {pg.gen.pick(COMPARISONS)} {rhs.text}"
    e = pg.scope.expr(cond, (), False)
    return cond if e is not None and e.dtype == "bool" else None


def _counter(pg: Any, prefix: str) -> str:
    var = pg.fresh(prefix)
    pg.scope.bind(var, (), False, [1] * len(pg.scope.samples))
    return var


def scan(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """A search loop whose trip count is decided by the data, then a use of its end."""
    dims = [d for d in SIZE_TEXT if d in pg.loopable()]
    if not dims:
        return
    dim = pg.gen.pick(dims)
    j = _counter(pg, "j")
    pg.scope.loops[j] = dim  # only for drawing the condition, which reads x[j]
    cond = element_condition(pg, j, dim)
    del pg.scope.loops[j]
    size = SIZE_TEXT[dim]
    pg.emit(indent, f"{j} = 0")
    pg.emit(indent, f"while {j} < {size}" + (f" and {cond}:" if cond else ":"))
    pg.emit(indent + 1, f"{j} += 1")
    with pg.trip_scale(dim_size(dim, pg.sizes)):
        if pg.gen.chance(0.5):
            pg.block(indent + 1, depth - 1, True)
    pg.emit(indent, f"cnt = cnt + {j}")
    if pg.gen.chance(0.6):
        pg.emit(indent, f"if {j} < {size}:")
        pg.enter_loop(j, dim, lambda: pg.block(indent + 1, depth - 1, in_loop, jump=True))


def find(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """A counted loop left (or skipped ahead) when an element meets a condition."""
    dims = [d for d in SIZE_TEXT if d in pg.loopable()]
    if not dims:
        return
    dim = pg.gen.pick(dims)
    i = pg.fresh("i")
    size = SIZE_TEXT[dim]
    pg.emit(indent, f"for {i} in " + pg.gen.pick(
        (f"range({size})", f"range({size} - 1, -1, -1)")) + ":")

    def body() -> None:
        cond = element_condition(pg, i, dim) or f"{i} > 1"
        pg.emit(indent + 1, f"if {cond}:")
        pg.block(indent + 2, depth - 1, True)
        pg.emit(indent + 2, pg.gen.pick(("break", "break", "continue")))
        if pg.gen.chance(0.6):
            pg.block(indent + 1, depth - 1, True)

    with pg.trip_scale(dim_size(dim, pg.sizes)):
        pg.enter_loop(i, dim, body)


def converge(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """``while k < L and <value> > t:`` with the value halved (or decremented) inside."""
    carried = [n for n in ("acc", "row") if n in pg.carried and not pg.carried[n].fuzzy]
    if carried and pg.gen.chance(0.4):
        name = pg.gen.pick(carried)
        var = pg.carried[name]
    else:
        e = pg.gen.expr(2, (), exact=True)
        if e.shape or e.dtype not in ("float16", "float32", "float64", "int8", "int16",
                                      "int32", "int64", "float", "int"):
            return
        name = pg.fresh("w")
        pg.emit(indent, f"{name} = {e.text}")
        pg.bind(name, e)
        var = Expr(name, (), False, e.sig)
    kind = "float" if "float" in var.dtype else "int"
    step = pg.gen.pick(STEPS[kind]).format(v=name)
    if pg.scope.expr(step, var.shape, False) is None or \
            pg.scope.expr(step, var.shape, False).sig != var.sig:
        return
    rhs = pg.gen.leaf((), exact=True)
    if rhs.text == name:  # `w > w` decides nothing
        rhs = pg.scope.expr("s", (), False)
    test = f"{name} > {rhs.text}" if not var.shape else f"({name} > {rhs.text}).any()"
    if pg.scope.expr(test, (), False) is None:
        return
    k, limit = _counter(pg, "k"), pg.gen.pick((3, 5, 8))
    pg.emit(indent, f"{k} = 0")
    pg.emit(indent, f"while {k} < {limit} and {test}:")
    pg.emit(indent + 1, f"{k} += 1")
    pg.emit(indent + 1, f"{name} = {step}")
    with pg.trip_scale(limit):
        if pg.gen.chance(0.3):
            pg.block(indent + 1, depth - 1, True)
    pg.emit(indent, f"cnt = cnt + {k}")
