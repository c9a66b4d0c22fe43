"""``fusion``: partition fusible tensor ops into ``fusion.group`` ops (one kernel each).

Works block by block (function bodies, user loop bodies, if branches, ``fusion.scope``
bodies); a group never spans two blocks, so ``with fusion_scope():`` is a boundary by
construction.  Scopes are dissolved once their bodies are partitioned.

Clustering (``fusion_rules`` says what may fuse, ``fusion_schedule`` what forms one
loop nest) visits the fusible ops of a block from last to first.  For an op ``P`` whose
users are already clustered:

1. scalar ops and constants join their single consumer group, or are cloned into
   every consumer group (they run once per group, not per element);
2. otherwise ``P`` joins the union of all its consumer groups when that union is one
   schedule and no path leaves and re-enters it (vertical and horizontal fusion at
   once: two reductions of one producer become one multi-output group);
3. **cost rule** when that fails: ``P`` is *recomputed* (cloned into each consumer
   group) if it is not a reduction and computing it from values that are
   materialized anyway costs at most :data:`RECOMPUTE_FLOPS` flops per element (its
   chain through fusible producers, costs in ``fusion_rules``: ``x * 2 + 1`` yes,
   ``exp(x)`` no); a reduction is never recomputed;
4. else ``P`` joins the first consumer group it can and is *materialized* as one of
   its outputs, read by the others.

Then groups reading the same input merge when they share a domain (sibling fusion).
A cluster becomes a group unless it only holds views or scalars; the block is
reordered topologically (stable) so each group sits where its last op was when
possible.  Groups, their inputs and outputs keep program order, so the output is
deterministic.  Ops are moved or cloned, never changed: the interpreter gives
bit-identical results before and after.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.ops.func import FuncOp, FusionGroupOp, ModuleOp
from pyasc.ir.passes.fusion_build import build_group, topological
from pyasc.ir.passes.fusion_rules import op_cost, role_of
from pyasc.ir.passes.fusion_schedule import Schedule, analyze
from pyasc.ir.passes.fusion_shapes import ShapeSyms
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.snapshots import inline_fusion_scopes
from pyasc.ir.types import TensorType

RECOMPUTE_FLOPS = 8
_MOVABLE = frozenset({"pure", "view", "constant"})
_OPAQUE = (FusionGroupOp, tensor.MapOp)  # regions that are never partitioned


class Clusters:
    """Union of ops into clusters, with the acyclicity and schedule checks."""

    def __init__(self, block: Block, syms: ShapeSyms) -> None:
        self.block, self.syms = block, syms
        self.of: dict[Operation, int] = {}
        self.members: dict[int, list[Operation]] = {}
        self._pos: dict[Operation, int] | None = None
        self._next_effect: dict[Operation, Operation] = {}
        self._count = 0

    # -- bookkeeping
    def add(self, op: Operation) -> int:
        self._count += 1
        self.of[op] = self._count
        self.members[self._count] = [op]
        return self._count

    def drop(self, op: Operation) -> None:
        cid = self.of.pop(op)
        self.members[cid].remove(op)
        if not self.members[cid]:
            del self.members[cid]

    def pos(self, op: Operation) -> int:
        if self._pos is None:
            self._pos = {o: i for i, o in enumerate(self.block.ops)}
            effects = [o for o in self.block.ops if not o.traits & _MOVABLE]
            self._next_effect = dict(zip(effects, effects[1:], strict=False))
        return self._pos[op]

    def touched(self) -> None:
        self._pos = None

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
        self.pos(op)
        nxt = self._next_effect.get(op)  # ops with effects keep their order
        if nxt is not None:
            yield nxt

    def unit(self, op: Operation) -> list[Operation]:
        cid = self.of.get(op)
        return self.members[cid] if cid is not None else [op]

    # -- checks
    def outputs(self, ops: Sequence[Operation]) -> list[Value]:
        inside = set(ops)
        return [r for op in ops for r in op.result_values
                if any(self.block.ancestor_of(u) not in inside for u, _ in r.uses)]

    def cyclic(self, ops: set[Operation]) -> bool:
        """True if a path leaves ``ops`` and comes back (other clusters contracted)."""
        last = max(self.pos(o) for o in ops)
        stack = [s for o in ops for s in self.successors(o) if s not in ops]
        seen: set[Operation] = set()
        while stack:
            x = stack.pop()
            if x in seen or self.pos(x) > last:
                continue  # edges go forward: nothing after ``ops`` leads back
            for y in self.unit(x):
                seen.add(y)
                for z in self.successors(y):
                    if z in ops:
                        return True
                    if z not in seen:
                        stack.append(z)
        return False

    def schedule(self, ops: Sequence[Operation]) -> Schedule | None:
        ordered = sorted(ops, key=self.pos)
        return analyze(ordered, self.outputs(ordered), self.syms)

    def merge(self, cids: Sequence[int]) -> bool:
        """Merge clusters ``cids`` if the result is acyclic and one schedule."""
        cids = list(dict.fromkeys(cids))
        ops = [op for c in cids for op in self.members[c]]
        if len(cids) < 2:
            return True
        if self.cyclic(set(ops)) or self.schedule(ops) is None:
            return False
        keep = cids[0]
        for c in cids[1:]:
            for op in self.members.pop(c):
                self.of[op] = keep
                self.members[keep].append(op)
        return True


class _Partition:
    """Clusters the fusible ops of one block and turns clusters into groups."""

    def __init__(self, block: Block) -> None:
        self.block = block
        self.cl = Clusters(block, ShapeSyms())

    def run(self) -> None:
        candidates = [op for op in self.block.ops if role_of(op) is not None]
        for op in candidates:
            self.cl.add(op)
        for op in reversed(candidates):
            if op.parent is self.block:
                self._visit(op)
        self._merge_siblings()
        self._rebuild()

    # -- clustering
    def _visit(self, p: Operation) -> None:
        users = self.cl.users(p)
        fus = list(dict.fromkeys(self.cl.of[u] for u in users if u in self.cl.of))
        others = any(u not in self.cl.of for u in users)
        if not fus:
            return
        if role_of(p) == "scalar":
            # Scalars follow tensor work only (a chain of index arithmetic stays put).
            work = [c for c in fus if self._has_tensor_work(c)]
            rest = others or len(work) < len(fus)
            if len(work) == 1 and not rest and self.cl.merge([self.cl.of[p], work[0]]):
                return
            if work:
                self._clone_into(p, work)
            return
        if self.cl.merge([self.cl.of[p], *fus]):
            return
        clones = self._clone_into(p, fus) if self._recomputable(p) else []
        if p.parent is not self.block:
            return  # every user took a copy
        for c in fus:  # materialized: computed by one consumer group, read by the others
            if c in self.cl.members and self.cl.merge([self.cl.of[p], c]):
                for copy in clones:  # a copy beside the original is redundant
                    if self.cl.of.get(copy) == self.cl.of[p]:
                        self._redirect(copy, p, [u for r in copy.result_values
                                                 for u in r.uses])
                        self.cl.drop(copy)
                        copy.erase()
                        self.cl.touched()
                return

    def _has_tensor_work(self, cid: int) -> bool:
        return _has_work(self.cl.members[cid])

    def _recomputable(self, p: Operation) -> bool:
        return role_of(p) != "reduce" and self._chain_cost(p, 0) <= RECOMPUTE_FLOPS

    def _chain_cost(self, op: Operation, depth: int) -> int:
        """Flops per element of ``op`` and the fusible producers it would drag along
        (deep chains count as too expensive)."""
        if depth > 16:
            return RECOMPUTE_FLOPS + 1
        cost = op_cost(op)
        for v in op.operand_values:
            q = v.op if isinstance(v, OpResult) else None
            if q is not None and q.parent is self.block and \
                    role_of(q) not in (None, "scalar", "reduce"):
                cost += self._chain_cost(q, depth + 1)
        return cost

    def _clone_into(self, p: Operation, cids: Sequence[int]) -> list[Operation]:
        """Give every cluster in ``cids`` its own copy of ``p`` (if it may take it);
        returns the copies made."""
        made: list[Operation] = []
        for cid in cids:
            uses = [(u, i) for r in p.result_values for u, i in r.uses
                    if self.cl.of.get(self.block.ancestor_of(u)) == cid]
            copy = p.clone()
            self.block.insert(self.block.index_of(p) + 1, copy)
            self.cl.touched()
            self._redirect(p, copy, uses)
            if self.cl.merge([cid, self.cl.add(copy)]):
                made.append(copy)
            else:
                self._redirect(copy, p, uses)
                self.cl.drop(copy)
                copy.erase()
            self.cl.touched()
        if not any(r.uses for r in p.result_values):
            self.cl.drop(p)
            p.erase()
            self.cl.touched()
        return made

    @staticmethod
    def _redirect(old: Operation, new: Operation, uses: list[tuple[Operation, int]]) -> None:
        for user, idx in uses:
            value = user.operand_values[idx]
            user.set_operand(idx, new.result_values[old.result_values.index(value)])

    def _merge_siblings(self) -> None:
        """Clusters reading the same tensor input merge when they share a domain."""
        readers: dict[Value, list[int]] = {}
        for op in self.block.ops:
            cid = self.cl.of.get(op)
            if cid is None:
                continue
            for v in op.operand_values:
                inside = isinstance(v, OpResult) and self.cl.of.get(v.op) == cid
                if not inside and isinstance(v.type, TensorType):
                    readers.setdefault(v, [])
                    if cid not in readers[v]:
                        readers[v].append(cid)
        for cids in readers.values():
            self._merge_alike([c for c in cids if c in self.cl.members])

    def _merge_alike(self, cids: list[int]) -> None:
        for i, a in enumerate(cids):
            for b in cids[i + 1:]:
                if a in self.cl.members and b in self.cl.members and a != b:
                    ma, mb = self.cl.members[a], self.cl.members[b]
                    sa, sb = self.cl.schedule(ma), self.cl.schedule(mb)
                    if _worth_a_group(ma, sa) and _worth_a_group(mb, sb) and _alike(sa, sb):
                        self.cl.merge([a, b])

    # -- groups
    def _rebuild(self) -> None:
        """Reorder the block topologically with one ``fusion.group`` per cluster."""
        block = self.block
        term = block.ops[-1] if block.ops and block.ops[-1].has_trait("terminator") else None
        units, specs = self._units([op for op in block.ops if op is not term])
        order = topological(units, self.cl)
        for op in block.ops:
            op.parent = None
        block.ops = []
        for k in order:
            spec = specs.get(k)
            block.append(units[k][0] if spec is None else build_group(units[k], *spec))
        if term is not None:
            block.append(term)

    def _units(self, ops: list[Operation]
               ) -> tuple[list[list[Operation]], dict[int, tuple[list[Value], str]]]:
        """Units to order (a group's members, or one op) and, per group unit, its
        outputs and kind."""
        units: list[list[Operation]] = []
        specs: dict[int, tuple[list[Value], str]] = {}
        done: set[int] = set()
        for op in ops:
            cid = self.cl.of.get(op)
            if cid is None:
                units.append([op])
                continue
            if cid in done:
                continue
            done.add(cid)
            members = sorted(self.cl.members[cid], key=self.cl.pos)
            sched, outputs = self.cl.schedule(members), self.cl.outputs(members)
            if _worth_a_group(members, sched) and outputs:
                assert sched is not None
                specs[len(units)] = (outputs, sched.kind)
                units.append(members)
            else:
                units.extend([m] for m in members)
        return units, specs


def _alike(a: Schedule | None, b: Schedule | None) -> bool:
    if a is None or b is None or "scalar" in (a.kind, b.kind):
        return False
    family = {"elementwise": 0, "reduction": 1, "rowwise": 1}
    return family[a.kind] == family[b.kind] and a.domain == b.domain and a.axes == b.axes


def _has_work(members: Sequence[Operation]) -> bool:
    """True unless every op is a view or a scalar (a view of a parameter costs nothing,
    so views alone stay ops)."""
    return any(role_of(m) not in ("scalar", "access") or isinstance(m, tensor.GatherOp)
               for m in members)


def _worth_a_group(members: list[Operation], sched: Schedule | None) -> bool:
    return sched is not None and sched.kind != "scalar" and _has_work(members)


def _partition_nested(op: Operation) -> None:
    for region in op.region_list:
        for block in region.blocks:
            fuse_block(block)


def fuse_block(block: Block) -> None:
    """Partition ``block`` and, first, every block nested in it."""
    for op in list(block.ops):
        if not isinstance(op, _OPAQUE):
            _partition_nested(op)
    _Partition(block).run()


def fuse_function(fn: FuncOp) -> None:
    """Form groups in every block of ``fn``, then dissolve its ``fusion.scope`` ops."""
    fuse_block(fn.entry)
    inline_fusion_scopes(fn)


@register_pass
class Fusion(Pass):
    """Partition fusible tensor ops into ``fusion.group`` kernels (module docstring)."""

    name = "fusion"
    description = "group elementwise/broadcast/reduction chains into fused kernels"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            fuse_function(fn)
