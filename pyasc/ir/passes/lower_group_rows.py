"""Row schedule of ``reduction`` and ``rowwise`` groups (the last axis reduced).

One loop nest over the kept axes (the *rows*, outermost loop ``parallel``); inside it,
per row:

1. members constant along the reduced axes (a per-row input, a scale) are computed;
2. one pass per reduction *phase* (``lower_group_reduce``): phase 0 holds the
   reductions of reduction-free sources, phase ``p`` those whose source needs a phase
   ``< p`` result (softmax: ``max``, then ``sum(exp(x - max))``; layernorm: the mean,
   then the variance).  Domain-shaped outputs that need no reduction are stored during
   phase 0; row-level values needed later are computed after the phase they need;
3. row-shaped outputs are stored, then one pass over the row computes the
   domain-shaped outputs that need the reductions (``rowwise``).

Recompute-or-keep rule: a domain-shaped value computed in one pass and needed again
in a later pass is recomputed there, unless computing it costs at least
:data:`STASH_FLOPS` per element (a transcendental: softmax's ``exp(x - max)``).  The
most expensive such value (one per group) is written where it is first computed and
read back later:

* into the group's own output row when an output of the same element type is written
  in the final pass and every later use of the value reads it at the index being
  written (softmax stores ``exp(x - max)`` in its output row, then divides in place);
  the row loop stays ``parallel``;
* otherwise into ONE row buffer of the reduced extent, allocated once per call before
  the row loop (never per row) and freed after it; the row loop is then not marked
  ``parallel``, since all rows share the buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.passes.bufferize import Lowerer
from pyasc.ir.passes.fusion_rules import op_cost, role_of
from pyasc.ir.passes.fusion_schedule import Schedule, reductions
from pyasc.ir.passes.lower_group_eval import GroupEval, Index, nest, same_dims
from pyasc.ir.passes.lower_group_reduce import reduce_phase
from pyasc.ir.types import TensorType

STASH_FLOPS = 8


@dataclass
class _Stash:
    value: Value
    writer: int
    buffer: Value
    index: Callable[[Index], list[Value]]
    in_output: bool


class _Rows:
    """The analysis of one row-scheduled group and its emission."""

    def __init__(self, ev: GroupEval, sched: Schedule, outs: Outputs) -> None:
        self.ev, self.outs, self.axes = ev, outs, sched.axes
        self.reds = reductions(ev.ops)
        self.dom = ev.dims(self.reds[0].operand_values[0])
        self.kept_axes = [a for a in range(len(self.dom)) if a not in self.axes]
        self.phases = self._phases()
        dep = ev.dependent
        element = [y for y in outs.tensors() if same_dims(ev.dims(y), self.dom)]
        self.early = [y for y in element if y not in dep]
        self.late = [y for y in element if y in dep]
        keep = [ev.gen.const(1) if a in self.axes else d for a, d in enumerate(self.dom)]
        drop = [self.dom[a] for a in self.kept_axes]
        self.row_outs = [(y, same_dims(ev.dims(y), keep)) for y in outs.tensors()
                         if y not in element and (same_dims(ev.dims(y), keep)
                                                  or same_dims(ev.dims(y), drop))]
        self.stash = self._plan_stash()

    # -- analysis
    def _phases(self) -> list[list[Operation]]:
        needs = self._reduction_needs()
        phase: dict[Operation, int] = {}
        for r in self.reds:  # body order: a reduction's needs come before it
            phase[r] = 1 + max((phase[q] for q in needs.get(r.operand_values[0], ())),
                               default=-1)
        return [[r for r in self.reds if phase[r] == p] for p in range(max(phase.values()) + 1)]

    def _reduction_needs(self) -> dict[Value, set[Operation]]:
        """Per body value, the reductions it is computed from."""
        needs: dict[Value, set[Operation]] = {}
        for op in self.ev.ops:
            got: set[Operation] = {op} if role_of(op) == "reduce" else set()
            for v in op.operand_values:
                got |= needs.get(v, set())
            for r in op.result_values:
                needs[r] = got
        return needs

    def _element_level(self, v: Value) -> bool:
        return same_dims(self.ev.dims(v), self.dom) and role_of(v.op) != "reduce"

    def _pass_values(self, roots: Sequence[Value]) -> set[Value]:
        """Domain-shaped values one pass computes for ``roots``: the walk back stops at
        reductions and row-level values, which earlier passes computed."""
        found: set[Value] = set()
        work = [v for v in roots if isinstance(v, OpResult) and self._element_level(v)]
        while work:
            v = work.pop()
            if v in found:
                continue
            found.add(v)
            work += [u for u in v.op.operand_values
                     if isinstance(u, OpResult) and self._element_level(u)]
        return found

    def _plan_stash(self) -> _Stash | None:
        passes = [self._pass_values([r.operand_values[0] for r in ph]) for ph in self.phases]
        if self.late:
            passes.append(self._pass_values(self.late))
        cost: dict[Value, int] = {}
        best: tuple[int, Value, int] | None = None
        for op in self.ev.ops:
            for v in op.result_values:
                if not self._element_level(v):
                    continue
                cost[v] = op_cost(op) + sum(cost.get(u, 0) for u in op.operand_values)
                where = [k for k, vals in enumerate(passes) if v in vals]
                if len(where) >= 2 and cost[v] >= STASH_FLOPS and (
                        best is None or cost[v] > best[0]):
                    best = (cost[v], v, where[0])
        return None if best is None else self._place(best[1], best[2])

    def _place(self, v: Value, writer: int) -> _Stash:
        ev = self.ev
        users_ok = all(self._identity_use(u) for u, _ in v.uses)
        for y in self.late:
            if users_ok and y.type.element == v.type.element:
                return _Stash(v, writer, self.outs.buffers[y], list, True)
        inner = [self.dom[a] for a in self.axes]
        buf = ev.gen.alloc(tuple(v.type.shape[a] for a in self.axes), v.type.element, inner,
                           "row")
        return _Stash(v, writer, buf, lambda idx: [idx[a] for a in self.axes], False)

    def _identity_use(self, user: Operation) -> bool:
        """True if ``user`` reads its operands at its own (domain) index."""
        if role_of(user) == "reduce" or user.name == "fusion.yield":
            return True
        return role_of(user) == "elementwise" and all(
            isinstance(r.type, TensorType) and same_dims(self.ev.dims(r), self.dom)
            for r in user.result_values)

    # -- emission
    def emit(self) -> None:
        parallel = self.stash is None or self.stash.in_output
        nest(self.ev.gen, [self.dom[a] for a in self.kept_axes], self._row,
             parallel=parallel)
        self.outs.done.update(self.early + self.late + [y for y, _ in self.row_outs])

    def _row(self, kept: list[Value]) -> None:
        ev, gen = self.ev, self.ev.gen
        bound = dict(zip(self.kept_axes, kept, strict=True))
        self._row_values(bound, set())
        done: set[Operation] = set()
        for p, phase in enumerate(self.phases):
            writes = (p == 0 and self.early) or (self.stash is not None
                                                 and p == self.stash.writer)
            reduce_phase(ev, phase, kept,
                         (lambda idx, p=p: self._on_element(p, idx)) if writes else None)
            if self.stash is not None and p == self.stash.writer:
                st = self.stash
                ev.loaders[st.value] = lambda idx, st=st: gen.load(st.buffer, st.index(idx))
            done.update(phase)
            self._row_values(bound, done)
        for y, keepdims in self.row_outs:
            ki = iter(kept)
            idx = [gen.const(0) if a in self.axes else next(ki)
                   for a in range(len(self.dom))] if keepdims else kept
            gen.store(ev.at(y, idx), self.outs.buffers[y], idx)
        if self.late:
            nest(gen, [self.dom[a] for a in self.axes],
                 lambda inner: self.outs.store_all(self.late, self._merge(kept, inner)),
                 prefix="j")
        for y in ev.outputs if not self.kept_axes else ():  # else computed before the rows
            if not isinstance(y.type, TensorType):
                self.outs.scalars[y] = ev.at(y, [])
        if self.stash is not None:
            ev.loaders.pop(self.stash.value, None)

    def _merge(self, kept: list[Value], inner: list[Value]) -> list[Value]:
        ki, ri = iter(kept), iter(inner)
        return [next(ri) if a in self.axes else next(ki) for a in range(len(self.dom))]

    def _on_element(self, phase: int, idx: Index) -> None:
        if phase == 0 and self.early:
            self.outs.store_all(self.early, idx)
        st = self.stash
        if st is not None and phase == st.writer:
            self.ev.gen.store(self.ev.at(st.value, idx), st.buffer, st.index(idx))

    def _row_values(self, bound: dict[int, Value], done: set[Operation]) -> None:
        """Row-level members whose reductions are all computed, evaluated once per row."""
        ev = self.ev
        needs = self._reduction_needs()
        for op in ev.ops:
            for v in op.result_values:
                if isinstance(v.type, TensorType) and role_of(op) != "reduce" and \
                        needs[v] <= done and (not done or needs[v]):
                    idx = ev.canonical(v, self.dom, bound)
                    if idx is not None and not same_dims(ev.dims(v), self.dom):
                        ev.at(v, idx)


def rows(ev: GroupEval, sched: Schedule, outs: Outputs) -> None:
    """Emit the row schedule of a ``reduction``/``rowwise`` group (module docstring)."""
    _Rows(ev, sched, outs).emit()


class Outputs:
    """The group's results: a fresh buffer per tensor output, values for scalars."""

    def __init__(self, cx: Lowerer, ev: GroupEval, into: Value | None = None) -> None:
        self.ev = ev
        self.values = list(ev.outputs)
        self.buffers: dict[Value, Value] = {}
        self.scalars: dict[Value, Value] = {}
        for y in dict.fromkeys(self.values):
            if into is not None:  # the single output, stored into the written buffer
                self.buffers[y] = into
            elif isinstance(y.type, TensorType):
                self.buffers[y] = cx.alloc(y.type, ev.dims(y), y.name_hint)
        self.done: set[Value] = set()

    def tensors(self) -> list[Value]:
        return [y for y in self.buffers if y not in self.done]

    def store_all(self, ys: Sequence[Value], idx: Index) -> None:
        """Compute every ``y[idx]`` first, then store them (a stashed row is read before
        an output overwrites it)."""
        vals = [self.ev.at(y, idx) for y in ys]
        for y, v in zip(ys, vals, strict=True):
            self.ev.gen.store(v, self.buffers[y], idx)

    def results(self) -> list[Value]:
        return [self.buffers[y] if y in self.buffers else self.scalars[y]
                for y in self.values]

    def finish(self) -> None:
        """Outputs no schedule stored (their sizes are not provably the schedule's):
        one nest each, correct for any body; then the scalar outputs."""
        for y in self.tensors():
            dims = self.ev.dims(y)
            nest(self.ev.gen, dims, lambda ivs, y=y: self.store_all([y], ivs), parallel=True)
        for y in self.values:
            if y not in self.buffers and y not in self.scalars:
                self.scalars[y] = self.ev.at(y, [])
