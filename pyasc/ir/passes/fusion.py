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

Then groups reading the same input merge when they share a domain (sibling fusion; a
cluster gives up after :data:`SIBLING_FAILURES` failed attempts).
A cluster becomes a group unless it only holds views or scalars; the block is
reordered topologically (stable) so each group sits where its last op was when
possible.  Groups, their inputs and outputs keep program order, so the output is
deterministic.  Ops are moved or cloned, never changed: the interpreter gives
bit-identical results before and after.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.ops.func import FuncOp, FusionGroupOp, FusionScopeOp, ModuleOp
from pyasc.ir.passes.fusion_build import build_group, topological
from pyasc.ir.passes.fusion_clusters import Clusters
from pyasc.ir.passes.fusion_rules import op_cost, role_of
from pyasc.ir.passes.fusion_schedule import Schedule
from pyasc.ir.passes.fusion_shapes import ShapeSyms, aligned
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.snapshots import inline_fusion_scopes
from pyasc.ir.types import TensorType

RECOMPUTE_FLOPS = 8
SIBLING_FAILURES = 8
"""Failed sibling merges after which a cluster stops trying (each failure is a path
through other clusters, or an incompatible union); see ``_merge_alike``."""
_OPAQUE = (FusionGroupOp, tensor.MapOp)  # regions that are never partitioned


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
        cl = self.cl
        users = cl.users(p)
        fus = list(dict.fromkeys(c for c in map(cl.cid, users) if c is not None))
        others = any(cl.cid(u) is None for u in users)
        if not fus:
            return
        if role_of(p) == "scalar":
            # Scalars follow tensor work only (a chain of index arithmetic stays put).
            work = [c for c in fus if cl.heavy(c)]
            rest = others or len(work) < len(fus)
            if len(work) == 1 and not rest and cl.merge([cl.cid(p), work[0]]):
                return
            if work:
                self._clone_into(p, work)
            return
        if cl.merge([cl.cid(p), *fus]):
            return
        clones = self._clone_into(p, fus) if self._recomputable(p) else []
        if p.parent is not self.block:
            return  # every user took a copy
        for c in fus:  # materialized: computed by one consumer group, read by the others
            if cl.alive(c) and cl.merge([cl.cid(p), c]):
                for copy in clones:  # a copy beside the original is redundant
                    if cl.cid(copy) == cl.cid(p):
                        cl.redirect(copy, p, [u for r in copy.result_values for u in r.uses])
                        cl.drop(copy)
                        copy.erase()
                return

    def _recomputable(self, p: Operation) -> bool:
        return role_of(p) != "reduce" and self._chain_cost(p, 0, 0) <= RECOMPUTE_FLOPS

    def _chain_cost(self, op: Operation, depth: int, spent: int) -> int:
        """Flops per element of ``op`` and the fusible producers it would drag along
        (deep chains count as too expensive).  ``spent``: the cost counted so far; the
        walk stops once over the threshold (it is a tree walk of a DAG)."""
        if depth > 16:
            return RECOMPUTE_FLOPS + 1
        cost = op_cost(op)
        for v in op.operand_values:
            if spent + cost > RECOMPUTE_FLOPS:
                break
            q = v.op if isinstance(v, OpResult) else None
            if q is not None and q.parent is self.block and \
                    role_of(q) not in (None, "scalar", "reduce") and \
                    not self._per_row(v, op):
                cost += self._chain_cost(q, depth + 1, spent + cost)
        return cost

    def _per_row(self, v: Value, op: Operation) -> bool:
        """True if ``v`` is constant along trailing axes of ``op``'s result (a
        ``64x1`` statistic of ``64x32`` rows): a group computes it once per row, so it
        adds nothing per element to a recomputation (a layernorm's normalized ``x``
        recomputed from the row statistics, in a backward)."""
        want = self.cl.syms.of(op.result_values[0])
        have = aligned(self.cl.syms.of(v), len(want))
        if len(have) != len(want) or have == list(want):
            return False
        const = [h in (None, 1) and w != 1 for h, w in zip(have, want, strict=True)]
        first = const.index(True) if True in const else len(const)
        return all(const[first:]) and have[:first] == list(want[:first])

    def _clone_into(self, p: Operation, cids: Sequence[int]) -> list[Operation]:
        """Give every cluster in ``cids`` its own copy of ``p`` (if it may take it);
        returns the copies made."""
        cl = self.cl
        made: list[Operation] = []
        by_cluster: dict[int | None, list[tuple[Operation, int]]] = {}
        for r in p.result_values:  # one pass: p may have uses in thousands of clusters
            for u, i in r.uses:
                by_cluster.setdefault(cl.cid(self.block.ancestor_of(u)), []).append((u, i))
        for cid in cids:
            uses = by_cluster.get(cid, [])
            copy = p.clone()
            self.block.insert(self.block.index_of(p) + 1, copy)
            cl.redirect(p, copy, uses)
            if cl.merge([cid, cl.add(copy, new=True)]):
                made.append(copy)
            else:
                cl.redirect(copy, p, uses)
                cl.drop(copy)
                copy.erase()
        if not any(r.uses for r in p.result_values):
            cl.drop(p)
            p.erase()
        return made

    def _merge_siblings(self) -> None:
        """Clusters reading the same tensor input merge when they share a domain."""
        readers: dict[Value, dict[int, None]] = {}
        for op in self.block.ops:
            cid = self.cl.cid(op)
            if cid is None:
                continue
            for v in op.operand_values:
                inside = isinstance(v, OpResult) and self.cl.cid(v.op) == cid
                if not inside and isinstance(v.type, TensorType):
                    readers.setdefault(v, {})[cid] = None
        for cids in readers.values():
            self._merge_alike([c for c in cids if self.cl.alive(c)])

    def _merge_alike(self, cids: list[int]) -> None:
        """Each cluster, in order, absorbs the later alike ones it can; it stops after
        :data:`SIBLING_FAILURES` failed merges.  Only alike pairs are looked at
        (buckets by :data:`_FAMILY`, domain and axes), so k readers of one input cost
        O(k) merges, not O(k^2) pairs."""
        cl = self.cl
        buckets: dict[tuple, list[int]] = {}  # alike key -> positions in cids
        for i, c in enumerate(cids):
            key = self._alike_key(c)
            if key is not None:
                buckets.setdefault(key, []).append(i)
        for i, a in enumerate(cids):
            key = self._alike_key(a) if cl.alive(a) else None
            pos, failures = i, 0
            while key is not None and failures < SIBLING_FAILURES:
                bucket = buckets[key] if key in buckets else []
                j = bisect_right(bucket, pos)
                if j == len(bucket):
                    break
                pos = bucket[j]
                if not cl.alive(cids[pos]):
                    continue
                if cl.merge([a, cids[pos]]):
                    key = self._alike_key(a)
                else:
                    failures += 1

    def _alike_key(self, cid: int) -> tuple | None:
        """Clusters with equal keys are alike; ``None``: not worth a group."""
        sched = self.cl.schedule(cid)
        if not self._worth(cid, sched):
            return None
        assert sched is not None
        return _FAMILY[sched.kind], sched.domain, sched.axes

    def _worth(self, cid: int, sched: Schedule | None) -> bool:
        return sched is not None and sched.kind != "scalar" and self.cl.heavy(cid)

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
            cid = self.cl.cid(op)
            if cid is None:
                units.append([op])
                continue
            if cid in done:
                continue
            done.add(cid)
            members = sorted(self.cl.members(cid), key=self.cl.pos)
            sched, outputs = self.cl.schedule(cid), self.cl.outputs(members)
            if self._worth(cid, sched) and outputs:
                assert sched is not None
                specs[len(units)] = (outputs, sched.kind)
                units.append(members)
            else:
                units.extend([m] for m in members)
        return units, specs


_FAMILY = {"elementwise": 0, "reduction": 1, "rowwise": 1}
"""Schedules of one family with the same domain and axes are alike: sibling groups
reading the same input merge only then."""


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
    """Form groups in every block of ``fn``, then dissolve its ``fusion.scope`` ops,
    marking the groups formed in the k-th scope ``scope = k``: a backend that merges
    adjacent groups later (AscendC's ``merge_adjacent``) keeps the user's boundary."""
    fuse_block(fn.entry)
    scopes = [op for op in fn.walk() if isinstance(op, FusionScopeOp)]
    for k, scope in enumerate(scopes, start=1):
        for op in scope.body.blocks[0].ops:
            if isinstance(op, FusionGroupOp):
                op.attributes["scope"] = k
    inline_fusion_scopes(fn)


@register_pass
class Fusion(Pass):
    """Partition fusible tensor ops into ``fusion.group`` kernels (module docstring)."""

    name = "fusion"
    description = "group elementwise/broadcast/reduction chains into fused kernels"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            fuse_function(fn)
