"""Grouping fallback: wrap runs of fusible top-level tensor ops into ``fusion.group``s.

The fusion pass (issue 5) will form groups; until it exists, and for functions it leaves
ungrouped, this small pass does it for the AscendC backend.  It scans the entry block
and grows a group op by op while the grown group still plans as one vector kernel (the
planner is the only authority on what fits); pure host ops that do not use the group's
values (scalar math, shapes, allocations) may sit between members and stay outside.
Anything else closes the group.  Scalar constants used by members are cloned into the
group; every other outside value becomes an input.  Ops inside ``fusion.scope`` bodies
are grouped among themselves only (a scope is a fusion boundary); scopes are inlined
afterwards.  Nothing inside loops is grouped (loops run as scalar code).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.backend.ascendc.analysis import NotVectorizable, is_vector_op
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Block, Operation, Region, Value
from pyasc.ir.ops import arith, func, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.passes.snapshots import inline_fusion_scopes
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
    """Group the fusible ops of ``fn``'s entry block (and of top-level scopes) in place.

    Groups the fusion pass formed are kept when they plan as one kernel; otherwise the
    scalar set-up inside them moves to the host and the rest is retried, and failing
    that the group is dissolved and its ops regrouped here."""
    for op in list(fn.entry.ops):
        if isinstance(op, FusionGroupOp) and not _plans(op, probe, oom_fatal=True):
            _rescue(op, probe)
    for op in list(fn.entry.ops):
        if isinstance(op, func.FusionScopeOp):
            _group_block(op.body.blocks[0], probe)
            merge_adjacent(op.body.blocks[0], probe)
    _group_block(fn.entry, probe)
    merge_adjacent(fn.entry, probe)
    inline_fusion_scopes(fn)


def merge_adjacent(block: Block, probe: Probe) -> None:
    """Merge a group into the next one when it feeds it and the union is still one
    vector kernel (e.g. a row reduction and the row-wise consumer the fusion pass split
    apart): the intermediate values then stay in UB instead of a GM round trip."""
    i = 0
    while i < len(block.ops):
        first = block.ops[i]
        nxt = next((j for j in range(i + 1, len(block.ops))
                    if isinstance(block.ops[j], FusionGroupOp)), None)
        if not isinstance(first, FusionGroupOp) or nxt is None or \
                not _mergeable(block, i, nxt):
            i += 1
            continue
        second = block.ops[nxt]
        kind = _merged_kind(first, second)
        ops2 = dissolve(second)  # dissolve the later one first: positions stay valid
        ops1 = dissolve(first)
        if _fits(ops1 + ops2, probe):
            wrap_group(ops1 + ops2, kind)  # then try to merge the result with the next
        else:
            wrap_group(ops1, first.attributes["kind"])
            wrap_group(ops2, second.attributes["kind"])
            i += 1


def _mergeable(block: Block, i: int, j: int) -> bool:
    first, second = block.ops[i], block.ops[j]
    feeds = any(v in first.result_values for v in second.operand_values)
    # A group is pure: it may move down past anything that does not use its results.
    return feeds and not any(_uses_any(op, [first]) for op in block.ops[i + 1:j])


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
    runs: list[list[Operation]] = []
    current: list[Operation] = []
    for op in list(block.ops):
        if is_candidate(op) and _fits(current + [op], probe):
            current.append(op)
            continue
        if current and (_uses_any(op, current) or not _hoistable(op) or is_candidate(op)):
            runs.append(current)
            current = []
        if is_candidate(op) and _fits([op], probe, oom_fatal=True):
            current = [op]
    if current:
        runs.append(current)
    for run in runs:
        wrap_group(run, _kind(run))


def _hoistable(op: Operation) -> bool:
    return not op.region_list and bool(op.traits & _HOISTABLE) and \
        not op.traits & {"writes", "checks", "reads"}


def _uses_any(op: Operation, ops: Sequence[Operation]) -> bool:
    defined = {r for o in ops for r in o.result_values}
    return any(v in defined for inner in op.walk() for v in inner.operand_values)


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
    seen: list[Value] = []
    for op in ops:
        for inner in op.walk():
            for v in inner.operand_values:
                if v not in defined and v not in seen and not _is_scalar_constant(v):
                    seen.append(v)
    return seen


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
    for old, new in zip(outs, group.result_values, strict=True):
        new.name_hint = old.name_hint
        for user, idx in list(old.uses):
            if user not in ops and not _inside(user, ops):
                user.set_operand(idx, new)
    for op in reversed(ops):
        op.erase()
    return group


def _inside(user: Operation, ops: Sequence[Operation]) -> bool:
    return any(op.is_ancestor_of(user) for op in ops)
