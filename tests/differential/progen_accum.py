"""Loops with scalar accumulators per output, as users write windows, FIRs and running
extremes (the ``"loops"`` profile of ``progen``; the default profile never draws them,
so the programs of earlier campaigns' seeds stay the same):

* :func:`window` — ``for i: r = T(0); for k in range(K): r += x[i + k] * w; out[i] = r``
  (a chain of one or two window loops, an update ``+=``, ``-=``, ``max``,
  ``np.maximum`` or ``if x > r: r = x``, maybe a data-dependent ``break``/``continue``;
  the result stored, added into ``out`` or counted): what ``reduce-to-memory``,
  ``output-accumulators`` and ``hoist-checks`` rewrite;
* :func:`shifted` — ``for k in range(K): out[k:] += x[:n - k] * c``: ``+=`` into output
  slices that move with the loop (a FIR written with slices);
* :func:`filled` — ``e = np.empty(...)`` then every element written by a loop, before
  any read.

Window indices stay in range by construction (``range(n - K + 1)`` around ``i + k``, a
modulo, or ``i - k`` which numpy reads from the end); each is a function ``(pg, indent,
depth, in_loop)`` of a ``progen.ProgramGen``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from progen_dtypes import ACC_TYPES
from progen_expr import Expr
from progen_writes import castable

LONG_N = 300
"""The longest first axis a window loop runs over (the IR interpreter runs every
iteration; ``progen.LOOPED_N`` bounds the other loops)."""
LOOPED_M = 7
"""Rows longer than this: a window loop runs over two rows at most."""
UPDATES = ("{r} += {x}", "{r} += {x}", "{r} += {x}", "{r} = {r} + {x}", "{r} -= {x}", "{r} = max({r}, {x})",
           "{r} = np.maximum({r}, {x})", "if {x} > {r}:\n{r} = {x}",
           "if {x} < {r}:\n{r} = {x}")
"""Type-preserving accumulator updates (``\\n``: the second line is the if's body)."""


WINDOWS = (1, 2, 3, 4, 5, "half", "half", "a.shape[-1]")
"""Window sizes: small ones (LLVM unrolls them whole), half the last axis (long axes:
accumulators the loop passes move to memory) and the whole axis (read modulo its
size)."""


def _windows(pg: Any, i: str, j: str | None, ks: list[str],
             size: int | str) -> list[tuple[str, str, str]]:
    """``(element text, outer loop range, window loop range)`` reading a window of
    ``size`` at output ``i`` (``i, j`` in 2-d) over the window counters ``ks``; the
    ranges keep every index valid (``i - k`` reads from the end when negative, as numpy
    does).  Only direct reads (``i + k``) when the outer loop runs over a long axis."""
    k, last = " + ".join(ks), f"a.shape[{pg.ndim - 1}]"
    wrap = [] if len(ks) > 1 else [f"range(min({size}, {last}))"]  # k < size of the axis
    direct: list[tuple[str, str, str]] = []
    if size != last:  # the largest sum of the ks, plus 1, is at most the axis' size
        span = len(ks) * (size - 1) + 1 if isinstance(size, int) else size
        inner = f"range({last} - {span} + 1)" if span != 1 else f"range({last})"
        direct = [(f"a[{i} + {k}]", inner, "")] if pg.ndim == 1 else \
            [(f"a[{i}, {j} + {k}]", inner, "")]
        if pg.ndim == 1 and not pg.b_rows:  # b is 0-d with b_rows
            direct.append((f"b[{i} + {k}]", inner, ""))
        elif pg.ndim == 2:
            direct.append((f"b[{j} + {k}]" if pg.b_rows else f"b[{i}, {j} + {k}]", inner, ""))
    if pg.ndim == 1 and "n" not in pg.loopable():
        return direct
    if pg.ndim == 1:
        return direct + [(f"a[({i} + {k}) % a.shape[0]]", "range(a.shape[0])", "")] + \
            [(f"a[{i} - {k}]", "range(a.shape[0])", w) for w in wrap]
    return direct + [(f"a[{i}, ({j} + {k}) % a.shape[1]]", "range(a.shape[1])", ""),
                     (f"a[({i} + {k}) % a.shape[0], {j}]", "range(a.shape[1])", "")] + \
        [(f"a[{i}, {j} - {k}]", "range(a.shape[1])", w) for w in wrap]


def _weight(pg: Any, ks: list[str], elem: str) -> str:
    """A factor of the window's term: a literal, ``s``, or a weight read at ``k``
    (directly when the window is no longer than the axis, else modulo its size)."""
    k = ks[-1]
    at = k if "%" not in elem and len(ks) == 1 else f"{k} % b.shape[-1]"
    read = f"b[0, {at}]" if pg.ndim == 2 and not pg.b_rows else f"b[{at}]"
    return pg.gen.pick(["2", "0.5", "s", *([] if pg.ndim == 1 and pg.b_rows else [read])])


def _term(pg: Any, elem: str, ks: list[str], exact: bool) -> Expr | None:
    """The window's term: the element, weighted, or times a drawn expression."""
    forms = [elem, f"{elem} * {_weight(pg, ks, elem)}", f"({elem} - {_weight(pg, ks, elem)})"]
    if pg.gen.chance(0.2):
        drawn = pg.gen.expr(2, (), exact=exact)
        e = pg.scope.expr(f"({elem} * {drawn.text})", (), drawn.fuzzy)
        if e is not None:
            return e
    return pg.scope.expr(pg.gen.pick(forms), (), False)


def _update(pg: Any, r: Expr, term: Expr) -> list[str] | None:
    """An update of ``r`` by ``term`` keeping ``r``'s type (lines), or None."""
    for _ in range(3):
        form = pg.gen.pick(UPDATES)
        if form.startswith("if") and (r.fuzzy or term.fuzzy):
            continue
        if (form.startswith(("{r} = max(", "if"))) and term.sig != r.sig:  # r = x: r's type
            continue
        lines = form.format(r=r.text, x=term.text).split("\n")
        value = lines[-1].split("=", 1)[1].strip() if "=" in lines[-1] else None
        probe = f"{r.text} - {term.text}" if "-=" in form else \
            f"{r.text} + {term.text}" if "+=" in form else value
        got = pg.scope.expr(probe, (), r.fuzzy)
        if got is not None and got.sig == r.sig:
            return lines
    return None


def window(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """A scalar accumulator per output, reset before a window loop (or two), stored
    after it."""
    if pg.ndim == 1 and pg.sizes["n"] > LONG_N:
        return
    outer = pg.scope
    pg.scope = pg.gen.scope = outer.child()
    try:
        _window(pg, indent)
    finally:
        pg.scope = pg.gen.scope = outer


def _window(pg: Any, indent: int) -> None:
    axis = "nm"[pg.ndim - 1]
    size = pg.gen.pick(WINDOWS if pg.sizes[axis] >= 48 else WINDOWS[:5] + WINDOWS[-1:])
    count = size if isinstance(size, int) else pg.sizes[axis] // (2 if size == "half" else 1)
    if size == "half":
        size = f"a.shape[{pg.ndim - 1}] // 2"
    elif size == "a.shape[-1]":
        size = f"a.shape[{pg.ndim - 1}]"
    i, j = pg.fresh("i"), pg.fresh("j") if pg.ndim == 2 else None
    ks = [pg.fresh("k") for _ in range(pg.gen.pick((1, 1, 2)) if size in WINDOWS[:5] else 1)]
    for name in (i, *ks, *([j] if j else [])):
        pg.scope.bind(name, (), False, [1] * len(pg.scope.samples))
    forms = _windows(pg, i, j, ks, size)
    if not forms:
        return
    elem, outer, span = pg.gen.pick(forms)
    pg.scope.loops.update({i: "n", **({j: "m"} if j else {})})  # valid indices
    term = _term(pg, elem, ks, exact=not pg.gen.chance(0.4))  # before r is seen
    found = _accumulator(pg, pg.fresh("r"), elem, ks, term) if term is not None else None
    if found is None:
        return
    rv, init, lines = found
    level = _outer_loops(pg, indent, i, j, outer)
    pg.emit(level, f"{rv.text} = {init}")
    for d, k in enumerate(ks):
        pg.emit(level + d, f"for {k} in {span or f'range({size})'}:")
    body = level + len(ks)
    if not rv.fuzzy and pg.gen.chance(0.2):  # no reduction any more: still right?
        pg.emit(body, f"if {elem} {pg.gen.pick(('>', '<', '=='))} {pg.gen.pick((0, 1, 2))}:")
        pg.emit(body + 1, pg.gen.pick(("break", "continue")))
    pg.emit(body, lines[0])
    if len(lines) > 1:
        pg.emit(body + 1, lines[1])
    if rv.fuzzy:  # error budget: terms per output, outputs per call
        pg.gen.terms += count ** len(ks) * pg.trips
        pg.gen.work.add(rv.dtype)
    _store(pg, level, rv, i, j)


def _accumulator(pg: Any, r: str, elem: str, ks: list[str], term: Expr,
                 inits: list[str] | None = None) -> tuple[Expr, str, list[str]] | None:
    """``r``, its initial value (one of ``inits``, by default a zero of ``ACC_TYPES``
    or the window's first element) and an update by ``term`` that keeps its type."""
    inits = inits or [f"{t}(0)" for t in ACC_TYPES] + [_at_zero(elem, ks)]
    for _ in range(3):
        init = pg.gen.pick(inits)
        e = pg.scope.expr(init, (), False)
        if e is None:
            continue
        pg.scope.bind(r, (), False, pg.scope.probe(init))
        rv = Expr(r, (), term.fuzzy, e.sig)
        lines = _update(pg, rv, term)
        if lines is not None:
            return rv, init, lines
    return None


def _at_zero(text: str, ks: list[str]) -> str:
    """``text`` with the window counters at 0 (the first element of the window)."""
    for k in ks:
        text = text.replace(f" + {k}", "").replace(f" - {k}", "")
        text = re.sub(rf"\b{k}\b", "0", text)
    return text


def _outer_loops(pg: Any, indent: int, i: str, j: str | None, outer: str) -> int:
    """Emit the loops over the outputs; the indent of their body."""
    if pg.ndim == 1:
        pg.emit(indent, f"for {i} in {outer}:")
        return indent + 1
    if "n" in pg.loopable():  # at most two long rows (the IR interpreter is slow)
        rows = "a.shape[0]" if pg.sizes["m"] <= LOOPED_M else "min(a.shape[0], 2)"
        pg.emit(indent, f"for {i} in range({rows}):")
        indent += 1
    else:  # a large first dim: one row
        pg.emit(indent, f"{i} = 0")
    pg.emit(indent, f"for {j} in {outer}:")
    return indent + 1


def _store(pg: Any, indent: int, r: Expr, i: str, j: str | None) -> None:
    """``out[i] = r`` (or ``+=``), else a count of it."""
    target = f"out[{i}, {j}]" if j else f"out[{i}]"
    if pg.ndim == 2 and pg.gen.chance(0.2):
        target = f"out[{i}, :]"  # the row takes the scalar
    op = pg.gen.pick(("", "", "", "+"))
    probe = pg.scope.expr(f"out[0] {op} {r.text}" if op else r.text, (), r.fuzzy)
    if probe is not None and castable(pg, probe, True) and \
            (pg.carried["out"].fuzzy or not r.fuzzy):
        pg.emit(indent, f"{target} {op}= {r.text}")
        return
    cmp = pg.scope.expr(f"int({r.text} > 0)", (), False)
    if cmp is not None and not r.fuzzy:
        pg.emit(indent, f"cnt = cnt + int({r.text} > 0)")
    else:
        pg.emit(indent, "pass")


def shifted(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """``for k in range(K): out[k:] += x[:n - k] * c`` (the last axis in 2-d)."""
    k, axis = pg.fresh("k"), pg.ndim - 1
    inner = pg.scope.child()  # k is not seen after the loop (zero trips: unbound)
    inner.bind(k, (), False, [1] * len(inner.samples))
    size = f"a.shape[{axis}]"
    full = "nm"[axis] in pg.loopable() and pg.gen.chance(0.4)
    trips = size if full else pg.gen.pick(("2", "3"))
    pre = ":, " if axis else ""
    x = pg.gen.pick(("a", "b") if not pg.b_rows else ("a",))
    weights = ["2", "s", "0.5"] + ([f"b[{pre}{k}]"] if full and not pg.b_rows else [])
    target, value = f"out[{pre}{k}:]", f"{x}[{pre}:{size} - {k}] * {pg.gen.pick(weights)}"
    op = pg.gen.pick(("+", "+", "-", ""))
    probe = inner.expr(f"out[{pre}1:] {op} {value}" if op else value, (), False)
    if probe is None or not castable(pg, probe, False):
        return
    pg.emit(indent, f"for {k} in range({trips}):")
    pg.emit(indent + 1, f"{target} {op}= {value}")


def filled(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """``e = np.empty(...)`` of ``a``'s shape, every row (element) written by a loop."""
    if "n" not in pg.loopable():
        return
    dt = pg.gen.pick(("a.dtype", "np.float32", "np.float64", "np.int32"))
    name, i = pg.fresh("e"), pg.fresh("i")
    shape = ("n", "m")[:pg.ndim]
    alloc = pg.gen.pick((f"np.empty(a.shape, {dt})", f"np.empty_like(a, dtype={dt})",
                         "np.empty_like(a)"))
    zeros = pg.scope.expr(alloc.replace("empty", "zeros"), shape, False)
    inner = pg.scope.child()
    inner.loops[i] = "n"
    inner.bind(i, (), False, [1] * len(inner.samples))
    pg.gen.scope = inner
    value = pg.gen.expr(2, shape[1:])
    pg.gen.scope = pg.scope
    if zeros is None or value.fuzzy and "int" in zeros.dtype:
        return
    stored = inner.expr(f"{alloc.replace('empty', 'zeros')}[{i}] + {value.text}",
                        shape[1:], value.fuzzy)  # the row takes the value
    src = np.dtype({"int": "int64", "float": "float64", "bool": "bool"}.get(
        value.dtype, value.dtype))
    if stored is None or not np.can_cast(src, zeros.dtype, "same_kind"):
        return
    pg.emit(indent, f"{name} = {alloc}")
    pg.emit(indent, f"for {i} in range(a.shape[0]):")
    pg.emit(indent + 1, f"{name}[{i}] = {value.text}")
    pg.scope.bind(name, shape, value.fuzzy, pg.scope.probe(alloc.replace("empty", "zeros")))
    if indent == 1 and not pg.returned_early:
        pg.carried[name] = Expr(name, shape, value.fuzzy, zeros.sig)


SUM_INITS = ("np.float32(0)", "np.float64(0)", "np.float32(-0.0)", "np.float32(1.5)")
"""Initial values of a loop sum (float accumulators: the ``sum-lanes`` rule)."""


def loop_sum(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """A float scalar summed over a whole axis, ``r = np.float32(0); for i in
    range(a.shape[0]): r += a[i] * w`` (the CPU's ``sum-lanes`` form: at the top of the
    function, or per output when nested), then stored or counted."""
    outer = pg.scope
    pg.scope = pg.gen.scope = outer.child()
    try:
        _loop_sum(pg, indent)
    finally:
        pg.scope = pg.gen.scope = outer


def _loop_sum(pg: Any, indent: int) -> None:
    if any(pg.sizes[d] == 0 for d in "nm"[:pg.ndim]):  # the store reads out[0]
        return
    i, axis = pg.fresh("i"), "nm"[pg.ndim - 1]  # the last axis: weights b[i] in range
    pg.scope.bind(i, (), False, [1] * len(pg.scope.samples))
    pg.scope.loops[i] = axis
    elem = f"a[{i}]" if pg.ndim == 1 else f"a[{pg.gen.pick(('0', '-1'))}, {i}]"
    term = _term(pg, elem, [i], exact=not pg.gen.chance(0.4))
    found = _accumulator(pg, pg.fresh("r"), elem, [i], term, list(SUM_INITS)) \
        if term is not None else None
    if found is None:
        return
    rv, init, lines = found
    pg.emit(indent, f"{rv.text} = {init}")
    pg.emit(indent, f"for {i} in range(a.shape[{pg.ndim - 1}]):")
    pg.emit(indent + 1, lines[0])
    if len(lines) > 1:
        pg.emit(indent + 2, lines[1])
    if rv.fuzzy:
        pg.gen.terms += pg.sizes[axis] * pg.trips
        pg.gen.work.add(rv.dtype)
    _store(pg, indent, rv, "0", None if pg.ndim == 1 else "0")


PROFILE_LOOPS = (window,) * 6 + (shifted, filled) * 2 + (loop_sum,) * 2
"""The statements the ``"loops"`` profile adds to ``progen.NESTED`` (as many as it
has: half the statements with a body are these)."""
