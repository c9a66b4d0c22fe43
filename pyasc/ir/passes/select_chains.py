"""``select-chains``: a running max/min/argmax loop written by the user
(``if x > mx: mx = x``, ``mx = max(mx, x)``, ``k = j`` beside it, ``np.maximum(mx, x)``)
searched in lanes, bit-identical to the loop (loop level, CPU only; after
``speculate-guards``, which makes the ``if`` a ``select``; before ``reduce-to-memory``).
What is matched and why the lanes give the same bits: ``select_chains_match``.

For a loop ``L`` (step 1, ``n = upper - lower`` iterations) of chains ``a`` (payloads
``b``), emitted before ``L``::

    lanes_a[k] = init_a; ranks[k] = lower - 1; lanes_b[k] = init_b      # k < W
    for j in range(lower, lower + n - n % W, W):
        for k in range(W):                      # ``lanes = W``: vectorized
            <L's body at iv = j + k, a = lanes_a[k], b = lanes_b[k]>
            lanes_a[k] = a'; lanes_b[k] = b'; ranks[k] = iv if taken else ranks[k]
    lanes merged (halves folded by lane loops, then pairwise)
    L from lower + n - n % W, started from the merged values

``W`` is 64 (four 512-bit vectors, as ``np.max``'s order-free lanes) for chains with
no payloads, else 16; rows statically shorter than 16 are left alone.  A float chain
with no payloads whose result is a zero (or, for ``np.maximum``, a NaN) is recomputed by
the original loop (a copy of ``L`` under ``loop.if``): which zero (NaN) comes first is
not known without ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.builder import Builder
from pyasc.ir.core import Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.select_chains_match import STRICT, Chain, match
from pyasc.ir.types import i1, index

LANES = 16
"""Lanes of chains with payloads (a value, a rank and the payloads per lane)."""
WIDE_LANES = 64
"""Lanes of chains without payloads: several vector accumulators, so the compare and
blend of one lane do not wait for the previous vector's."""


@register_pass
class SelectChains(Pass):
    name = "select-chains"
    description = "running max/min/argmax loops (compare-and-select chains) in lanes"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None:
                chains = match(op)
                width = _width(op, chains) if chains else None
                if chains and width:
                    rewrite(op, chains, width)


def _width(lp: loop.ForOp, chains: Sequence[Chain]) -> int | None:
    lo, hi = constant_of(lp.lower), constant_of(lp.upper)
    count = hi - lo if isinstance(lo, int) and isinstance(hi, int) else None
    if count is not None and count < LANES:
        return None  # too short to pay
    if any(ch.payloads for ch in chains) or (count is not None and count < WIDE_LANES):
        return LANES
    return WIDE_LANES


def _doubtful(lp: loop.ForOp, ch: Chain) -> bool:
    """Merged without ranks, a float result may be the wrong zero (or, for
    ``arith.max``/``min``, the wrong NaN)."""
    return not ch.payloads and lp.iter_args[ch.pos].type.is_float  # type: ignore[attr-defined]


def _doubt(gen: LoopGen, ch: Chain, v: Value) -> Value:
    """``i1``: the chain's laned result ``v`` may differ in bits from the loop's."""
    zero = gen.cmp("eq", v, gen.const(0.0, v.type))  # type: ignore[arg-type]
    if ch.combine is None:  # a select chain's result is NaN only as its NaN start
        return zero
    return gen.logical(arith.OrOp, zero, gen.emit(m.IsNanOp.new(v)))


def rewrite(lp: loop.ForOp, chains: Sequence[Chain], width: int) -> None:
    """Run ``lp``'s whole ``width``-chunks in lanes (module docstring)."""
    redo = lp.clone({}) if any(_doubtful(lp, ch) for ch in chains) else None
    gen = LoopGen(Builder.before(lp))
    lanes = _Lanes(gen, lp, chains, width)
    stop, merged = lanes.run()
    lp.set_operand(0, stop)
    for pos, v in merged.items():
        lp.set_operand(3 + pos, v)
    if redo is not None:
        gen.b = Builder.after(lp)
        _redo_zeros(gen, lp, [ch for ch in chains if _doubtful(lp, ch)], redo)
    gen.flush_constants_for(lp)


def _redo_zeros(gen: LoopGen, lp: loop.ForOp, chains: list[Chain], redo: loop.ForOp) -> None:
    """The results of ``redo`` (the original loop) instead of ``lp``'s when a doubtful
    chain's result is a zero."""
    outs = list(lp.outputs)
    uses = [(k, op, i) for k, v in enumerate(outs) for op, i in list(v.uses)]
    doubt = gen.const(False, i1)
    for ch in chains:
        doubt = gen.logical(arith.OrOp, doubt, _doubt(gen, ch, outs[ch.pos]))

    def again() -> list[Value]:
        gen.b.insert(redo)
        return list(redo.outputs)
    res = gen.if_(doubt, [v.type for v in outs], again, lambda: outs)
    for k, op, i in uses:
        op.set_operand(i, res[k])


class _Lanes:
    """The lane buffers of one loop's chains and payloads: fill, run, merge."""

    def __init__(self, gen: LoopGen, lp: loop.ForOp, chains: Sequence[Chain],
                 width: int) -> None:
        self.gen, self.lp, self.chains, self.width = gen, lp, chains, width
        w = gen.const(width)
        args = lp.iter_args
        self.bufs = {pos: gen.alloc((width,), args[pos].type, [w], name="lanes")  # type: ignore[arg-type]
                     for ch in chains for pos in (ch.pos, *ch.payloads)}
        self.ranks = {ch.pos: gen.alloc((width,), index, [w], name="ranks")
                      for ch in chains if ch.payloads}

    def run(self) -> tuple[Value, dict[int, Value]]:
        """Emit the lanes; the first iteration left to ``lp`` and its merged inits."""
        gen, lp = self.gen, self.lp
        w = gen.const(self.width)
        span = gen.sub(lp.upper, lp.lower)
        count = gen.emit(arith.MaxOp.new(span, gen.const(0))) \
            if constant_of(span) is None else gen.const(max(constant_of(span), 0))  # type: ignore[arg-type]
        stop = gen.add(lp.lower, gen.sub(count, gen.rem(count, w)))
        self._lane_loop(self.width, self._fill)
        gen.for_(lp.lower, stop, lambda jv, _: self._chunk(jv[0]), step=w, name="j")
        merged: dict[int, Value] = {}
        for ch in self.chains:
            merged.update(self._merge(ch))
        for buf in (*self.bufs.values(), *self.ranks.values()):
            gen.b.insert(mem.DeallocOp([buf]))
        return stop, merged

    def _lane_loop(self, width: int, body: Callable[[Value], None]) -> None:
        """``for k in range(width): body(k)``, marked as a lane loop (vectorized)."""
        gen = self.gen
        gen.for_(gen.const(0), gen.const(width), lambda kv, _: body(kv[0]) or [], name="k")
        gen.b.block.ops[gen.b.index - 1].attributes["lanes"] = width

    def _fill(self, k: Value) -> None:
        gen, inits = self.gen, self.lp.inits
        for pos, buf in self.bufs.items():
            gen.store(inits[pos], buf, [k])
        for buf in self.ranks.values():
            gen.store(gen.sub(self.lp.lower, gen.const(1)), buf, [k])

    def _chunk(self, j: Value) -> list[Value]:
        self._lane_loop(self.width, lambda k: self._step(j, k))
        return []

    def _step(self, j: Value, k: Value) -> None:
        """``lp``'s body at ``iv = j + k`` on lane ``k``'s values."""
        gen, lp = self.gen, self.lp
        iv = gen.add(j, k)
        mapping: dict[Value, Value] = {lp.induction_var: iv}
        for pos, arg in enumerate(lp.iter_args):
            mapping[arg] = gen.load(self.bufs[pos], [k])
        body = lp.body.block
        for op in body.ops[:-1]:
            gen.b.insert(op.clone(mapping))
        yielded = body.ops[-1].operand_values
        for pos, buf in self.bufs.items():
            gen.store(mapping.get(yielded[pos], yielded[pos]), buf, [k])
        for ch in self.chains:
            if ch.payloads and ch.cmp is not None:
                rank = gen.load(self.ranks[ch.pos], [k])
                took = mapping[ch.cmp.result]
                new = gen.select(took, iv, rank) if ch.on_true else gen.select(took, rank, iv)
                gen.store(new, self.ranks[ch.pos], [k])

    def _merge(self, ch: Chain) -> dict[int, Value]:
        """Fold the upper half of the lanes into the lower (lane loops) down to 16,
        then the 16 pairwise; returns the merged value of each carried position."""
        gen = self.gen
        slots = [ch.pos, *ch.payloads]
        bufs = [self.bufs[p] for p in slots] + ([self.ranks[ch.pos]] if ch.payloads else [])
        width = self.width
        while width > LANES:
            width //= 2
            half = gen.const(width)

            def fold(k: Value, half: Value = half) -> None:
                a = [gen.load(b, [k]) for b in bufs]
                b = [gen.load(buf, [gen.add(k, half)]) for buf in bufs]
                for buf, v in zip(bufs, self._better(ch, a, b), strict=True):
                    gen.store(v, buf, [k])
            self._lane_loop(width, fold)
        lanes = [[gen.load(b, [gen.const(k)]) for b in bufs] for k in range(width)]
        while len(lanes) > 1:
            lanes = [self._better(ch, lanes[k], lanes[k + 1]) for k in range(0, len(lanes), 2)]
        return dict(zip(slots, lanes[0], strict=False))

    def _better(self, ch: Chain, a: list[Value], b: list[Value]) -> list[Value]:
        """The lane of ``a`` and ``b`` the sequential loop would end on: the better value
        by the strict rule; equal values (payload chains) by rank, the earlier element
        for ``gt``/``lt``, the later for ``ge``/``le``."""
        gen = self.gen
        if ch.combine is not None:
            return [gen.emit(ch.combine.new(a[0], b[0]))]  # type: ignore[attr-defined]
        take = gen.cmp(STRICT[ch.take], b[0], a[0])
        if ch.payloads:
            order = gen.cmp("lt" if ch.first_wins else "gt", b[-1], a[-1])
            tie = gen.logical(arith.AndOp, gen.cmp("eq", b[0], a[0]), order)
            take = gen.logical(arith.OrOp, take, tie)
        return [gen.select(take, y, x) for x, y in zip(a, b, strict=True)]


__all__ = ["LANES", "WIDE_LANES", "SelectChains", "rewrite"]

