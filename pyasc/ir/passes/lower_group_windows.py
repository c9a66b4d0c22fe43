"""The small-window rule of float sums in fused groups (used by ``lower_group_reduce``).

Small windows are short reductions over two or more axes.  When the innermost
row has ``n < LANES`` elements and the outer reduced axes hold ``2..LANES`` rows in all
(the bilateral filter's static 11 x 11 window), a float sum keeps one lane per *column*.
When some extent is only known at run time (a window whose bounds come from the user's
loop variables, the adaptive pool's), both schemes are emitted and a ``loop.if`` picks
the column lanes when ``0 < n <= LANES`` and the rows number at most ``LANES`` (an
unused lane stays ``+0.0`` and changes no sum). With column lanes, lane ``k`` adds the
elements ``(r, k)`` of the rows in order (at most 16 numbers, sequentially), and at the
end the lanes are combined pairwise (at most 4 levels). An element thus goes through at
most 15 + 4 additions, as in numpy's pairwise sum of a 128-element block (16 per
accumulator, then 3 levels), and no compensation is needed for so few terms. The lanes
live in a small buffer (``n`` elements per sum, zeroed first, freed after the
combination) and each row is a unit-stride loop over its columns doing ``lanes[k] +=
element(r, k)``: the iterations of that loop are independent, so LLVM's loop vectorizer
computes 4-8 columns at once (the colour kernel's ``exp`` included) and keeps the lanes
in registers; SSA lanes carried by an unrolled row only got 2-wide SLP code. ``memplan``
keeps such a buffer private to the loop the backend splits over threads. Other
reductions of the phase are carried by the column loop, in source order, as everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Value
from pyasc.ir.ops import mem
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.lower_group_acc import LANES, Acc, pairwise


def columns_fit(accs: Sequence[Acc], red_dims: Sequence[Value]) -> bool | None:
    """The small-window rule (module docstring): a row shorter than ``LANES`` (at most
    ``LANES`` when its size is only known at run time) and ``2..LANES`` rows in all,
    with a float sum among the reductions.  ``None``: some size is dynamic, so only
    :func:`columns_fit_now` can tell."""
    if len(red_dims) < 2 or not any(a.compensated for a in accs):
        return False
    sizes = [constant_of(d) for d in red_dims]
    if not all(isinstance(c, int) and c > 0 for c in sizes):
        static = [c for c in sizes if isinstance(c, int)]
        return None if all(0 < c <= LANES for c in static) else False
    rows = 1
    for c in sizes[:-1]:
        rows *= c
    return sizes[-1] < LANES and 1 < rows <= LANES


def columns_fit_now(gen: LoopGen, red_dims: Sequence[Value]) -> Value:
    """The rule at run time: ``0 < n <= LANES`` columns and ``rows <= LANES``."""
    lanes = gen.const(LANES)
    n, rows = red_dims[-1], gen.product(red_dims[:-1])
    return gen.all_of([gen.cmp("gt", n, gen.const(0)), gen.cmp("le", n, lanes),
                       gen.cmp("le", rows, lanes)])


class Columns:
    """A small window: one lane per column, kept in a small buffer (module docstring).
    With a run-time row length ``n`` (at most ``LANES``, checked by the caller) the
    buffer has ``LANES`` lanes, all zeroed; the unused ones add ``+0.0``, which changes
    no sum (a lane's sum already starts at ``+0.0``)."""

    def __init__(self, gen: LoopGen, accs: list[Acc], n: Value,
                 elements: Callable[[list[Value]], list[Value]]) -> None:
        self.gen, self.accs, self.n, self.elements = gen, accs, n, elements
        width = constant_of(n)
        self.width = width if isinstance(width, int) else LANES

    def run(self, outer_dims: Sequence[Value]) -> list[Value]:
        """The compensated-state layout ``lower_group_reduce`` expects after the rows."""
        gen, size = self.gen, self.gen.const(self.width)
        lanes = {a: gen.alloc((self.width,), a.acc_t, [size], name="lanes")
                 for a in self.accs if a.compensated}
        gen.for_(gen.const(0), size, lambda iv, _: self._zero(lanes, iv[0]), name="k")
        inits = [v for a in self.accs if not a.compensated for v in a.state()]
        rest = iter(gen.nest_carried(outer_dims, inits, lambda o, c: self._row(
            lanes, o, c), prefix="r"))
        out: list[Value] = []
        for a in self.accs:
            if a.compensated:
                ls = [gen.load(lanes[a], [gen.const(k)]) for k in range(self.width)]
                out += a.absorb(a.state(), pairwise(a, ls))
            else:
                out.append(next(rest))
        for buf in lanes.values():
            gen.b.insert(mem.DeallocOp([buf]))
        return out

    def _zero(self, lanes: dict[Acc, Value], k: Value) -> list[Value]:
        for a, buf in lanes.items():
            self.gen.store(a.zero(), buf, [k])
        return []

    def _row(self, lanes: dict[Acc, Value], outer: list[Value],
             carried: list[Value]) -> list[Value]:
        """One row: a unit-stride loop over its columns, each adding to its lane."""
        def column(iv: list[Value], acc_vals: list[Value]) -> list[Value]:
            es = self.elements([*outer, iv[0]])
            it = iter(acc_vals)
            nxt: list[Value] = []
            for a, e in zip(self.accs, es, strict=True):
                if a.compensated:
                    lane = self.gen.load(lanes[a], iv)
                    self.gen.store(a.lane_add(lane, e), lanes[a], iv)
                else:
                    nxt.append(a.combine(next(it), e))
            return nxt
        return self.gen.for_(self.gen.const(0), self.n, column, carried, name="k")
