"""Grouping fallback: wrap runs of fusible top-level tensor ops into ``fusion.group``s.

For functions the fusion pass leaves ungrouped, this small pass forms groups for the
AscendC backend.  It scans the entry block and grows a group op by op (up to
``MAX_GROUP_OPS`` tensor ops) while the grown group still plans as one vector kernel (the
planner is the only authority on what fits); pure host ops that do not use the group's
values (scalar math, shapes, allocations) may sit between members and stay outside.
Anything else closes the group.  Scalar constants used by members are cloned into the
group; every other outside value becomes an input.  Ops inside ``fusion.scope`` bodies
are grouped among themselves only (a scope is a fusion boundary); scopes are inlined
afterwards.  Nothing inside loops is grouped (loops run as scalar code); loops over
rows or pixels with independent iterations were rewritten as batch tensor work before
(``batch-loops``), so their ops are top-level here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.backend.ascendc.analysis import NotVectorizable, is_vector_op
from pyasc.backend.ascendc.group_order import share_snapshots, sink_users
from pyasc.backend.ascendc.row_keepdims import keep_row_dims
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Block, Operation, Region, Value
from pyasc.ir.ops import arith, func, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.passes.channel_stencil import channel_bodies
from pyasc.ir.passes.fusion_rules import MAX_GROUP_OPS
from pyasc.ir.passes.snapshots import inline_fusion_scopes
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import ScalarType, TensorType

Probe = Callable[[FusionGroupOp], None]
"""Raises ``NotVectorizable`` (or E50003) if a group does not plan as one kernel."""

_REDUCTIONS = (tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp)
_HOISTABLE = frozenset({"pure", "allocates", "constant"})


def is_candidate(op: Operation) -> bool:
    """A top-level op the fallback may put into a group."""
    if op.region_list or not is_vector_op(op) or isinstance(op, arith.ConstantOp):
        return False
    if isinstance(op, _REDUCTIONS):
        return True
    return any(isinstance(r.type, TensorType) for r in op.result_values)


def form_groups(fn: FuncOp, probe: Probe) -> None:
    """Group the fusible ops of ``fn``'s entry block (and of top-level scopes, of the
    branches of top-level versioned loops, ``versioning.top_blocks``, and of the bodies
    of ``channels`` loops, ``channel_stencil.channel_bodies``) in place.

    Groups the fusion pass formed are kept when they plan as one kernel; otherwise the
    scalar set-up inside them moves to the host and the rest is retried, and failing
    that the group is dissolved and its ops regrouped here."""
    # a versioned nest's branches are top-level code too, and so is the body of a loop
    # channel-interchange made (its nest over outputs, batched once per channel)
    blocks = [b for top in top_blocks(fn.entry) for b in (top, *channel_bodies(top))]
    for op in [op for block in blocks for op in block.ops]:
        if isinstance(op, FusionGroupOp) and not _plans(op, probe, oom_fatal=True):
            _rescue(op, probe)
    for op in list(fn.entry.ops):
        if isinstance(op, func.FusionScopeOp):
            _group_block(op.body.blocks[0], probe)
            _merge_all(op.body.blocks[0], probe)
    for block in blocks:
        _group_block(block, probe)
        _merge_all(block, probe)
    inline_fusion_scopes(fn)


def _merge_all(block: Block, probe: Probe) -> None:
    """``merge_adjacent``, then again where merged groups now yield a squeezed row
    reduction that the host reshapes to ``(n, 1)`` for a later group (``m = x.max(-1)``
    beside ``x - m[:, None]``): yielded as ``(n, 1)``, it merges with that group."""
    merge_adjacent(block, probe)
    for _ in range(4):  # each round turns squeezed values into columns for good
        if not keep_row_dims(block):
            break
        merge_adjacent(block, probe)


def merge_adjacent(block: Block, probe: Probe, max_ops: int = MAX_GROUP_OPS) -> None:
    """Merge a group into the next one when it feeds it and the union is still one
    vector kernel (e.g. a row reduction and the row-wise consumer the fusion pass split
    apart): the intermediate values then stay in UB instead of a GM round trip.  A union
    of more than ``max_ops`` tensor ops is not tried (``MAX_GROUP_OPS``: the fusion
    pass split it; stencil kernels take more, ``codegen``)."""
    i = 0
    while i < len(block.ops):
        first = block.ops[i]
        # the first group reading ``first`` (not merely the next group: two chains
        # batched side by side, a sum of two window sums, alternate their groups)
        nxt = next((j for j in range(i + 1, len(block.ops))
                    if isinstance(block.ops[j], FusionGroupOp) and
                    _uses_any(block.ops[j], [first])), None)
        second = block.ops[nxt] if nxt is not None else None
        if not isinstance(first, FusionGroupOp) or second is None or \
                _size(first) + _size(second) > max_ops or \
                not _mergeable(block, first, second):
            i += 1
            continue
        share_snapshots(block, first, second)  # x read once by the merged kernel
        kind, scope = _merged_kind(first, second), first.attributes.get("scope")
        ops2 = dissolve(second)  # dissolve the later one first: positions stay valid
        ops1 = dissolve(first)
        if _fits(ops1 + ops2, probe):
            _rescope(wrap_group(ops1 + ops2, kind), scope)  # then try the next one too
        else:
            _rescope(wrap_group(ops1, first.attributes["kind"]), scope)
            _rescope(wrap_group(ops2, second.attributes["kind"]), scope)
            i += 1


def _rescope(group: FusionGroupOp, scope: int | None) -> None:
    """Keep the ``scope`` mark of the groups a merge attempt dissolved and rebuilt."""
    if scope is not None:
        group.attributes["scope"] = scope


def _size(group: Operation) -> int:
    """Tensor ops in a group's body (what ``MAX_GROUP_OPS`` bounds)."""
    return sum(is_candidate(op) for op in group.region_list[0].blocks[0].ops)


def _mergeable(block: Block, first: Operation, second: Operation) -> bool:
    if first.attributes.get("scope") != second.attributes.get("scope"):
        return False  # groups of different `with fusion_scope():` blocks (fusion pass)
    feeds = any(v in first.result_values for v in second.operand_values)
    # A group is pure: it may move down past anything that does not use its results;
    # what uses them (the host's write of a returned row reduction) moves after the
    # second group when that changes nothing (group_order)
    return feeds and sink_users(block, first, second)


def _merged_kind(a: Operation, b: Operation) -> str:
    kinds = {a.attributes["kind"], b.attributes["kind"]}
    for k in ("rowwise", "reduction", "generic", "elementwise"):
        if k in kinds:
            return k
    return "generic"


def _plans(group: FusionGroupOp, probe: Probe, oom_fatal: bool = False) -> bool:
    """Whether ``group`` plans as one kernel.  With ``oom_fatal`` a group that would be a
    vector kernel but does not fit the UB at its smallest tile raises E50003."""
    try:
        probe(group)
    except NotVectorizable:
        return False
    except OutOfMemoryError:
        if oom_fatal:
            raise
        return False
    return True


def dissolve(group: FusionGroupOp) -> list[Operation]:
    """Inline a group's body in front of it and remove the group; returns the new ops."""
    block = group.parent
    assert block is not None
    body = group.body.blocks[0]
    mapping: dict[Value, Value] = dict(zip(body.args, group.inputs, strict=True))
    pos = block.index_of(group)
    new: list[Operation] = []
    for op in body.ops:
        if isinstance(op, FusionYieldOp):
            for r, v in zip(group.result_values, op.operand_values, strict=True):
                r.replace_all_uses_with(mapping.get(v, v))
            break
        clone = op.clone(mapping)
        block.insert(pos + len(new), clone)
        new.append(clone)
    group.erase()
    return new


def _rescue(group: FusionGroupOp, probe: Probe) -> None:
    kind = group.attributes["kind"]
    ops = dissolve(group)
    setup: set[Value] = set()
    rest: list[Operation] = []
    for op in ops:
        scalar = not op.region_list and all(isinstance(r.type, ScalarType)
                                            for r in op.result_values)
        inner = {v for v in op.operand_values if v in {r for o in ops for r in o.result_values}}
        if scalar and inner <= setup:
            setup.update(op.result_values)
        else:
            rest.append(op)
    if rest and len(rest) < len(ops):
        regrouped = wrap_group(rest, kind)
        if not _plans(regrouped, probe):
            dissolve(regrouped)


def _group_block(block: Block, probe: Probe) -> None:
    """Runs of candidates, each grown while it plans as one kernel (module docstring).

    A run grows by batches of the next candidates, doubling while they fit and halving
    when they do not, so a run of L ops costs O(log L) plans of it, not L (planning is
    linear in the group: probing every prefix was O(n^2) on a long unfused program)."""
    ops = list(block.ops)
    runs: list[list[Operation]] = []
    i = 0
    while i < len(ops):
        op = ops[i]
        i += 1
        if not is_candidate(op) or not _fits([op], probe, oom_fatal=True):
            continue
        run, defined, step = [op], set(op.result_values), 1
        while len(run) < MAX_GROUP_OPS:
            batch, end = _next_candidates(ops, i, defined, min(step, MAX_GROUP_OPS - len(run)))
            if batch and _fits(run + batch, probe):
                run += batch
                defined.update(r for b in batch for r in b.result_values)
                i, step = end, step * 2
            elif batch and step > 1:
                step //= 2
            else:
                break
        runs.append(run)
    for run in runs:
        wrap_group(run, _kind(run))


def _next_candidates(ops: list[Operation], i: int, defined: set[Value], n: int
                     ) -> tuple[list[Operation], int]:
    """Up to ``n`` candidates from ``ops[i:]`` that may join a run defining ``defined``
    (pure host ops not reading the run may sit between them; anything else ends it),
    and the index after the last one."""
    batch: list[Operation] = []
    seen = set(defined)
    end = i
    while i < len(ops) and len(batch) < n:
        op = ops[i]
        i += 1
        if is_candidate(op):
            batch.append(op)
            seen.update(op.result_values)
            end = i
        elif _reads_any(op, seen) or not _hoistable(op):
            break
    return batch, end


def _hoistable(op: Operation) -> bool:
    return not op.region_list and bool(op.traits & _HOISTABLE) and \
        not op.traits & {"writes", "checks", "reads"}


def _uses_any(op: Operation, ops: Sequence[Operation]) -> bool:
    return _reads_any(op, {r for o in ops for r in o.result_values})


def _reads_any(op: Operation, values: set[Value]) -> bool:
    return any(v in values for inner in op.walk() for v in inner.operand_values)


def _fits(ops: list[Operation], probe: Probe, oom_fatal: bool = False) -> bool:
    group = build_group(ops, _kind(ops))
    try:
        return _plans(group, probe, oom_fatal)
    finally:
        group.erase()  # a detached probe must not leave uses behind


def _kind(ops: Sequence[Operation]) -> str:
    """The group's ``kind`` attribute (informative: the planner decides the schedule)."""
    kinds = {"elementwise"}
    for op in ops:
        if isinstance(op, _REDUCTIONS):
            src = op.operand_values[0].type
            rank = src.rank if isinstance(src, TensorType) else 0
            last = tuple(op.attributes["axes"]) == (rank - 1,)
            kinds.add("rowwise" if last and (rank >= 2 or op.attributes["keepdims"])
                      else "reduction")
    return next(k for k in ("rowwise", "reduction", "elementwise") if k in kinds)


def value_name(v: Value) -> str | None:
    """A readable name for ``v``: its hint, or that of the buffer it snapshots."""
    if v.name_hint:
        return v.name_hint
    owner = getattr(v, "op", None)
    if owner is not None and owner.name in ("mem.to_tensor", "mem.contiguous"):
        return value_name(owner.operand_values[0])
    if owner is not None and owner.name in ("mem.dim", "tensor.dim"):
        base = value_name(owner.operand_values[0])
        return f"{base}_d{owner.attributes['axis']}" if base else None
    return None


def _outside_operands(ops: Sequence[Operation]) -> list[Value]:
    defined = {r for o in ops for r in o.result_values}
    seen: dict[Value, None] = {}
    for op in ops:
        for inner in op.walk():
            for v in inner.operand_values:
                if v not in defined and v not in seen and not _is_scalar_constant(v):
                    seen[v] = None
    return list(seen)


def _is_scalar_constant(v: Value) -> bool:
    owner = getattr(v, "op", None)
    return isinstance(owner, arith.ConstantOp) and isinstance(v.type, ScalarType)


def _escaping(ops: Sequence[Operation]) -> list[Value]:
    members = set(ops)
    out = []
    for op in ops:
        for r in op.result_values:
            if any(u not in members for u, _ in r.uses):
                out.append(r)
    return out


def build_group(ops: Sequence[Operation], kind: str,
                outputs: Sequence[Value] | None = None) -> FusionGroupOp:
    """A detached ``fusion.group`` holding clones of ``ops`` (inputs: outside values)."""
    inputs = _outside_operands(ops)
    outs = list(_escaping(ops) if outputs is None else outputs)
    block = Block([v.type for v in inputs], [value_name(v) for v in inputs])
    group = FusionGroupOp(list(inputs), [v.type for v in outs], {"kind": kind},
                          [Region([block])], loc=ops[0].loc)
    mapping: dict[Value, Value] = dict(zip(inputs, block.args, strict=True))
    for op in ops:
        for inner in op.walk():
            for v in inner.operand_values:
                if _is_scalar_constant(v) and v not in mapping:
                    const = v.op.clone()  # type: ignore[attr-defined]
                    block.append(const)
                    mapping[v] = const.result
        block.append(op.clone(mapping))
    block.append(FusionYieldOp([mapping[v] for v in outs]))
    return group


def wrap_group(ops: list[Operation], kind: str) -> FusionGroupOp:
    """Replace ``ops`` (in one block) by a ``fusion.group`` placed at the last of them."""
    outs = _escaping(ops)
    group = build_group(ops, kind, outs)
    block = ops[-1].parent
    assert block is not None
    block.insert(block.index_of(ops[-1]) + 1, group)
    members = set(ops)
    for old, new in zip(outs, group.result_values, strict=True):
        new.name_hint = old.name_hint
        for user, idx in list(old.uses):
            if not _inside(user, members):
                user.set_operand(idx, new)
    for op in reversed(ops):
        op.erase()
    return group


def _inside(user: Operation, members: set[Operation]) -> bool:
    """True if ``user`` is a member or nested in one."""
    op: Operation | None = user
    while op is not None and op not in members:
        op = op.parent_op
    return op is not None
