"""Reductions inside fused groups: one accumulation pass for several reductions.

:func:`reduce_phase` emits, at the insertion point, the loops over the reduced axes
of one *phase*: reductions over the same axes of same-shaped sources, evaluated for
one position of the kept axes.  The kept axes are looped outside by the schedule
(``lower_group``); the reduced ones run here, outer reduced axes as plain loops, the
last (unit-stride) one innermost.  Each element of the sources is computed once per
index (``GroupEval`` memoizes), so horizontally fused reductions share their
producers.  Identities, NaN propagation of ``max``/``min``, ``any``/``all`` on
``x != 0`` and ``i1`` sums (``or``) follow ``lower_reduce``.

Float sums (the accumulator scheme).  The innermost row of ``n`` elements is cut in
blocks of ``BLOCK`` = 128 elements; a block is summed by ``LANES`` = 16 accumulators
(lane ``k`` takes elements ``16 i + k``, so each lane adds 8 numbers), the lanes are
combined pairwise (4 levels), and the block sums go into a compensated
(Kahan-Babuska-Neumaier) running sum ``(s, c)`` that is also carried over the outer
reduced axes.  The tail (``n % 128``) is one more block: lanes over the full
16-element chunks, the last ``n % 16`` elements into lane 0.  Rows statically shorter
than 16 are summed sequentially and then compensated, except in a small window (next
paragraph).  Error bound: an element goes
through at most 7 + 4 additions inside its block (numpy's pairwise sum: 15 + 3 inside
a 128-block, plus one per halving level, ``log2(n/128)``), and the compensated sum of
the block sums adds about 2 ulp however many blocks there are.  Measured against
float64 references (``tests/ir/test_lower_group_accuracy.py``): within 1 ulp of
numpy's error on benign rows, and far better on rows with cancellation (4 ulp where
numpy is off by 1200 ulp at 4M elements).  The order depends only on the shape, never
on threads.  ``inf``/``nan`` pass through: the compensation is dropped when the
running sum is not finite.  f16/bf16 sums accumulate in f32 and round once, as numpy's
pairwise sum does.  ``prod``, ``max``, ``min`` and integer sums run in source order
(bit-identical to numpy).

Small windows (the rule for short static reductions).  When every reduced extent is
static, the innermost row has ``n < LANES`` elements and the outer reduced axes hold
``2..LANES`` rows in all (the bilateral filter's 11 x 11 window), a float sum keeps one
lane per *column*: lane ``k`` adds the elements ``(r, k)`` of the rows in order (at most
16 numbers, sequentially), and at the end the ``n`` lanes are combined pairwise (at most
4 levels).  An element thus goes through at most 15 + 4 additions, as in numpy's
pairwise sum of a 128-element block (16 per accumulator, then 3 levels), and no
compensation is needed for so few terms.  The lanes live in a small buffer (``n``
elements per sum, zeroed first, freed after the combination) and each row is a
unit-stride loop over its columns doing ``lanes[k] += element(r, k)``: the iterations
of that loop are independent, so LLVM's loop vectorizer computes 4-8 columns at once
(the colour kernel's ``exp`` included) and keeps the lanes in registers; SSA lanes
carried by an unrolled row only got 2-wide SLP code.  ``memplan`` keeps such a buffer
private to the loop the backend splits over threads.  Other reductions of the phase
are carried by the column loop, in source order, as everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.lower_reduce import REDUCTIONS, identity
from pyasc.ir.types import ScalarType, TensorType, element_type, f32, i1

if TYPE_CHECKING:
    from pyasc.ir.passes.lower_group_eval import GroupEval, Index

LANES = 16
BLOCK = 8 * LANES

_KINDS = REDUCTIONS  # lower_reduce's table: op -> (combine, on i1, identity, numpy name)


class Acc:
    """The accumulator of one reduction: element conversion, combine, identity."""

    def __init__(self, ev: GroupEval, op: Operation, in_place: bool = False) -> None:
        self.ev, self.gen, self.op = ev, ev.gen, op
        combine, on_bool, self.ident, _ = _KINDS[type(op)]
        self.elem = element_type(op.operand_values[0].type)
        self.truth = isinstance(op, tensor.AnyOp)  # AllOp derives from AnyOp
        acc_t = i1 if self.truth else self.elem
        if isinstance(op, tensor.SumOp) and self.elem.name in ("f16", "bf16") and not in_place:
            acc_t = f32
        self.acc_t: ScalarType = acc_t
        self.cls = on_bool if acc_t.is_bool else combine
        self.compensated = self.cls is arith.AddOp and acc_t.is_float
        self.width = LANES if self.compensated else 1

    def element(self, idx: Index) -> Value:
        x = self.ev.at(self.op.operand_values[0], idx)
        if self.truth and not self.elem.is_bool:
            return self.gen.cmp("ne", x, identity(self.gen, "zero", self.elem))
        return self.gen.cast(x, self.acc_t)

    def combine(self, a: Value, b: Value) -> Value:
        return self.gen.emit(self.cls.new(a, b))  # type: ignore[attr-defined]

    def zero(self) -> Value:
        return identity(self.gen, self.ident, self.acc_t)

    def state(self) -> list[Value]:
        """Initial state: ``[s, c]`` (compensated) or ``[acc]``."""
        return [self.zero(), self.zero()] if self.compensated else [self.zero()]

    def absorb(self, state: list[Value], x: Value) -> list[Value]:
        """Add a partial result ``x`` to the state."""
        if not self.compensated:
            return [x]
        return neumaier(self.gen, state[0], state[1], x)

    def final(self, state: list[Value]) -> Value:
        gen, v = self.gen, state[0]
        if self.compensated:
            fixed = gen.emit(arith.AddOp.new(state[0], state[1]))
            v = gen.select(gen.emit(m.IsFiniteOp.new(state[0])), fixed, state[0])
        t = self.op.result.type
        return gen.cast(v, t.element if isinstance(t, TensorType) else t)


def neumaier(gen: LoopGen, s: Value, c: Value, x: Value) -> list[Value]:
    """One compensated step: ``s + x`` with its rounding error added to ``c``."""
    t = gen.emit(arith.AddOp.new(s, x))
    big = gen.cmp("ge", gen.emit(m.AbsOp.new(s)), gen.emit(m.AbsOp.new(x)))
    lost_x = gen.emit(arith.AddOp.new(gen.emit(arith.SubOp.new(s, t)), x))
    lost_s = gen.emit(arith.AddOp.new(gen.emit(arith.SubOp.new(x, t)), s))
    return [t, gen.emit(arith.AddOp.new(c, gen.select(big, lost_x, lost_s)))]


def pairwise(acc: Acc, values: Sequence[Value]) -> Value:
    """Neighbours combined level by level (an odd last value moves up unchanged)."""
    vals = list(values)
    while len(vals) > 1:
        vals = [acc.combine(vals[k], vals[k + 1]) if k + 1 < len(vals) else vals[k]
                for k in range(0, len(vals), 2)]
    return vals[0]


def check_nonempty(ev: GroupEval, op: Operation) -> None:
    """numpy's ValueError for ``max``/``min`` over an empty extent (a ``shape`` check)."""
    name = _KINDS[type(op)][3]
    if name:
        gen = ev.gen
        dims = ev.dims(op.operand_values[0])
        extent = gen.product([dims[a] for a in op.attributes["axes"]])
        gen.check(gen.cmp("ne", extent, gen.const(0)), f"zero-size array to reduction "
                  f"operation {name} which has no identity", "shape")


def reduce_phase(ev: GroupEval, reds: Sequence[Operation], kept: Sequence[Value],
                 on_element: Callable[[Index], None] | None = None,
                 in_place: bool = False) -> list[Value]:
    """Compute ``reds`` (same axes, same source shape) at kept position ``kept``;
    ``on_element(idx)`` runs at every source index (stash writes, early outputs).
    The results are remembered by ``ev`` at their result index and returned."""
    gen = ev.gen
    axes = reds[0].attributes["axes"]
    dims = ev.dims(reds[0].operand_values[0])
    rank = len(dims)
    kept_axes = [a for a in range(rank) if a not in axes]
    accs = [Acc(ev, r, in_place) for r in reds]

    def elements(red_ivs: list[Value]) -> list[Value]:
        ki, ri = iter(kept), iter(red_ivs)
        idx = [next(ki) if a in kept_axes else next(ri) for a in range(rank)]
        vals = [acc.element(idx) for acc in accs]
        if on_element is not None:
            on_element(idx)
        return vals

    red_dims = [dims[a] for a in axes]
    if _columns_fit(accs, red_dims):
        state = _Columns(gen, accs, constant_of(red_dims[-1]), elements).run(red_dims[:-1])
    else:
        row = _Row(gen, accs, red_dims[-1], elements)
        state = [v for acc in accs for v in acc.state()]
        state = gen.nest_carried(red_dims[:-1], state, row.run, prefix="r")
    results: list[Value] = []
    for acc, st in zip(accs, _split(accs, state, lambda a: len(a.state())), strict=True):
        value = acc.final(st)
        keep = acc.op.attributes["keepdims"]
        ki = iter(kept)
        out_idx = [gen.const(0) if a in axes else next(ki) for a in range(rank)] \
            if keep else list(kept)
        ev.remember(acc.op.result, out_idx, value)
        results.append(value)
    return results


def _same(a: Value, b: Value) -> bool:
    """True if ``a`` and ``b`` are provably equal (the same value or equal constants)."""
    return a is b or (constant_of(a) is not None and constant_of(a) == constant_of(b))


def _split(accs: Sequence[Acc], flat: Sequence[Value],
           width: Callable[[Acc], int]) -> list[list[Value]]:
    out, k = [], 0
    for acc in accs:
        out.append(list(flat[k:k + width(acc)]))
        k += width(acc)
    return out


class _Row:
    """The innermost reduced axis: lanes and blocks for float sums (module docstring)."""

    def __init__(self, gen: LoopGen, accs: list[Acc], n: Value,
                 elements: Callable[[list[Value]], list[Value]]) -> None:
        self.gen, self.accs, self.n, self.elements = gen, accs, n, elements
        short = isinstance(constant_of(n), int) and constant_of(n) < LANES
        self.lanes = any(a.compensated for a in accs) and not short

    def run(self, outer: list[Value], state: list[Value]) -> list[Value]:
        if constant_of(self.n) == 0:
            return state
        if not self.lanes:
            return self._plain(outer, state)
        gen, n = self.gen, self.n
        nb = gen.sub(n, gen.rem(n, gen.const(BLOCK)))
        if constant_of(nb) != 0:
            state = gen.for_(gen.const(0), nb, lambda iv, st: self._chunk(
                outer, iv[0], gen.add(iv[0], gen.const(BLOCK)), st, True), state,
                gen.const(BLOCK), name="jb")
        if constant_of(nb) != constant_of(n) or constant_of(n) is None:
            state = self._chunk(outer, nb, n, state, False)
        return state

    def _plain(self, outer: list[Value], state: list[Value]) -> list[Value]:
        """One accumulator per reduction in source order; sums restart per row and are
        then absorbed into the compensated state."""
        gen, accs = self.gen, self.accs
        states = _split(accs, state, lambda a: len(a.state()))
        inits = [a.zero() if a.compensated else st[0] for a, st in zip(accs, states,
                                                                        strict=True)]

        def body(iv: list[Value], carried: list[Value]) -> list[Value]:
            es = self.elements([*outer, iv[0]])
            return [a.combine(c, e) for a, c, e in zip(accs, carried, es, strict=True)]
        row = gen.for_(gen.const(0), self.n, body, inits, name="j",
                       names=[f"acc{k}" for k in range(len(accs))])
        return [v for a, st, r in zip(accs, states, row, strict=True)
                for v in a.absorb(st, r)]

    def _chunk(self, outer: list[Value], start: Value, end: Value, state: list[Value],
               full: bool) -> list[Value]:
        """Elements ``start..end`` with lanes, then absorbed into the state."""
        gen, accs = self.gen, self.accs
        states = _split(accs, state, lambda a: len(a.state()))
        lanes = [v for a, st in zip(accs, states, strict=True)
                 for v in ([a.zero()] * LANES if a.compensated else st)]
        stop = end if full else gen.sub(end, gen.rem(gen.sub(end, start), gen.const(LANES)))
        if not _same(stop, start):
            lanes = gen.for_(start, stop, lambda iv, c: self._lane_step(outer, iv[0], c),
                             lanes, gen.const(LANES), name="j")
        if not full and not _same(end, stop):
            lanes = gen.for_(stop, end, lambda iv, c: self._tail_step(outer, iv[0], c),
                             lanes, name="j")
        out: list[Value] = []
        for a, st, ls in zip(accs, states, _split(accs, lanes, lambda a: a.width),
                             strict=True):
            out += a.absorb(st, pairwise(a, ls)) if a.compensated else ls
        return out

    def _lane_step(self, outer: list[Value], j: Value, carried: list[Value]) -> list[Value]:
        gen, accs = self.gen, self.accs
        parts = _split(accs, carried, lambda a: a.width)
        for k in range(LANES):
            es = self.elements([*outer, gen.add(j, gen.const(k))])
            for a, p, e in zip(accs, parts, es, strict=True):
                slot = k if a.compensated else 0
                p[slot] = a.combine(p[slot], e)
        return [v for p in parts for v in p]

    def _tail_step(self, outer: list[Value], j: Value, carried: list[Value]) -> list[Value]:
        parts = _split(self.accs, carried, lambda a: a.width)
        es = self.elements([*outer, j])
        for a, p, e in zip(self.accs, parts, es, strict=True):
            p[0] = a.combine(p[0], e)
        return [v for p in parts for v in p]


def _columns_fit(accs: Sequence[Acc], red_dims: Sequence[Value]) -> bool:
    """The small-window rule (module docstring): static row shorter than ``LANES`` and
    at most ``LANES`` static rows, with a float sum among the reductions."""
    sizes = [constant_of(d) for d in red_dims]
    if len(sizes) < 2 or not all(isinstance(c, int) and c > 0 for c in sizes):
        return False
    rows = 1
    for c in sizes[:-1]:
        rows *= c
    return sizes[-1] < LANES and 1 < rows <= LANES and any(a.compensated for a in accs)


class _Columns:
    """A small window: one lane per column, kept in a small buffer (module docstring)."""

    def __init__(self, gen: LoopGen, accs: list[Acc], n: int,
                 elements: Callable[[list[Value]], list[Value]]) -> None:
        self.gen, self.accs, self.n, self.elements = gen, accs, n, elements

    def run(self, outer_dims: Sequence[Value]) -> list[Value]:
        """The compensated-state layout ``lower_group_reduce`` expects after the rows."""
        gen, n = self.gen, self.gen.const(self.n)
        lanes = {a: gen.alloc((self.n,), a.acc_t, [n], name="lanes")
                 for a in self.accs if a.compensated}
        gen.for_(gen.const(0), n, lambda iv, _: self._zero(lanes, iv[0]), name="k")
        inits = [v for a in self.accs if not a.compensated for v in a.state()]
        rest = iter(gen.nest_carried(outer_dims, inits, lambda o, c: self._row(
            lanes, o, c), prefix="r"))
        out: list[Value] = []
        for a in self.accs:
            if a.compensated:
                ls = [gen.load(lanes[a], [gen.const(k)]) for k in range(self.n)]
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
                    self.gen.store(a.combine(lane, e), lanes[a], iv)
                else:
                    nxt.append(a.combine(next(it), e))
            return nxt
        return self.gen.for_(self.gen.const(0), self.gen.const(self.n), column, carried,
                             name="k")
