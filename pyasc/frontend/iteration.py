"""What a ``for`` loop iterates over: ``range``, arrays (first axis), ``enumerate`` and
``zip`` of those, and compile-time tuples (unrolled).

:func:`iteration` turns an iterable into a counted range plus a function giving the
loop target's value for a loop index, so every run-time loop is one ``range`` loop.

A :class:`Product` (``np.ndindex(h, w)``, ``itertools.product(range(h), xs)``) is a
nest of loops instead: :func:`nested_loops` writes it as nested ``for`` statements over
hidden names, binding the target (a tuple) in the innermost body; a ``break`` of the
user's loop sets a hidden flag that ends every level, ``continue`` goes to the next
tuple and the ``else`` clause runs after the outermost loop, as Python's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from pyasc.errors import UnsupportedSyntaxError
from pyasc.frontend import indexmath as im
from pyasc.frontend.values import Buffer, RangeValue, Tensor

Item = Callable[[object], object]


@dataclass(frozen=True)
class Enumerate:
    """``enumerate(iterable, start)``."""

    inner: object
    start: object = 0


@dataclass(frozen=True)
class Product:
    """``itertools.product(*factors)`` (``np.ndindex``: of ranges): tuples, the last
    factor varying fastest."""

    factors: tuple[object, ...]


@dataclass(frozen=True)
class Zip:
    """``zip(*iterables)``."""

    inners: tuple[object, ...]


def iteration(lw, it: object) -> tuple[RangeValue, Item] | list[object]:
    """A ``(range, item_of_index)`` pair, or the items of a compile-time sequence."""
    if isinstance(it, tuple | list):
        return list(it)
    if isinstance(it, RangeValue):
        return it, lambda iv: iv
    if isinstance(it, Tensor | Buffer):
        return _array(lw, it)
    if isinstance(it, Enumerate):
        return _enumerate(lw, it)
    if isinstance(it, Zip):
        return _zip(lw, it)
    raise UnsupportedSyntaxError(f"cannot iterate over {type(it).__name__} in a @hybrid "
                                 "function",
                                 hint="iterate over range(...), an array, enumerate/zip "
                                      "of those, or a tuple")


def _array(lw, x: Tensor | Buffer) -> tuple[RangeValue, Item]:
    from pyasc.frontend.indexing import load_index

    if x.type.rank == 0:
        raise UnsupportedSyntaxError("iteration over a 0-d array")
    return RangeValue(0, lw.em.dims(x)[0], 1), lambda iv: load_index(lw, x, (iv,))


def _enumerate(lw, e: Enumerate) -> tuple[RangeValue, Item] | list[object]:
    inner = iteration(lw, e.inner)
    if isinstance(inner, list):
        return [(im.add(lw.em, e.start, k), v) for k, v in enumerate(inner)]
    rng, item = inner
    return rng, lambda iv: (im.add(lw.em, e.start, _count(lw, rng, iv)), item(iv))


def _count(lw, rng: RangeValue, iv: object) -> object:
    """The iteration number of loop index ``iv`` in ``rng``."""
    return im.floordiv(lw.em, im.sub(lw.em, iv, rng.start), rng.step)


def _zip(lw, z: Zip) -> tuple[RangeValue, Item] | list[object]:
    inners = [iteration(lw, i) for i in z.inners]
    if all(isinstance(i, list) for i in inners):
        return list(zip(*inners, strict=False))
    if any(isinstance(i, list) for i in inners):
        raise UnsupportedSyntaxError("zip of a tuple with arrays or ranges",
                                     hint="zip arrays and ranges only")
    pairs: list[tuple[RangeValue, Item]] = inners  # type: ignore[assignment]
    n: object = _length(lw, pairs[0][0])
    for rng, _ in pairs[1:]:
        n = im.minimum(lw.em, n, _length(lw, rng))

    def item(k: object) -> tuple[object, ...]:
        return tuple(f(im.add(lw.em, rng.start, im.mul(lw.em, k, rng.step)))
                     for rng, f in pairs)

    return RangeValue(0, n, 1), item


def _length(lw, rng: RangeValue) -> object:
    """``len(range(...))``: ``max(0, ceil((stop - start) / step))`` for either sign."""
    neg = im.neg(lw.em, im.floordiv(lw.em, im.sub(lw.em, rng.start, rng.stop), rng.step))
    return im.maximum(lw.em, 0, neg)


def nested_loops(lw, node: ast.For, product: Product) -> list[ast.stmt]:
    """The statements that run ``for <target> in <product>: <body> else: <orelse>``
    (the factors are stored under hidden names in ``lw``'s scope)."""
    tag = lw.unit.fresh("nd")
    flag = f"{tag}brk"
    names = [f"{tag}i{k}" for k in range(len(product.factors))]
    for k, factor in enumerate(product.factors):
        lw.scope[f"{tag}it{k}"] = factor
    breaks = _rewrite_breaks(node.body, flag)
    body: list[ast.stmt] = [ast.Assign(targets=[node.target], value=ast.Tuple(
        elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())), *breaks[0]]
    for k in reversed(range(len(names))):
        loop = ast.For(target=ast.Name(id=names[k], ctx=ast.Store()),
                       iter=ast.Name(id=f"{tag}it{k}", ctx=ast.Load()), body=body,
                       orelse=node.orelse if k == 0 else [])
        exit_ = ast.If(test=ast.Name(id=flag, ctx=ast.Load()), body=[ast.Break()], orelse=[])
        body = [loop, exit_] if k and breaks[1] else [loop]
    first: list[ast.stmt] = [ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())],
                                        value=ast.Constant(value=False))] if breaks[1] else []
    out = [*first, *body]
    for stmt in out:
        for n in ast.walk(stmt):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, node)
    return out


def _rewrite_breaks(stmts: list[ast.stmt], flag: str) -> tuple[list[ast.stmt], bool]:
    """``stmts`` with each ``break`` of this loop preceded by ``flag = True`` (nested
    loops and functions keep theirs); and whether there was one."""
    found = False

    def visit(items: list[ast.stmt]) -> list[ast.stmt]:
        nonlocal found
        out: list[ast.stmt] = []
        for st in items:
            if isinstance(st, ast.Break):
                found = True
                set_flag = ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())],
                                      value=ast.Constant(value=True))
                out += [ast.copy_location(set_flag, st), st]
            elif isinstance(st, ast.If):
                out.append(_copy(st, body=visit(st.body), orelse=visit(st.orelse)))
            elif isinstance(st, ast.With):
                out.append(_copy(st, body=visit(st.body)))
            else:  # loops and functions own their breaks
                out.append(st)
        return out

    return visit(stmts), found


def _copy(st: ast.stmt, **fields: object) -> ast.stmt:
    new = type(st)(**{**{f: getattr(st, f) for f in st._fields}, **fields})
    return ast.copy_location(new, st)
