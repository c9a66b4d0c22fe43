"""The long-rows schedule: row reductions over a last axis longer than one UB tile.

A ``rows`` group whose row does not fit the Unified Buffer streams each row through UB
in column tiles (``TILE`` elements, the tail shorter) instead, one row at a time.  The
group's dependence graph fixes how many times the row is streamed:

* every value gets a *level*: the pass after which it is known.  Inputs and scalars are
  level 0; an elementwise op takes the highest level of its operands; a row reduction
  of a value of level ``L`` is computed by pass ``L + 1`` (it needs all of its
  operand's column values, which pass ``L`` finished).  LayerNorm: the mean is level 1,
  the variance (a reduction of ``x - mean``) level 2.
* pass ``p`` streams the column tiles computing the full values the reductions of level
  ``p`` need (recomputed from the inputs: nothing full survives a tile) and folds each
  tile's partial result into a per-row accumulator (``Add``/``Max``/``Min``; half sums
  accumulate in float32).  After the pass the accumulators are the reductions' values
  and the column ops of level ``p`` run once per row.
* a last pass streams the tiles again computing the full outputs.

*Online softmax*: a sum of ``exp(u - M)`` where ``M`` is the row maximum of ``u`` is
computed in ``M``'s own pass: each tile's maximum updates the running one
(``m_new = max(m, tile max)``), the tile's exponentials use ``m_new`` and the running
sum is rescaled by ``exp(m - m_new)`` first.  softmax and logsumexp then read their row
twice (statistics, output) and once, instead of three and two times.

The lowering records its instructions in one :class:`TileProgram` split into
:class:`Stage` s (``row``: once per row; ``chunk``: once per column tile), so the
physical buffer assignment sees one linear program (loops extend the lifetimes of the
values they carry, ``vec_alloc.assign``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.backend.ascendc.analysis import (
    COL,
    FULL,
    ROW,
    SCALAR,
    GroupInfo,
    NotVectorizable,
    body_ops,
)
from pyasc.backend.ascendc.tiles import Instr, Ref
from pyasc.backend.ascendc.vec_arith import cast_value
from pyasc.backend.ascendc.vec_lower import VecLowering, VVal, reduce_identity
from pyasc.ir.core import BlockArgument, Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.types import ScalarType, element_type, f32

CHUNK_CLASSES = (FULL, ROW)   # values that exist per column tile
_KIND = {tensor.SumOp: "sum", tensor.ReduceMaxOp: "max", tensor.ReduceMinOp: "min"}
_REDUCE = {tensor.SumOp: ("ReduceSum", "Add", 0.0),
           tensor.ReduceMaxOp: ("ReduceMax", "Max", -math.inf),
           tensor.ReduceMinOp: ("ReduceMin", "Min", math.inf)}


@dataclass
class Stage:
    """A run of instructions ``prog.instrs[start:end]`` executed once per row (``row``)
    or once per column tile (``chunk``); ``final`` marks the tile pass that writes the
    full outputs."""

    kind: str
    start: int
    end: int = -1
    final: bool = False


@dataclass
class LongPlan:
    """The stages of a long-rows kernel and how many reduction passes it makes."""

    stages: list[Stage] = field(default_factory=list)
    passes: int = 0
    online: int = 0   # sums folded into their maximum's pass (online softmax)

    @property
    def reads(self) -> int:
        """How many times each row of the inputs is streamed from GM (at most)."""
        return sum(1 for s in self.stages if s.kind == "chunk")

    def loops(self) -> list[tuple[int, int]]:
        """Instruction ranges that run in a loop over column tiles."""
        return [(s.start, s.end) for s in self.stages if s.kind == "chunk"]


def online_partner(op: Operation, info: GroupInfo) -> Operation | None:
    """The row maximum ``M`` when ``op`` is ``sum(exp(u - M))`` with ``M = max(u)``
    (``M`` possibly broadcast): that sum can follow ``M``'s running value."""
    if not isinstance(op, tensor.SumOp):
        return None
    e = op.operand_values[0]
    if not (hasattr(e, "op") and isinstance(e.op, m.ExpOp)):
        return None
    d = e.op.operand_values[0]
    if not (hasattr(d, "op") and isinstance(d.op, arith.SubOp)):
        return None
    u, mv = d.op.operand_values
    while hasattr(mv, "op") and isinstance(mv.op, tensor.BroadcastOp):
        mv = mv.op.operand_values[0]
    red = getattr(mv, "op", None)
    if isinstance(red, tensor.ReduceMaxOp) and red in info.row_reductions and \
            red.operand_values[0] is u:
        return red
    return None


def plan_levels(ops: list[Operation], info: GroupInfo, reductions: set[Operation] | None = None
                ) -> tuple[dict[Value, int], dict[Operation, int], dict[Operation, Operation]]:
    """Levels of the values, the pass of each streamed reduction (``reductions``, the
    row reductions by default), and the online sums (``{sum op: its max op}``)."""
    reductions = info.row_reductions if reductions is None else reductions
    level: dict[Value, int] = {}
    passes: dict[Operation, int] = {}
    online: dict[Operation, Operation] = {}
    for op in ops:
        operands = [level.get(v, 0) for v in op.operand_values]
        if op in reductions:
            partner = online_partner(op, info)
            if partner is not None:
                online[op] = partner
                n = passes[partner]
            else:
                n = operands[0] + 1
            passes[op] = n
        else:
            n = max(operands, default=0)
        for r in op.result_values:
            level[r] = n
    return level, passes, online


class LongLowering(VecLowering):
    """Lowers a ``rows`` group to the stages of the long-rows schedule.

    The class attributes name what is streamed and what is kept: ``chunk_classes``
    exist per tile, ``line_class`` values once per streamed line (here a row; the
    ``cols`` schedule, ``vec_cols``, keeps a block's column range instead)."""

    chunk_classes: tuple[str, ...] = CHUNK_CLASSES
    line_class: str = COL
    fold_api_class: str = "reduce"   # the dtype class of the per-tile reduction

    def streamed_reductions(self) -> set[Operation]:
        """The reductions folded over the tiles of a line."""
        return self.info.row_reductions

    def run_long(self, outputs: Callable[[str], list]) -> tuple[LongPlan, list]:
        """Lower every stage; ``outputs(cls)`` is called when the results of class
        ``cls`` are final (``COL`` after the last pass, ``FULL`` in the output pass)
        and returns their descriptions, which are returned in that order."""
        ops = body_ops(self.group)
        level, passes, online = plan_levels(ops, self.info, self.streamed_reductions())
        self.plan = LongPlan(passes=max(passes.values(), default=0), online=len(online))
        self.accs: dict[Operation, VVal] = {}
        for arg in self.group.body.blocks[0].args:
            self.vals[arg] = self._input(arg)
        self._open("row")
        for op in ops:  # scalar set-up (C++ expressions) and the level-0 column ops
            if self._cls(op) == SCALAR and op not in passes:
                self._lower(op)
        self._col_ops(ops, level, passes, 0)
        for p in range(1, self.plan.passes + 1):
            reds = [op for op in ops if passes.get(op) == p]
            self._init_accs(reds)
            self._open("chunk")
            self._chunk_pass(ops, reds, online)
            self._open("row")
            self._finalize(reds)
            self._col_ops(ops, level, passes, p)
        found = list(outputs(self.line_class))
        self._output_pass(ops)
        found += list(outputs(FULL))
        self._open("")
        return self.plan, found

    def _output_pass(self, ops: list[Operation]) -> None:
        """The tile pass computing the full results (none: no pass)."""
        term = self.group.body.blocks[0].terminator
        assert term is not None
        targets = [v for v in term.operand_values
                   if not isinstance(v, BlockArgument) and self.info.classes[v] == FULL]
        if not targets:
            return
        self._open("chunk", final=True)
        self._forget_chunk_values(ops)
        needed = self._needed(targets)
        for op in ops:
            if op in needed:
                self._lower(op)

    # ---------------------------------------------------------------- stages
    def _open(self, kind: str, final: bool = False) -> None:
        """Close the current stage and (unless ``kind`` is empty) start another."""
        stages = self.plan.stages
        if stages:
            stages[-1].end = len(self.prog.instrs)
        if kind:
            stages.append(Stage(kind, len(self.prog.instrs), final=final))

    def _cls(self, op: Operation) -> str:
        return self.info.classes[op.result_values[0]] if op.result_values else SCALAR

    def _lower(self, op: Operation) -> None:
        self.loc = op.loc
        fn = self.rules.get(type(op))
        if fn is None:
            raise NotVectorizable(f"'{op.name}' has no vector lowering", op.loc)
        fn(self, op)

    def _col_ops(self, ops: list[Operation], level: dict[Value, int],
                 passes: dict[Operation, int], p: int) -> None:
        """The per-row ops (column values) that pass ``p`` made computable."""
        for op in ops:
            if op not in passes and self._cls(op) == self.line_class and level[op.result] == p:
                self._lower(op)

    def _forget_chunk_values(self, ops: list[Operation]) -> None:
        """Full values of an earlier tile pass do not exist in this one: recompute."""
        for op in ops:
            if self._cls(op) in self.chunk_classes:
                for r in op.result_values:
                    self.vals.pop(r, None)

    def _needed(self, targets: list[Value]) -> set[Operation]:
        """The per-tile ops computing ``targets`` from inputs and column values."""
        needed: set[Operation] = set()
        todo = list(targets)
        while todo:
            v = todo.pop()
            op = getattr(v, "op", None)
            if isinstance(v, BlockArgument) or op is None or op in needed or \
                    self.info.classes.get(v) not in self.chunk_classes or \
                    op in self.streamed_reductions():
                continue
            needed.add(op)
            todo.extend(op.operand_values)
        return needed

    # ---------------------------------------------------------------- reductions
    def _acc_type(self, op: Operation) -> ScalarType:
        t = element_type(op.operand_values[0].type)
        return f32 if isinstance(op, tensor.SumOp) and t.name == "f16" else t

    def _init_accs(self, reds: list[Operation]) -> None:
        for op in reds:
            self.loc = op.loc
            self.require(self.fold_api_class, element_type(op.operand_values[0].type),
                         op.name)
            acc = self.new_vec(self.line_class, self._acc_type(op),
                               (op.result.name_hint or "red") + "Acc")
            start = reduce_identity(_KIND[type(op)], acc.dtype)
            self.duplicate(acc, self.literal(start, acc.dtype))
            self.accs[op] = acc

    def _chunk_pass(self, ops: list[Operation], reds: list[Operation],
                    online: dict[Operation, Operation]) -> None:
        self._forget_chunk_values(ops)
        needed = self._needed([op.operand_values[0] for op in reds])
        running: dict[Operation, VVal] = {}   # max op -> its tile's new running max
        scales: dict[Operation, VVal] = {}    # max op -> exp(m - m_new) in float32
        partners = set(online.values())
        for op in ops:
            if op in needed:
                self._lower(op)
            elif op in reds:
                self.loc = op.loc
                acc = self.accs[op]
                if op not in partners and op not in online:
                    self._fold(op, acc)
                    continue
                part = self._tile_reduce(op)
                if op in partners:
                    m_new = self.new_vec(COL, acc.dtype, "mNew")
                    self.call("Max", m_new, [acc, part])
                    running[op] = m_new
                    self.set(op.result, m_new)  # the pass's exponentials use m_new
                elif op in online:
                    mx = online[op]
                    if mx not in scales:
                        scales[mx] = self._rescale(self.accs[mx], running[mx])
                    self.call("Mul", acc, [acc, scales[mx]])
                    self.call("Add", acc, [acc, part])
        for mx, m_new in running.items():  # the running max moves on last
            self.call("Max", self.accs[mx], [self.accs[mx], m_new])

    def _fold(self, op: Operation, acc: VVal) -> None:
        """Fold this tile's part of reduction ``op`` into its accumulator."""
        self.call(_REDUCE[type(op)][1], acc, [acc, self._tile_reduce(op)])

    def _tile_reduce(self, op: Operation) -> VVal:
        """The reduction of this tile's part of the row, in the accumulator's type."""
        x = self.get(op.operand_values[0])
        api = _REDUCE[type(op)][0]
        src = x if x.dtype == self._acc_type(op) else cast_value(self, x, self._acc_type(op))
        part = self.new_vec(COL, src.dtype, "part")
        assert part.buf is not None and src.buf is not None
        self.prog.reduce_tmp_types.add(src.dtype.name)
        self.prog.emit(Instr(api, Ref(part.buf, True), (Ref(src.buf, True),
                                                        f"reduceTmp_{src.dtype.name}"), (),
                             "cols", True, op.loc))
        return part

    def _rescale(self, m_run: VVal, m_new: VVal) -> VVal:
        """``exp(m_run - m_new)`` in float32: the factor an online sum is rescaled by."""
        d = self.new_vec(COL, m_run.dtype, "shift")
        self.call("Sub", d, [m_run, m_new])
        if d.dtype != f32:
            d = cast_value(self, d, f32)
        scale = self.new_vec(COL, f32, "rescale")
        self.call("Exp", scale, [d])
        return scale

    def _finalize(self, reds: list[Operation]) -> None:
        for op in reds:
            self.loc = op.loc
            acc = self.accs[op]
            t = element_type(op.result.type)
            self.set(op.result, acc if acc.dtype == t else cast_value(self, acc, t))


__all__ = ["LongLowering", "LongPlan", "Stage", "online_partner", "plan_levels"]
