"""What a ``for`` loop iterates over: ``range``, arrays (first axis), ``enumerate`` and
``zip`` of those, and compile-time tuples (unrolled).

:func:`iteration` turns an iterable into a counted range plus a function giving the
loop target's value for a loop index, so every run-time loop is one ``range`` loop.
"""

from __future__ import annotations

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
