"""Accumulators of the reductions inside fused groups (``lower_group_reduce``,
``lower_group_windows``): per-reduction element conversion, combine and identity, the
compensated (Kahan-Babuska-Neumaier) step and the pairwise combination of lanes.

Float sums and float ``max``/``min`` are *laned*: ``LANES`` accumulators updated by a
unit-stride loop that LLVM vectorizes (a loop-carried NaN-propagating select chain is
never vectorized).  ``max``/``min`` are exact whatever the order except for which of
``-0.0``/``0.0`` or which NaN comes out; ``lower_group_reduce`` recomputes those rows
in source order (``Acc.doubtful``)."""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.passes.lower_group_base import Evaluator, Index
from pyasc.ir.passes.lower_reduce import REDUCTIONS, accumulator_type, identity
from pyasc.ir.types import ScalarType, TensorType, element_type, i1

LANES = 16
BLOCK = 8 * LANES
ORDER_FREE_LANES = 64
"""Lanes of a row reduced by ``max``/``min`` only: their result does not depend on the
order (``Acc.doubtful`` rows aside), so 64 lanes, four 512-bit vector accumulators, break
the loop-carried chain of NaN-propagating selects that one vector of 16 lanes is."""

KINDS = REDUCTIONS  # lower_reduce's table: op -> (combine, on i1, identity, numpy name)


class Acc:
    """The accumulator of one reduction: element conversion, combine, identity."""

    def __init__(self, ev: Evaluator, op: Operation, in_place: bool = False) -> None:
        self.ev, self.gen, self.op = ev, ev.gen, op
        combine, on_bool, self.ident, _ = KINDS[type(op)]
        self.elem = element_type(op.operand_values[0].type)
        self.truth = isinstance(op, tensor.AnyOp)  # AllOp derives from AnyOp
        self.acc_t: ScalarType = i1 if self.truth else \
            accumulator_type(op, self.elem, in_place)
        acc_t = self.acc_t
        self.cls = on_bool if acc_t.is_bool else combine
        self.compensated = self.cls is arith.AddOp and acc_t.is_float
        self.laned = self.compensated or (self.cls in (arith.MaxOp, arith.MinOp)
                                          and acc_t.is_float)

    def element(self, idx: Index) -> Value:
        x = self.ev.at(self.op.operand_values[0], idx)
        if self.truth and not self.elem.is_bool:
            return self.gen.cmp("ne", x, identity(self.gen, "zero", self.elem))
        return self.gen.cast(x, self.acc_t)

    def combine(self, a: Value, b: Value) -> Value:
        return self.gen.emit(self.cls.new(a, b))  # type: ignore[attr-defined]

    def lane_add(self, lane: Value, x: Value) -> Value:
        """``lane (op) x`` in a lane loop; sums are marked ``strict``: with
        ``fastmath=True`` LLVM would otherwise reassociate the lanes and vectorize across
        blocks with gathers (slower than the strict lane loop, which already runs whole
        vectors)."""
        op = self.cls.new(lane, x)  # type: ignore[attr-defined]
        if self.compensated:
            op.attributes["strict"] = True
        return self.gen.emit(op)

    def zero(self) -> Value:
        return identity(self.gen, self.ident, self.acc_t)

    def state(self) -> list[Value]:
        """Initial state: ``[s, c]`` (compensated) or ``[acc]``."""
        return [self.zero(), self.zero()] if self.compensated else [self.zero()]

    def absorb(self, state: list[Value], x: Value) -> list[Value]:
        """Add a partial result ``x`` (of lanes) to the state."""
        if self.compensated:
            return neumaier(self.gen, state[0], state[1], x)
        if self.laned:
            return [self.combine(state[0], x)]
        return [x]

    def doubtful(self, value: Value) -> Value | None:
        """For laned ``max``/``min``: ``i1`` true when ``value`` (the laned result) may
        differ in bits from the source-order result, i.e. it is ``±0.0`` (which zero
        wins depends on the order, ``arith.first_wins_ties``) or NaN (which payload);
        ``None`` for the other accumulators, whose lanes are exact or compensated."""
        if not self.laned or self.compensated:
            return None
        gen = self.gen
        zero = gen.cmp("eq", value, identity(gen, "zero", self.acc_t))
        return gen.logical(arith.OrOp, zero, gen.emit(m.IsNanOp.new(value)))

    @classmethod
    def float_sum(cls, gen: LoopGen, acc_t: ScalarType) -> Acc:
        """A compensated float sum with no tensor op behind it (``sum_lanes``: a user
        loop's ``s += e``): its elements come from the caller, its result is
        :func:`compensated_result` of its state."""
        acc = cls.__new__(cls)
        acc.gen, acc.elem, acc.acc_t, acc.truth = gen, acc_t, acc_t, False
        # lanes and chunks start at -0.0: a lane (a block, a chunk) of negative zeros
        # only is then -0.0, so a loop from s = -0.0 over them keeps -0.0 as Python's
        # does; every other sum has the bits it has from +0.0
        acc.cls, acc.ident, acc.compensated, acc.laned = arith.AddOp, "negzero", True, True
        return acc

    def final(self, state: list[Value]) -> Value:
        v = compensated_result(self.gen, *state) if self.compensated else state[0]
        t = self.op.result.type
        return self.gen.cast(v, t.element if isinstance(t, TensorType) else t)


def neumaier(gen: LoopGen, s: Value, c: Value, x: Value) -> list[Value]:
    """One compensated step: ``s + x`` with its rounding error added to ``c``."""
    t = gen.emit(arith.AddOp.new(s, x))
    big = gen.cmp("ge", gen.emit(m.AbsOp.new(s)), gen.emit(m.AbsOp.new(x)))
    lost_x = gen.emit(arith.AddOp.new(gen.emit(arith.SubOp.new(s, t)), x))
    lost_s = gen.emit(arith.AddOp.new(gen.emit(arith.SubOp.new(x, t)), s))
    return [t, gen.emit(arith.AddOp.new(c, gen.select(big, lost_x, lost_s)))]


def compensated_result(gen: LoopGen, s: Value, c: Value) -> Value:
    """The value of a compensated state ``(s, c)``: ``s + c``, or ``s`` when ``s`` is not
    finite (the compensation of an infinite sum is NaN)."""
    fixed = gen.emit(arith.AddOp.new(s, c))
    return gen.select(gen.emit(m.IsFiniteOp.new(s)), fixed, s)


def pairwise(acc: Acc, values: Sequence[Value]) -> Value:
    """Neighbours combined level by level (an odd last value moves up unchanged)."""
    vals = list(values)
    while len(vals) > 1:
        vals = [acc.combine(vals[k], vals[k + 1]) if k + 1 < len(vals) else vals[k]
                for k in range(0, len(vals), 2)]
    return vals[0]
