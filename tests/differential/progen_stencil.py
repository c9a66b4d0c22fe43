"""Loop nests over pixels and rows, as the AscendC loop lowerings look for them (the
``"loops"`` profile of ``progen``, 2-d inputs only):

* :func:`stencil` — ``for i: for j: r = T(0); for di in range(-R, R + 1): for dj ...:
  r += x[i + di, j + dj] * w; out[i, j] = r`` (a window centred or anchored at the
  output, weights literal, ``s`` or read from ``b`` at the tap): what ``batch-loops``
  unrolls and ``stencil-windows`` turns into a stencil kernel;
* :func:`window_slice` — ``out[i, j] = np.sum(x[i:i + K, j:j + K] * w)`` (or ``max``,
  ``min``, the window against its centre): the window slices ``batch_windows``
  scalarizes;
* :func:`row_reduce` — ``for i: r = x[i]; out[i] = r - r.max()`` (a softmax, a
  normalization): a row loop whose iterations reduce their row, which ``batch-loops``
  turns into whole-batch reductions.

Loop bounds read ``a.shape`` or, sometimes, ``b.shape`` when ``b`` has ``a``'s shape:
under ``dynamic_shape`` the compiler cannot prove such a nest's reads in bounds, so
their checks stay (versioned into host branches).  Every index is in range whenever the
loop body runs; rows are capped so the IR interpreter stays fast.
"""

from __future__ import annotations

from typing import Any

from progen_accum import LOOPED_M, _accumulator, _at_zero, _store
from progen_dtypes import ACC_TYPES
from progen_expr import Expr
from progen_writes import castable

RADII = (1, 1, 2)
"""Window radii: 3x3 windows mostly, 5x5 sometimes (``K = 2R + 1``)."""
REDUCED = ("{r}.max()", "{r}.min()", "np.max({r}, keepdims=True)", "{r}.sum()",
           "np.mean({r})", "np.abs({r}).sum()")
"""Row reductions of :func:`row_reduce` (``{r}``: the row)."""
ROW_FORMS = ("{r} - {m}", "({r} - {m}) * s", "np.maximum({r}, {m})", "{r} * 2 - {m}",
             "np.exp({r} - {m})", "{r} / (np.abs({m}) + 1)")
"""What :func:`row_reduce` stores per row (``{m}``: the reduction)."""
NEW_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
             "bool")
"""Dtypes of a new result array (``np.zeros_like(a, dtype=np.<dtype>)``)."""
SLICE_FORMS = ("np.sum({w})", "np.sum({w} * {c})", "{w}.max()", "{w}.min()",
               "np.sum(np.abs({w} - {x}))", "np.max({w} - {x})", "np.sum(({w} - {x}) ** 2)",
               "np.mean({w})")
"""What :func:`window_slice` computes per output (``{w}``: the window, ``{x}``: its
centre, ``{c}``: a weight)."""


def _dim(pg: Any, axis: int) -> str:
    """``a.shape[axis]``, or ``b.shape[axis]`` when ``b`` has ``a``'s shape (equal at
    run time, not provably so under ``dynamic_shape``)."""
    return f"b.shape[{axis}]" if not pg.b_rows and pg.gen.chance(0.3) else f"a.shape[{axis}]"


def _rows(pg: Any, extent: int) -> str:
    """The rows a nest runs over: all of them when the interpreter can afford it, else
    ``extent`` plus a few."""
    if "n" in pg.loopable() and pg.sizes["m"] <= LOOPED_M:
        return _dim(pg, 0)
    return f"min({_dim(pg, 0)}, {extent + 2})"


def _nest(pg: Any, indent: int, lo: int, span: int | str) -> tuple[str, str, int]:
    """Emit ``for i in range(lo, rows - span + lo): for j in range(lo, cols - span + lo):``
    (every window of ``span`` around ``i + lo`` in range; ``span`` a number or the name
    of a run-time size, then ``lo`` is 0); the names and body indent."""
    i, j = pg.fresh("i"), pg.fresh("j")
    for name, dim in ((i, "n"), (j, "m")):
        pg.scope.bind(name, (), False, [1] * len(pg.scope.samples))
        pg.scope.loops[name] = dim
    start = f"{lo}, " if lo else ""
    less = f"{span - lo - 1}" if isinstance(span, int) else f"{span} + 1"
    extent = span if isinstance(span, int) else 5
    pg.emit(indent, f"for {i} in range({start}{_rows(pg, extent)} - {less}):")
    pg.emit(indent + 1, f"for {j} in range({start}{_dim(pg, 1)} - {less}):")
    return i, j, indent + 2


def _child(pg: Any, body: Any) -> None:
    """Run ``body()`` in a child scope (the nest's names are dropped after it)."""
    if pg.ndim != 2:
        return
    outer = pg.scope
    pg.scope = pg.gen.scope = outer.child()
    try:
        body()
    finally:
        pg.scope = pg.gen.scope = outer


def _tap_weight(pg: Any, di: str, dj: str, radius: int, centred: bool) -> str:
    """A tap's factor: a literal, ``s``, or ``b`` read at the tap (in range whenever the
    nest runs: both axes are at least the window)."""
    shift = f" + {radius}" if centred else ""
    read = f"b[{dj}{shift}]" if pg.b_rows else f"b[{di}{shift}, {dj}{shift}]"
    return pg.gen.pick(("2", "0.5", "s", read, read))


def stencil(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """A 2-d window accumulated per output by two static tap loops."""
    _child(pg, lambda: _stencil(pg, indent))


def _stencil(pg: Any, indent: int) -> None:
    radius, centred = pg.gen.pick(RADII), pg.gen.chance(0.6)
    k = 2 * radius + 1
    di, dj = pg.fresh("di"), pg.fresh("dj")
    for name in (di, dj):
        pg.scope.bind(name, (), False, [0] * len(pg.scope.samples))
    src = pg.gen.pick(("a", "b", "b") if not pg.b_rows else ("a",))  # b: C-contiguous
    i, j = "{i}", "{j}"
    elem = f"{src}[{i} + {di}, {j} + {dj}]"
    taps = f"range(-{radius}, {radius + 1})" if centred else f"range({k})"
    term_text = pg.gen.pick((elem, f"{elem} * {_tap_weight(pg, di, dj, radius, centred)}"))
    # probe with the samples' loop values (1) and taps (0): an element of each sample
    probe = term_text.format(i="1", j="1")
    term = pg.scope.expr(probe, (), False)
    if term is None:
        return
    # the input's own type most often: a float64 accumulator keeps the nest scalar on
    # the device (no vector unit computes float64)
    inits = [f"{src}.dtype.type(0)"] * 3 + ["np.float32(0)", _at_zero(probe, [di, dj])] \
        + [f"{t}(0)" for t in ACC_TYPES]
    found = _accumulator(pg, pg.fresh("r"), probe, [di, dj], term, inits)
    if found is None:
        return
    rv, init, lines = found
    if not centred and pg.gen.chance(0.6):  # a window size computed from a dimension
        size = pg.fresh("k")
        pg.emit(indent, f"{size} = min({_dim(pg, 1)}, {k})")
        taps = f"range({size})"
        i, j, body = _nest(pg, indent, 0, size)
    else:
        i, j, body = _nest(pg, indent, radius if centred else 0, k)
    pg.emit(body, f"{rv.text} = {init.replace('[1, 1]', f'[{i}, {j}]')}")
    pg.emit(body, f"for {di} in {taps}:")
    pg.emit(body + 1, f"for {dj} in {taps}:")
    for d, line in enumerate(lines):
        pg.emit(body + 2 + d, line.replace(probe, term_text.format(i=i, j=j)))
    _store(pg, body, rv, i, j)


def window_slice(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """``out[i, j] = f(x[i:i + K, j:j + K])``: a window slice reduced per output."""
    _child(pg, lambda: _window_slice(pg, indent))


def _window_slice(pg: Any, indent: int) -> None:
    radius, centred = pg.gen.pick(RADII), pg.gen.chance(0.5)
    k = 2 * radius + 1
    terms = k * k
    src = pg.gen.pick(("a", "b", "b") if not pg.b_rows else ("a",))  # b: C-contiguous
    if centred:
        window = f"{src}[{{i}} - {radius}:{{i}} + {radius + 1}, {{j}} - {radius}:{{j}} + {radius + 1}]"
        centre = f"{src}[{{i}}, {{j}}]"
    elif pg.gen.chance(0.3):  # dilated along the last axis: the nest's span is 2K - 1
        window = f"{src}[{{i}}:{{i}} + {k}, {{j}}:{{j}} + {2 * k - 1}:2]"
        centre = f"{src}[{{i}} + {radius}, {{j}} + {radius}]"
        k = 2 * k - 1
    else:
        window = f"{src}[{{i}}:{{i}} + {k}, {{j}}:{{j}} + {k}]"
        centre = f"{src}[{{i}} + {radius}, {{j}} + {radius}]"
    form = pg.gen.pick(SLICE_FORMS)
    text = form.format(w=window, c=pg.gen.pick(("2", "0.5", "s")), x=centre)
    at = str(radius) if centred else "1"  # in range on every sample
    value = pg.scope.expr(text.format(i=at, j=at), (), False)
    if value is None:
        return
    fuzzy = form.startswith(("np.sum", "np.mean")) and "float" in value.dtype
    i, j, body = _nest(pg, indent, radius if centred else 0, k)
    stored = Expr(text.format(i=i, j=j), (), fuzzy, value.sig)
    if fuzzy:  # error budget: terms per output
        pg.gen.terms += terms
        pg.gen.work.add(stored.dtype)
    _store(pg, body, stored, i, j)


def _target(pg: Any, indent: int, e: Expr) -> str | None:
    """``out`` if ``e``'s rows may be stored into it, else a new returned array of
    ``e``'s dtype (None where a new name would not be returned)."""
    out = pg.carried["out"]
    if castable(pg, e, True) and (out.fuzzy or not e.fuzzy):
        return "out"
    if indent != 1 or pg.returned_early or e.dtype not in NEW_TYPES:
        return None
    name = pg.fresh("y")
    alloc = f"np.zeros_like(a, dtype=np.{e.dtype})"
    zeros = pg.scope.expr(alloc, ("n", "m"), e.fuzzy)
    if zeros is None:
        return None
    pg.emit(indent, f"{name} = {alloc}")
    pg.bind(name, zeros)
    pg.carried[name] = Expr(name, ("n", "m"), e.fuzzy, zeros.sig)
    return name


def row_reduce(pg: Any, indent: int, depth: int, in_loop: bool) -> None:
    """``for i: r = x[i]; out[i] = f(r, reduce(r))``: rows reduced independently."""
    _child(pg, lambda: _row_reduce(pg, indent))


def _row_reduce(pg: Any, indent: int) -> None:
    if "n" not in pg.loopable():
        return
    src = pg.gen.pick(("a", "b") if not pg.b_rows else ("a",))
    i, r = pg.fresh("i"), pg.fresh("r")
    row = pg.gen.pick((f"{src}[{i}]", f"{src}[{i}, :]"))
    reduced = pg.gen.pick(REDUCED).format(r=r)
    form = pg.gen.pick(ROW_FORMS)
    pg.scope.bind(i, (), False, [1] * len(pg.scope.samples))
    pg.scope.loops[i] = "n"
    pg.scope.bind(r, ("m",), False, pg.scope.probe(f"{src}[1]"))
    value = form.format(r=r, m=f"({reduced})")
    e = pg.scope.expr(value, ("m",), False)
    if e is None:
        return
    sums = reduced.startswith(("np.mean", "np.abs")) or ".sum()" in reduced
    fuzzy = "exp" in value or "/" in value or sums and "float" in e.dtype
    e = Expr(e.text, e.shape, fuzzy, e.sig)
    target = _target(pg, indent, e)
    if target is None:
        return
    pg.emit(indent, f"for {i} in range({_dim(pg, 0)}):")
    pg.emit(indent + 1, f"{r} = {row}")
    pg.emit(indent + 1, f"{target}[{i}] = {value}")
    if e.fuzzy:  # a sum of the row's terms, then a transcendental call or a division
        pg.gen.terms += pg.sizes["m"]
        pg.gen.math += 2
        pg.gen.work.add(e.dtype)


PROFILE_STENCILS = (stencil,) * 3 + (window_slice,) * 3 + (row_reduce,) * 3
"""The statements the ``"loops"`` profile adds beside ``progen_accum.PROFILE_LOOPS``
(2-d programs only: ``progen`` draws them only there)."""
