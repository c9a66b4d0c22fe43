"""Turning the fusion pass's clusters into ``fusion.group`` ops.

:func:`topological` orders a block's units (a cluster, or one op outside any group)
so every value is defined before its uses and ops with effects keep their order;
ties go to the unit whose last op came first, so the block changes as little as
possible.  :func:`build_group` clones a cluster's ops into a new isolated group whose
block arguments are the values they read from outside (in order of first use) and
whose results replace the uses of the values read after it.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from pyasc.ir.core import Block, Operation, OpResult, Region, Value
from pyasc.ir.ops.func import FusionGroupOp, FusionYieldOp

if TYPE_CHECKING:
    from pyasc.ir.passes.fusion_clusters import Clusters


def topological(units: list[list[Operation]], cl: Clusters) -> list[int]:
    """Kahn's algorithm, ties broken by the position of each unit's last op."""
    unit_of = {op: k for k, unit in enumerate(units) for op in unit}
    key = [max(cl.pos(op) for op in unit) for unit in units]
    succ: list[set[int]] = [set() for _ in units]
    indeg = [0] * len(units)
    for k, unit in enumerate(units):
        for op in unit:
            for s in cl.successors(op):
                j = unit_of.get(s)
                if j is not None and j != k and j not in succ[k]:
                    succ[k].add(j)
                    indeg[j] += 1
    ready = [(key[k], k) for k in range(len(units)) if indeg[k] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(k)
        for j in sorted(succ[k]):
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (key[j], j))
    assert len(order) == len(units), "fusion: clusters form a cycle"
    return order


def group_inputs(members: list[Operation]) -> list[Value]:
    """Values the members read but do not define (nested uses included), in order."""
    inside = set(members)
    found: dict[Value, None] = {}
    for m in members:
        for op in m.walk():
            for v in op.operand_values:
                owner = v.op if isinstance(v, OpResult) else v.block.parent_op
                while owner is not None and owner not in inside:  # defined in a member?
                    owner = owner.parent_op
                if owner is None:
                    found[v] = None
    return list(found)


def build_group(members: list[Operation], outputs: list[Value],
                 kind: str) -> FusionGroupOp:
    """One ``fusion.group`` computing ``members``; their external uses are redirected."""
    inputs = group_inputs(members)
    body = Block([v.type for v in inputs], [v.name_hint for v in inputs])
    mapping: dict[Value, Value] = dict(zip(inputs, body.args, strict=True))
    for m in members:
        body.append(m.clone(mapping))
    body.append(FusionYieldOp([mapping[v] for v in outputs], loc=members[-1].loc))
    group = FusionGroupOp(inputs, [v.type for v in outputs], {"kind": kind},
                          [Region([body])], loc=members[-1].loc)
    for old, new in zip(outputs, group.result_values, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for m in reversed(members):
        m.erase()
    return group
