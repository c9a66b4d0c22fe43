"""Reductions inside fused groups: one accumulation pass for several reductions.

:func:`reduce_phase` emits, at the insertion point, the loops over the reduced axes
of one *phase*: reductions over the same axes of same-shaped sources, evaluated for
one position of the kept axes.  The kept axes are looped outside by the schedule
(``lower_group``); the reduced ones run here, outer reduced axes as plain loops, the
last (unit-stride) one innermost.  Each element of the sources is computed once per
index (``Evaluator`` memoizes), so horizontally fused reductions share their
producers.  Identities, NaN propagation of ``max``/``min``, ``any``/``all`` on
``x != 0`` and ``i1`` sums (``or``) follow ``lower_reduce``.

Float sums (the accumulator scheme).  The innermost row of ``n`` elements is cut in
blocks of ``BLOCK`` = 128 elements; a block is summed by ``LANES`` = 16 accumulators
(lane ``k`` takes elements ``16 i + k``, so each lane adds 8 numbers), the lanes are
combined pairwise (4 levels), and the block sums go into a compensated
(Kahan-Babuska-Neumaier) running sum ``(s, c)`` that is also carried over the outer
reduced axes.  The tail (``n % 128``) is one more block: lanes over the full
16-element chunks, the last ``n % 16`` elements into lane 0.  The lanes live in a
16-element buffer per sum (see ``Row``).  Rows statically shorter than 16 are summed
sequentially and then compensated, except in a small window (``lower_group_windows``:
one lane per window column).  Error bound: an element goes through at most 7 + 4
additions inside its block (numpy's pairwise sum: 15 + 3 inside
a 128-block, plus one per halving level, ``log2(n/128)``), and the compensated sum of
the block sums adds about 2 ulp however many blocks there are.  Measured against
float64 references (``tests/ir/test_lower_group_accuracy.py``): within 1 ulp of
numpy's error on benign rows, and far better on rows with cancellation (4 ulp where
numpy is off by 1200 ulp at 4M elements).  The order depends only on the shape, never
on threads.  A long whole-array sum at the top of the function (one reduced axis, no
kept axes, float sums only, nothing stored on the way) is cut in chunks of ``SPLIT``
elements summed by a ``parallel`` loop, each into its own compensated state, which are
then absorbed in chunk order (``Row.run_split``): the chunks depend on the length only.
``inf``/``nan`` pass through: the compensation is dropped when the
running sum is not finite.  f16/bf16 sums and products accumulate in f32 and round once,
as numpy's half loops do.  ``prod``, ``max``, ``min`` and integer sums run in source order
(bit-identical to numpy); float ``max``/``min`` in lanes with the same bits (rows whose
result is a zero or NaN are redone in order), 64 lanes when no sum shares the pass
(``ORDER_FREE_LANES``: no blocks, nothing fixes their order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.lower_group_acc import (
    BLOCK,
    KINDS,
    LANES,
    ORDER_FREE_LANES,
    Acc,
    neumaier,
    pairwise,
)
from pyasc.ir.passes.lower_group_base import Evaluator, Index
from pyasc.ir.passes.lower_group_windows import Columns, columns_fit, columns_fit_now
from pyasc.ir.types import DYN

SPLIT = 512 * BLOCK
"""Elements per chunk of a long whole-array sum split over threads (64 Ki)."""


def check_nonempty(ev: Evaluator, op: Operation) -> None:
    """numpy's ValueError for ``max``/``min`` over an empty extent (a ``shape`` check)."""
    name = KINDS[type(op)][3]
    if name:
        gen = ev.gen
        dims = ev.dims(op.operand_values[0])
        extent = gen.product([dims[a] for a in op.attributes["axes"]])
        gen.check(gen.cmp("ne", extent, gen.const(0)), f"zero-size array to reduction "
                  f"operation {name} which has no identity", "shape")


def reduce_phase(ev: Evaluator, reds: Sequence[Operation], kept: Sequence[Value],
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

    def rows() -> list[Value]:
        row = Row(gen, accs, red_dims[-1], elements)
        state = [v for acc in accs for v in acc.state()]
        state = gen.nest_carried(red_dims[:-1], state, row.run, prefix="r")
        row.release()
        if row.lanes:
            state = _source_order_ties(gen, accs, state, red_dims, element_at)
        return state

    def element_at(acc: Acc, red_ivs: list[Value]) -> Value:
        ki, ri = iter(kept), iter(red_ivs)
        return acc.element([next(ki) if a in kept_axes else next(ri) for a in range(rank)])

    def columns() -> list[Value]:
        return Columns(gen, accs, red_dims[-1], elements).run(red_dims[:-1])

    fit = columns_fit(accs, red_dims)
    owner = gen.b.block.parent_op  # None: the function's new entry block, being built
    top_level = owner is None or isinstance(owner, FuncOp)  # not inside a user loop
    if top_level and not kept and len(red_dims) == 1 and on_element is None and \
            all(a.compensated for a in accs) and not (constant_of(red_dims[0]) or 0) < SPLIT:
        row = Row(gen, accs, red_dims[0], elements, shared=False)
        state = row.run_split([v for acc in accs for v in acc.state()])
    elif fit is True:
        state = columns()
    elif fit is None:  # decided at run time: the window's sizes are not static
        types = [v.type for acc in accs for v in acc.state()]
        state = gen.if_(columns_fit_now(gen, red_dims), types, columns, rows)
    else:
        state = rows()
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


def _source_order_ties(gen: LoopGen, accs: Sequence[Acc], state: list[Value],
                       red_dims: Sequence[Value],
                       element_at: Callable[[Acc, list[Value]], Value]) -> list[Value]:
    """Laned ``max``/``min`` results that may differ in bits from the source order
    (``±0.0``, NaN: ``Acc.doubtful``) recomputed in source order, so the lanes change
    no bit; a scalar pass over the row only when the result is a zero or NaN."""
    out: list[Value] = []
    for acc, st in zip(accs, _split(accs, state, lambda a: len(a.state())), strict=True):
        doubt = acc.doubtful(st[0])
        if doubt is not None:
            def redo(acc: Acc = acc) -> list[Value]:
                return gen.nest_carried(red_dims, acc.state(), lambda ivs, c: [
                    acc.combine(c[0], element_at(acc, ivs))], prefix="r")
            st = gen.if_(doubt, [acc.acc_t], redo, lambda st=st: st)
        out += st
    return out


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


class Row:
    """The innermost reduced axis: lanes and blocks for float sums (module docstring).

    The lanes of the float sums live in a small buffer (``LANES`` elements per sum,
    allocated once per phase): each 16-element step is a loop over ``k`` doing
    ``lanes[k] += element(j + k)``, whose iterations are independent, so LLVM's loop
    vectorizer turns it into whole-vector adds and keeps the lanes in registers (16
    SSA lanes only got shuffled 4-wide SLP code).  The order of additions is the same
    either way.  Other reductions of the phase are carried through that loop in source
    order."""

    def __init__(self, gen: LoopGen, accs: list[Acc], n: Value,
                 elements: Callable[[list[Value]], list[Value]], shared: bool = True) -> None:
        self.gen, self.accs, self.n, self.elements = gen, accs, n, elements
        size = constant_of(n)
        short = isinstance(size, int) and size < LANES
        # max/min alone take ORDER_FREE_LANES lanes (several vector accumulators); a
        # sum's LANES fix its order of additions
        wide = not any(a.compensated for a in accs) and \
            not (isinstance(size, int) and size < ORDER_FREE_LANES)
        self.width = ORDER_FREE_LANES if wide else LANES
        self.lanes = any(a.laned for a in accs) and not short
        self.bufs = self._lane_buffers() if shared else {}

    def _lane_buffers(self) -> dict[Acc, Value]:
        size = self.gen.const(self.width)
        return {a: self.gen.alloc((self.width,), a.acc_t, [size], name="lanes")
                for a in self.accs if a.laned and self.lanes}

    def _width(self, acc: Acc) -> int:
        return self.width if acc.laned else 1

    def release(self) -> None:
        for buf in self.bufs.values():
            self.gen.b.insert(mem.DeallocOp([buf]))

    def run(self, outer: list[Value], state: list[Value]) -> list[Value]:
        if constant_of(self.n) == 0:
            return state
        if not self.lanes:
            return self._plain(outer, state)
        return self._range(outer, self.gen.const(0), self.n, state)

    def _range(self, outer: list[Value], start: Value, end: Value,
               state: list[Value]) -> list[Value]:
        """Elements ``start..end`` of the row: whole blocks, then the rest."""
        gen = self.gen
        if not any(a.compensated for a in self.accs):  # max/min lanes: no blocks needed
            return self._chunk(outer, start, end, state, False)
        length = gen.sub(end, start)
        nb = gen.add(start, gen.sub(length, gen.rem(length, gen.const(BLOCK))))
        if not _same(nb, start):
            state = gen.for_(start, nb, lambda iv, st: self._chunk(
                outer, iv[0], gen.add(iv[0], gen.const(BLOCK)), st, True), state,
                gen.const(BLOCK), name="jb")
        if not _same(nb, end):
            state = self._chunk(outer, nb, end, state, False)
        return state

    def run_split(self, state: list[Value]) -> list[Value]:
        """A long single row (no kept axes, float sums only) in chunks of ``SPLIT``
        elements: a ``parallel`` loop sums each chunk on its own (own lane buffers) into
        a partials buffer, then the chunks' compensated states are absorbed in order.
        The chunks depend on the length only: the same result for any thread count."""
        gen, n, size = self.gen, self.n, self.gen.const(SPLIT)
        count = gen.emit(arith.FloorDivOp.new(gen.add(n, gen.const(SPLIT - 1)), size))
        two = gen.const(2)
        parts = {a: gen.alloc((DYN,), a.acc_t, [gen.mul(count, two)], name="partials")
                 for a in self.accs}

        def chunk(iv: list[Value], _: list[Value]) -> list[Value]:
            start = gen.mul(iv[0], size)
            end = gen.emit(arith.MinOp.new(gen.add(start, size), n))
            self.bufs = self._lane_buffers()
            st = self._range([], start, end, [v for a in self.accs for v in a.state()])
            for a, (s, c) in zip(self.accs, _pairs(st), strict=True):
                gen.store(s, parts[a], [gen.mul(iv[0], two)])
                gen.store(c, parts[a], [gen.add(gen.mul(iv[0], two), gen.const(1))])
            self.release()
            return []
        gen.for_(gen.const(0), count, chunk, name="chunk")
        gen.b.block.ops[gen.b.index - 1].attributes["parallel"] = True

        def absorb(iv: list[Value], st: list[Value]) -> list[Value]:
            out: list[Value] = []
            for a, (s, c) in zip(self.accs, _pairs(st), strict=True):
                at = gen.mul(iv[0], two)
                t, lost = neumaier(gen, s, c, gen.load(parts[a], [at]))
                out += [t, a.combine(lost, gen.load(parts[a], [gen.add(at, gen.const(1))]))]
            return out
        state = gen.for_(gen.const(0), count, absorb, state, name="chunk")
        for buf in parts.values():
            gen.b.insert(mem.DeallocOp([buf]))
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
                for v in (a.absorb(st, r) if a.compensated else [r])]

    def _chunk(self, outer: list[Value], start: Value, end: Value, state: list[Value],
               full: bool) -> list[Value]:
        """Elements ``start..end`` with lanes, then absorbed into the state."""
        gen, accs = self.gen, self.accs
        states = _split(accs, state, lambda a: len(a.state()))
        for buf, acc in ((b, a) for a, b in self.bufs.items()):
            for k in range(self.width):
                gen.store(acc.zero(), buf, [gen.const(k)])
        carried = [st[0] for a, st in zip(accs, states, strict=True) if not a.laned]
        stop = end if full else gen.sub(end, gen.rem(gen.sub(end, start), gen.const(self.width)))
        if not _same(stop, start):
            carried = gen.for_(start, stop, lambda iv, c: self._lane_step(outer, iv[0], c),
                               carried, gen.const(self.width), name="j")
        rest = iter(carried)
        lanes = [v for a in accs for v in (
            [gen.load(self.bufs[a], [gen.const(k)]) for k in range(self.width)]
            if a.laned else [next(rest)])]
        if not full and not _same(end, stop):
            lanes = gen.for_(stop, end, lambda iv, c: self._tail_step(outer, iv[0], c),
                             lanes, name="j")
        out: list[Value] = []
        for a, st, ls in zip(accs, states, _split(accs, lanes, self._width),
                             strict=True):
            out += a.absorb(st, pairwise(a, ls)) if a.laned else ls
        return out

    def _lane_step(self, outer: list[Value], j: Value, carried: list[Value]) -> list[Value]:
        """Elements ``j .. j + width``: ``lanes[k] (op)= element(j + k)`` for the laned
        reductions, the other reductions carried in order."""
        gen = self.gen

        def column(iv: list[Value], vals: list[Value]) -> list[Value]:
            es = self.elements([*outer, gen.add(j, iv[0])])
            it = iter(vals)
            nxt: list[Value] = []
            for a, e in zip(self.accs, es, strict=True):
                if a.laned:
                    lane = gen.load(self.bufs[a], iv)
                    gen.store(a.lane_add(lane, e), self.bufs[a], iv)
                else:
                    nxt.append(a.combine(next(it), e))
            return nxt
        out = gen.for_(gen.const(0), gen.const(self.width), column, carried, name="k")
        if not carried:  # only lanes: independent iterations (``loop.for``'s ``lanes``)
            gen.b.block.ops[gen.b.index - 1].attributes["lanes"] = self.width
        return out

    def _tail_step(self, outer: list[Value], j: Value, carried: list[Value]) -> list[Value]:
        parts = _split(self.accs, carried, self._width)
        es = self.elements([*outer, j])
        for a, p, e in zip(self.accs, parts, es, strict=True):
            p[0] = a.combine(p[0], e)
        return [v for p in parts for v in p]

def _pairs(state: Sequence[Value]) -> list[tuple[Value, Value]]:
    return [(state[k], state[k + 1]) for k in range(0, len(state), 2)]
