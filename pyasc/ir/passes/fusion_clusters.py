"""The fusion pass's clusters: union of ops, with the acyclicity and schedule checks.

A cluster is a :class:`~pyasc.ir.passes.fusion_summary.Part`; checking a merge costs
the size of the smaller parts, not of the union (``fusion_summary``), and so does the
acyclicity check: a path that leaves the union and comes back must leave one part and
enter another (the clusters' graph is acyclic before every merge), so it is searched
forwards from the smaller parts' outputs and backwards from their inputs only.  A
search stops at ops after the union's last op (forwards) or before its first op
(backwards): edges go forward in the block.

Positions are the block's order keys (``pyasc.ir.order``), valid across the copies the
pass inserts.  ``CHECK_FULL`` (tests) compares every answer with the from-scratch
analysis (``fusion_schedule.analyze`` and a search from every op of the union).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.passes.fusion_rules import MAX_GROUP_OPS
from pyasc.ir.passes.fusion_schedule import MAX_CHAINED_REDUCTIONS, Schedule, analyze
from pyasc.ir.passes.fusion_shapes import ShapeSyms
from pyasc.ir.passes.fusion_summary import Part, Union, reads

CHECK_FULL = False
"""Compare every incremental answer with the from-scratch one (slow; tests set it)."""

_MOVABLE = frozenset({"pure", "view", "constant"})

def _possible(parts: Sequence[Part]) -> bool:
    """Cheap necessary conditions of a union (O(1) per part): the parts are sound, their
    reductions have one signature and not too many of them are chained."""
    sigs = {p.sig for p in parts if p.sig is not None}
    return all(p.ok for p in parts) and len(sigs) <= 1 and \
        sum(len(p.chained) for p in parts) <= MAX_CHAINED_REDUCTIONS


class Clusters:
    """Clusters of the fusible ops of one block."""

    def __init__(self, block: Block, syms: ShapeSyms) -> None:
        self.block, self.syms = block, syms
        self._of: dict[Operation, Part] = {}
        self._parts: dict[int, Part] = {}
        self._count = 0
        # ops with effects keep their order; fusible ops are all movable, so this chain
        # never changes while clustering
        effects = [o for o in block.ops if not o.traits & _MOVABLE]
        self._next_effect = dict(zip(effects, effects[1:], strict=False))
        self._prev_effect = dict(zip(effects[1:], effects, strict=False))

    # -- bookkeeping
    def add(self, op: Operation, new: bool = False) -> int:
        """A new cluster holding ``op`` alone; returns its id.  ``new``: ``op`` was
        just made (a copy), so its reads are uses the producers' parts must count."""
        self._count += 1
        part = Part(self._count, op, self.block, self.syms)
        self._of[op] = part
        self._parts[self._count] = part
        if new:
            self._count_reads(op, part, 1)
        return self._count

    def drop(self, op: Operation) -> None:
        """Take ``op`` out of its cluster (before erasing it)."""
        part = self._of.pop(op)
        self._count_reads(op, part, -1)
        if len(part) == 1:
            del self._parts[part.cid]
        else:
            part.remove(op, self.syms, self._owner)

    def _count_reads(self, op: Operation, part: Part, k: int) -> None:
        for v, _, _ in reads(op):
            owner = self._owner(v)
            if owner is not None and owner is not part:
                owner.count_outputs(v, k, self.syms)

    def _owner(self, v: Value) -> Part | None:
        """The part defining ``v`` (``None`` for values defined by no member)."""
        if isinstance(v, OpResult) and v.op.parent is self.block:
            return self._of.get(v.op)
        return None

    def cid(self, op: Operation | None) -> int | None:
        """The cluster id of ``op`` (``None`` if it is in none)."""
        part = self._of.get(op) if op is not None else None  # type: ignore[arg-type]
        return part.cid if part is not None else None

    def alive(self, cid: int) -> bool:
        return cid in self._parts

    def members(self, cid: int) -> list[Operation]:
        return list(self._parts[cid].members)

    def heavy(self, cid: int) -> bool:
        """True unless every member is a view or a scalar."""
        return self._parts[cid].heavy > 0

    @staticmethod
    def pos(op: Operation) -> int:
        return op.order_key

    def users(self, op: Operation) -> list[Operation]:
        """Ops of the block using a result of ``op`` (ancestors of nested uses)."""
        found: dict[Operation, None] = {}
        for r in op.result_values:
            for user, _ in r.uses:
                anc = self.block.ancestor_of(user)
                if anc is not None:
                    found[anc] = None
        return sorted(found, key=self.pos)

    def successors(self, op: Operation) -> Iterable[Operation]:
        yield from self.users(op)
        nxt = self._next_effect.get(op)
        if nxt is not None:
            yield nxt

    def redirect(self, old: Operation, new: Operation,
                 uses: Sequence[tuple[Operation, int]]) -> None:
        """Make ``uses`` (of ``old``'s results) read the same results of ``new``, and
        count the moved uses in the inputs and outputs of the clusters involved."""
        old_part, new_part = self._of.get(old), self._of.get(new)
        for user, idx in uses:
            value = user.operand_values[idx]
            moved = new.result_values[old.result_values.index(value)]
            user.set_operand(idx, moved)
            reader = self._of.get(self.block.ancestor_of(user))  # type: ignore[arg-type]
            if reader is not None and reader is not old_part:
                reader.count_inputs(value, -1)
            if reader is not None and reader is not new_part:
                reader.count_inputs(moved, 1)
            if old_part is not None and old_part is not reader:
                old_part.count_outputs(value, -1, self.syms)
            if new_part is not None and new_part is not reader:
                new_part.count_outputs(moved, 1, self.syms)

    # -- checks
    def schedule(self, cid: int) -> Schedule | None:
        """The schedule of cluster ``cid`` (``fusion_schedule.analyze`` of its ops)."""
        part = self._parts[cid]
        if part.stale:
            union = Union([part], self.block, self.syms, self._of.get)  # type: ignore
            part.sched, part.checked, part.stale = union.sched, union.key, False
            if CHECK_FULL:
                self._check_schedule([part], union.sched)
        return part.sched

    def outputs(self, ops: Sequence[Operation]) -> list[Value]:
        """Results of ``ops`` used outside them, in program order."""
        inside = set(ops)
        return [r for op in ops for r in op.result_values
                if any(self.block.ancestor_of(u) not in inside for u, _ in r.uses)]

    def merge(self, cids: Sequence[int]) -> bool:
        """Merge clusters ``cids`` (named ``cids[0]``) if the result is acyclic and one
        schedule."""
        cids = list(dict.fromkeys(cids))
        if len(cids) < 2:
            return True
        parts = [self._parts[c] for c in cids]
        if sum(p.work for p in parts) > MAX_GROUP_OPS:
            return False  # a policy, not a schedule property: not compared (CHECK_FULL)
        if not _possible(parts):
            if CHECK_FULL:
                self._check_schedule(parts, None)
            return False
        union = Union(parts, self.block, self.syms, self._of.get)  # type: ignore[arg-type]
        cyclic = union.sched is not None and self._cyclic(union)
        if CHECK_FULL:
            self._check_schedule(parts, union.sched)
            if union.sched is not None:
                full = self._cyclic_full({op for p in parts for op in p.members})
                assert cyclic == full, "fusion: incremental cycle check differs"
        if union.sched is None or cyclic:
            return False
        for p in parts:
            del self._parts[p.cid]
        merged = union.commit(cids[0], self._of)
        self._parts[cids[0]] = merged
        if CHECK_FULL:
            self.check_counts()
        return True

    def _cyclic(self, union: Union) -> bool:
        """True if a path leaves the union and comes back (module docstring)."""
        first = min((p.first for p in union.parts), key=self.pos).order_key
        last = max((p.last for p in union.parts), key=self.pos).order_key
        inside = union.member_part
        starts = [s for p in union.others for v in p.outputs for s in self._readers(v)]
        if self._search(starts, inside, lambda x: x.order_key > last, self._forward):
            return True
        starts = [d for p in union.others for v in p.inputs for d in self._definer(v)]
        return self._search(starts, inside, lambda x: x.order_key < first, self._backward)

    def _search(self, starts: list[Operation], inside, beyond, step) -> bool:
        """Depth-first search over whole clusters until a member of the union."""
        stack = [s for s in starts if inside(s) is None]
        seen: set[int] = set()
        while stack:
            x = stack.pop()
            part = self._of.get(x)
            key = id(part) if part is not None else id(x)
            if key in seen or beyond(x):
                continue
            seen.add(key)
            for y in step(x, part):
                if inside(y) is not None:
                    return True
                stack.append(y)
        return False

    def _readers(self, v: Value) -> Iterator[Operation]:
        for u, _ in v.uses:
            a = self.block.ancestor_of(u)
            if a is not None:
                yield a

    def _definer(self, v: Value) -> list[Operation]:
        if isinstance(v, OpResult) and v.op.parent is self.block:
            return [v.op]
        return []

    def _forward(self, x: Operation, part: Part | None) -> Iterator[Operation]:
        if part is None:
            yield from self.successors(x)
            return
        for v in part.outputs:
            yield from self._readers(v)

    def _backward(self, x: Operation, part: Part | None) -> Iterator[Operation]:
        if part is not None:
            for v in part.inputs:
                yield from self._definer(v)
            return
        for inner in x.walk():
            for v in inner.operand_values:
                for d in self._definer(v):
                    if d is not x:
                        yield d
        prev = self._prev_effect.get(x)
        if prev is not None:
            yield prev

    # -- the from-scratch answers (``CHECK_FULL``)
    def _check_schedule(self, parts: list[Part], sched: Schedule | None) -> None:
        ops = sorted((op for p in parts for op in p.members), key=self.pos)
        full = analyze(ops, self.outputs(ops), self.syms)
        assert full == sched, f"fusion: incremental schedule {sched} != {full}"

    def check_counts(self) -> None:
        """Every part's ``outputs`` and ``inputs`` counts equal a recount (tests)."""
        for part in self._parts.values():
            outputs: dict[Value, int] = {}
            inputs: dict[Value, int] = {}
            for op in part.members:
                for r in op.result_values:
                    n = sum(self._of.get(self.block.ancestor_of(u)) is not part  # type: ignore
                            for u, _ in r.uses)
                    if n:
                        outputs[r] = n
                for v, _, _ in reads(op):
                    if self._owner(v) is not part:
                        inputs[v] = inputs.get(v, 0) + 1
            assert outputs == part.outputs, "fusion: output counts differ"
            assert inputs == dict(part.inputs), "fusion: input counts differ"

    def _cyclic_full(self, ops: set[Operation]) -> bool:
        last = max(self.pos(o) for o in ops)
        stack = [s for o in ops for s in self.successors(o) if s not in ops]
        seen: set[Operation] = set()
        while stack:
            x = stack.pop()
            if x in seen or self.pos(x) > last:
                continue
            part = self._of.get(x)
            for y in (list(part.members) if part is not None else [x]):
                seen.add(y)
                for z in self.successors(y):
                    if z in ops:
                        return True
                    if z not in seen:
                        stack.append(z)
        return False
