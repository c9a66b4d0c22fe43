"""Views in generated programs: strided and reversed slices, transposes, reshapes,
size-1 axes, writes through views, and returned names rebound to views (:func:`rebind`).

Shapes are symbolic (``progen_expr``): a slice maps the dim it cuts to another symbol
(:data:`SLICES`: ``x[1::2]`` of a dim ``n`` has ``q = n // 2`` elements), so a view
combines only with values whose sizes agree for every ``n`` and ``m``.  The functions
here return candidate ``(text, shape)`` pairs; ``progen_expr.Scope`` then keeps those
numpy accepts.  Writes go through views of the result buffer ``out``, which numpy
allocates in the memory order of ``a`` (``zeros_like``); a view of ``out`` is therefore
only ever made by slicing and transposing, which are views in every memory order
(``out.reshape(-1)`` is a view of a C-ordered ``out`` only, so it is never written).
"""

from __future__ import annotations

from typing import Any

SLICES: dict[str, dict[str, str]] = {
    "[::-1]": {},  # empty: the dim is kept, for every dim
    "[1:]": {"n": "n-1", "m": "m-1"},
    "[:-1]": {"n": "n-1", "m": "m-1"},
    "[::2]": {"n": "h", "m": "mh"},
    "[::-2]": {"n": "h", "m": "mh"},
    "[1::2]": {"n": "q"},
    "[-2::-2]": {"n": "q"},
}
"""Slice -> {dim it applies to: the dim of the result}."""
RESHAPED = ("a", "b")
"""The names that are reshaped: the inputs, never written.  numpy's ``reshape`` is a
view of a C-ordered array and a copy of others, and ``np.zeros_like(a)`` of a
transposed ``a`` is F-ordered in numpy (``order="K"``) but C-ordered in pyasc, so a
reshape of ``out`` is a copy in one and a view in the other (a documented difference,
docs/numpy-support.md); it shows only when ``out`` is written after the reshape."""


def sliced(dim: str) -> list[tuple[str, str]]:
    """``(slice text, result dim)`` for every slice that applies to ``dim``."""
    return [(sl, dim if not dims else dims[dim]) for sl, dims in SLICES.items()
            if not dims or dim in dims]


def view_texts(name: str, shape: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """Views of the array ``name`` of symbolic ``shape`` (1-d or 2-d)."""
    if len(shape) == 1:
        (d,) = shape
        return ([(f"{name}{sl}", (r,)) for sl, r in sliced(d)] +
                [(f"{name}[:, None]", (d, "1")), (f"{name}[None, :]", ("1", d)),
                 (f"{name}.reshape(-1, 1)", (d, "1")), (f"{name}[np.newaxis]", ("1", d))] +
                _sized_reshapes(name, shape))
    if len(shape) != 2:
        return []
    d0, d1 = shape
    out = [(f"{name}{sl}", (r, d1)) for sl, r in sliced(d0)]
    out += [(f"{name}[:, {sl[1:-1]}]", (d0, r)) for sl, r in sliced(d1)]
    out += [(f"{name}.T", (d1, d0)), (f"np.transpose({name})", (d1, d0)),
            (f"{name}.T[::-1]", (d1, d0)), (f"{name}[::-1, ::-1]", (d0, d1))]
    # `x[:1]` has size 1 only when x's dim is never empty ("m" >= 1; "n" may be 0)
    out += [(f"{name}[:, :1]", (d0, "1"))] if d1 == "m" else []
    out += [(f"{name}[:1]", ("1", d1))] if d0 == "m" else []
    if shape == ("n", "m") and name in RESHAPED:
        out += [(f"{name}.reshape(-1)", ("nm",)), (f"{name}.ravel()", ("nm",)),
                (f"np.reshape({name}, (-1,))", ("nm",))] + _sized_reshapes(name, shape)
    return out


def _sized_reshapes(name: str, shape: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """Reshapes of an input to sizes computed from the arguments (run-time values under
    ``dynamic_shape``: the size check of a reshaped view once read past the buffer)."""
    if name not in RESHAPED:
        return []
    if len(shape) == 1:
        return [(f"{name}.reshape({name}.size, 1)", (shape[0], "1")),
                (f"{name}.reshape(1, len({name}))", ("1", shape[0]))]
    if shape != ("n", "m"):
        return []
    return [(f"{name}.reshape({name}.shape[1], {name}.shape[0])", ("m", "n")),
            (f"{name}.reshape(-1, {name}.shape[1])", ("n", "m")),
            (f"{name}.reshape(len({name}) * {name}.shape[1])", ("nm",))]


def indexed_texts(name: str, shape: tuple[str, ...],
                  loops: dict[str, str]) -> list[tuple[str, tuple[str, ...]]]:
    """Elements, rows and columns of ``name`` at the loop variables ``loops``
    (``{variable: the dim it runs over}``)."""
    out = []
    if shape:
        out += [(f"{name}[{i}]", shape[1:]) for i, d in loops.items() if d == shape[0]]
    if len(shape) == 2:
        d0, d1 = shape
        out += [(f"{name}[{i}, {j}]", ()) for i, di in loops.items()
                for j, dj in loops.items() if (di, dj) == (d0, d1)]
        out += [(f"{name}[:, {j}]", (d0,)) for j, dj in loops.items() if dj == d1]
        out += [(f"{name}[{i}, ::-1]", (d1,)) for i, di in loops.items() if di == d0]
    return out


def write_targets(shape: tuple[str, ...],
                  loops: dict[str, str]) -> list[tuple[str, tuple[str, ...]]]:
    """Assignable views of ``out`` (symbolic ``shape``): ``out[...] = e`` targets."""
    if len(shape) == 1:
        return [(f"out{sl}", (r,)) for sl, r in sliced(shape[0]) if sl != "[::2]"]
    d0, d1 = shape
    out = [("out.T[...]", (d1, d0)), ("out[:, ::-1]", (d0, d1)),
           ("out[::-1, 1:]", (d0, SLICES["[1:]"].get(d1, d1))),
           ("out[-2::-2, ::2]", (SLICES["[-2::-2]"].get(d0, d0), SLICES["[::2]"].get(d1, d1)))]
    out += [(f"out[:, {j}]", (d0,)) for j, dj in loops.items() if dj == d1]
    out += [(f"out.T[{j}]", (d0,)) for j, dj in loops.items() if dj == d1]
    out += [(f"out[{i}, ::-1]", (d1,)) for i, di in loops.items() if di == d0]
    return out


def rebind(pg: Any, indent: int) -> None:
    """``row = t2[::-1]``: rebind a returned array (``row`` or a temporary) to a view of
    an array of its shape and dtype.  In a branch or a loop the returned name is then
    one of several arrays (or of an input's memory), the one control flow chose, seen
    through a view (a no-op if no view fits)."""
    names = [n for n, v in pg.carried.items() if v.shape and n != "out"]
    if not names:
        return
    name = pg.gen.pick(names)
    var = pg.carried[name]
    shapes = pg.scope.shapes
    options = [text for src, shape in shapes.items() if shape and src not in (name, "out")
               and (var.fuzzy or not pg.scope.fuzzy[src])
               for text, got in view_texts(src, shape) if got == var.shape]
    if not options:
        return
    text = pg.gen.pick(options)
    e = pg.scope.expr(text, var.shape, var.fuzzy)
    if e is not None and e.sig == var.sig:
        pg.emit(indent, f"{name} = {text}")
        pg.bind(name, e)
