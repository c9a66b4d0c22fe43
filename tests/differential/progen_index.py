"""Gather and scatter in generated programs: integer-array and boolean-mask indexing,
``np.take``, and writes through them (``out[idx] = e``, ``out[idx] += e``,
``out[mask] = e[mask]``).

Index arrays are computed from exact data and stay in range by construction
(:func:`index_array`: ``x.astype(np.int64) % a.shape[0]``, an ``argsort``, a clipped
cast, a reversed ``arange``), so they are data-dependent but never out of bounds (an
out-of-range index is an ``IndexError`` in numpy; checking it is the job of other
tests).  A target dim is indexed only when it is non-empty at the program's sizes.
A boolean mask selects a data-dependent number of elements: the selection is reduced
(``x[mask].sum()``) or written back (``out[mask] = e[mask]``).  Device code does not
support data-dependent sizes (E50010): those programs skip the device runner.
"""

from __future__ import annotations

from progen_expr import Expr, ExprGen, bshape, dim_size
from progen_reduce import REDUCERS

SIZE_TEXT = {"n": "a.shape[0]", "m": "a.shape[1]"}
"""The run-time size of the dims that may be indexed."""

INDEX_FORMS = ("({x}.astype(np.int64) % {size})", "(np.abs({x}.astype(np.int64)) % {size})",
               "np.clip({x}.astype(np.int64), 0, {size} - 1)")
MASK_REDUCERS = ("sum", "prod", "any", "all", "mean")  # an empty selection is fine


def index_array(gen: ExprGen, dim: str, ndim: int | None = None) -> Expr | None:
    """An int64 array (of ``ndim`` dims, if given) whose values index ``dim`` (non-empty
    at the program's sizes), or None."""
    if dim not in SIZE_TEXT or dim_size(dim, gen.sizes) == 0:
        return None
    if dim == "m" and "m" not in gen.scope.shapes.get("a", ()):
        return None
    size = SIZE_TEXT[dim]
    form = gen.pick(("mod", "mod", "mod", "argsort", "arange"))
    if form == "arange":
        return gen.scope.expr(f"np.arange({size})[::-1]", (dim,), False) \
            if ndim in (None, 1) else None
    x = _index_source(gen, ndim, dim if form == "argsort" else None)
    if x is None:
        return None
    if form == "argsort":  # a permutation of range(len(x)) along the last axis; stable:
        # numpy's default (quicksort, SIMD on some hosts) orders ties its own way, pyasc
        # always gives the stable order (documented)
        return gen.scope.expr(f"np.argsort({x.text}, axis=-1, kind='stable')", x.shape, False)
    return gen.scope.expr(gen.pick(INDEX_FORMS).format(x=x.text, size=size), x.shape, False)


def _index_source(gen: ExprGen, ndim: int | None, last: str | None) -> Expr | None:
    """Exact data for an index array: an array of ``ndim`` dims (ending in ``last``);
    floats only from the inputs (a float cast to int64 must be finite)."""
    for _ in range(4):
        x = gen.expr(1, None, exact=True) if gen.chance(0.5) else gen.leaf(None, exact=True)
        if not x.shape or len(x.shape) > 2 or (ndim is not None and len(x.shape) != ndim):
            continue
        if (last is None or x.shape[-1] == last) and \
                ("float" not in x.dtype or gen.is_input(x)):
            return x
    return None


def _target(gen: ExprGen) -> tuple[str, tuple[str, ...], bool] | None:
    cands = [(n, s) for n, s in gen.scope.shapes.items() if 1 <= len(s) <= 2]
    if not cands:
        return None
    name, shape = gen.pick(cands)
    return name, shape, gen.scope.fuzzy[name]


def gather_rule(gen: ExprGen, depth: int, within, exact: bool) -> Expr | None:
    """``t[idx]``, ``t[:, idx]``, ``np.take(t, idx, axis=...)`` or a reduced ``t[mask]``."""
    found = _target(gen)
    if found is None:
        return None
    name, shape, fuzzy = found
    if exact and fuzzy:
        return None
    if gen.chance(0.15):  # device code skips data-dependent sizes: not too often
        return _masked(gen, name, shape, fuzzy, within, exact)
    axis = 1 if len(shape) == 2 and gen.chance(0.3) else 0
    idx = index_array(gen, shape[axis])
    if idx is None:
        return None
    out_shape = shape[:axis] + idx.shape + shape[axis + 1:]
    if len(out_shape) > 2 or (within is not None and bshape(out_shape, within) != within):
        return None
    forms = [f"np.take({name}, {idx.text}, axis={axis})", f"{name}.take({idx.text}, axis={axis})",
             f"{name}[{idx.text}]" if axis == 0 else f"{name}[:, {idx.text}]"]
    return gen.scope.expr(gen.pick(forms), out_shape, fuzzy)


def _masked(gen: ExprGen, name: str, shape: tuple[str, ...], fuzzy: bool, within,
            exact: bool) -> Expr | None:
    rows = len(shape) == 2 and gen.chance(0.5)  # a mask of rows: x[mask] is (k, m)
    c = gen.condition(1, shape[:1] if rows else shape)
    if c.shape != (shape[:1] if rows else shape):
        return None
    fn = gen.pick(MASK_REDUCERS)
    orders = REDUCERS[fn].orders and "float" in gen.scope.expr(name, shape, fuzzy).dtype
    if (REDUCERS[fn].exact_input and fuzzy) or (exact and (fuzzy or orders)):
        return None
    out_shape, args = ((shape[1],), "axis=0") if rows else ((), "")
    if within is not None and bshape(out_shape, within) != within:
        return None
    e = gen.scope.expr(f"{name}[{c.text}].{fn}({args})", out_shape, fuzzy or orders)
    if e is not None and orders:
        gen.work.add(e.dtype)
        gen.terms += max(1, dim_size(shape[0], gen.sizes) * (dim_size(shape[1], gen.sizes)
                                                             if len(shape) == 2 else 1))
    return e


def scatter_targets(gen: ExprGen, out_shape: tuple[str, ...]
                    ) -> list[tuple[str, tuple[str, ...]]]:
    """``(target, shape of the value)`` for writes through index arrays into ``out``."""
    targets = []
    for axis in range(len(out_shape)):
        idx = index_array(gen, out_shape[axis], ndim=1)
        if idx is None:
            continue
        text = f"out[{idx.text}]" if axis == 0 else f"out[:, {idx.text}]"
        shape = out_shape[:axis] + idx.shape + out_shape[axis + 1:]
        targets.append((text, shape))
    return targets


def mask_target(gen: ExprGen, out_shape: tuple[str, ...]) -> tuple[str, str] | None:
    """``(mask text, value text format)``: ``out[mask] = e[mask]`` needs ``e`` of
    ``out``'s whole shape, or a scalar."""
    c = gen.condition(1, out_shape)
    if c.shape != out_shape:
        return None
    return c.text, "({e})[" + c.text + "]"
