"""Run-time shapes of a vector kernel: what sizes its space, and what must span it.

The planner (``analysis``) classifies values by their static types, where two ``?``
dims look alike; at run time either may be 1.  The host therefore computes the
iteration space as numpy's broadcast of everything that sizes it (the *contributors* of
each axis: the array inputs, and fills/broadcasts inside the kernel) and broadcasts each
input to its class's shape (``host_vector``).  That is exact for elementwise dataflow,
since broadcasting commutes with elementwise ops, but not for a value numpy never
enlarges: the source of a reduction (a sum would count the copies) and a kernel result
(it would come back larger than numpy's, e.g. ``x.sum(-1, keepdims=True) + c`` with
``c`` of shape (5, 1) next to a wider ``x``).

Per value and space axis, :func:`analyze_spans` computes the value's *extent sources*:
the contributors whose run-time sizes the value has along the axis in numpy (a
reduction drops those of its reduced axes).  An observed value — a reduction's source
along the reduced axes, a result along the axes its class spans — whose sources are
not all the axis's contributors gets a :class:`SpanCheck`: the broadcast of its sources'
run-time extents is its numpy extent.  A result the kernel computed broadcast along
such an axis is sliced back to that extent by the host (exact: before any reduction,
the kernel's values are numpy's broadcast to the space).  A reduction's source must
span the space; when it does not at run time, the host runs the group's scalar twin
instead of the vector kernel (``codegen``), which indexes size-1 axes as numpy does.
Static axes need no checks: the classes are exact there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.backend.ascendc.analysis import (
    COL,
    FULL,
    REDUCTIONS,
    ROW,
    SCALAR,
    GroupInfo,
    NotVectorizable,
    body_ops,
)
from pyasc.ir.core import BlockArgument, Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import DYN, TensorType

Source = BlockArgument | Operation
"""A contributor: a group input, or a ``tensor.fill``/``tensor.broadcast`` in the group."""

SHAPE_OPS = (tensor.FillOp, tensor.BroadcastOp)


@dataclass(frozen=True)
class SpanCheck:
    """The broadcast of the run-time extents of ``sources`` along space axis ``axis``
    (no source: 1) is an observed value's numpy extent.  For a reduction's source
    (``result`` is ``None``) it must equal the space's; kernel result ``result`` is
    sliced to it instead (the kernel computed it broadcast along that axis)."""

    axis: int
    sources: tuple[Source, ...]
    result: int | None = None


@dataclass
class Spans:
    """Result of :func:`analyze_spans`."""

    contributors: list[list[Source]] = field(default_factory=list)  # per space axis
    checks: list[SpanCheck] = field(default_factory=list)


def shape_op_dim(op: Operation, axis: int, rank: int) -> Value | None:
    """The operand giving the run-time extent of a fill/broadcast along space ``axis``
    (``None`` when that extent is static)."""
    t = op.result.type
    assert isinstance(t, TensorType)
    local = axis - (rank - t.rank)
    if local < 0 or t.shape[local] != DYN:
        return None
    pos = sum(1 for d in t.shape[:local] if d == DYN)
    return op.operand_values[1 + pos]


def analyze_spans(group: FusionGroupOp, info: GroupInfo) -> Spans:
    """Contributors of each space axis and the checks the host makes before a launch."""
    rank = info.rank
    none: tuple[frozenset[Source], ...] = (frozenset(),) * rank
    args = list(group.body.blocks[0].args)
    src: dict[Value, tuple[frozenset[Source], ...]] = {
        a: _input_sources(a, info) for a in args}
    observed: list[tuple[Value, tuple[int, ...], int | None]] = []
    shape_ops: list[Operation] = []
    for op in body_ops(group):
        if isinstance(op, REDUCTIONS):
            source, axes = op.operand_values[0], tuple(op.attributes["axes"])
            observed.append((source, axes, None))
            src[op.result] = tuple(frozenset() if a in axes else s
                                   for a, s in enumerate(src.get(source, none)))
        elif isinstance(op, SHAPE_OPS):
            _check_dims(op, args, rank)
            shape_ops.append(op)
            src[op.result] = tuple(frozenset({op}) if shape_op_dim(op, a, rank) is not None
                                   and info.space[a] == DYN else frozenset()
                                   for a in range(rank))
        else:
            for r in op.result_values:
                src[r] = tuple(frozenset().union(*(src[v][a] for v in op.operand_values
                                                   if v in src)) for a in range(rank))
    observed += _results(group, info)
    spans = Spans([_contributors(a, args, shape_ops, src) for a in range(rank)])
    for v, axes, result in observed:
        for a in axes:
            have = src.get(v, none)[a]
            if info.space[a] != DYN or set(spans.contributors[a]) <= have:
                continue
            check = SpanCheck(a, tuple(c for c in spans.contributors[a] if c in have), result)
            if check not in spans.checks:
                spans.checks.append(check)
    return spans


def _tail(info: GroupInfo) -> int:
    return info.rank - 1 if info.tail < 0 else info.tail


def _input_sources(arg: BlockArgument, info: GroupInfo) -> tuple[frozenset[Source], ...]:
    """Per space axis, ``{arg}`` where the input's run-time size may size the space."""
    rank, t, cls = info.rank, arg.type, info.classes[arg]
    if not isinstance(t, TensorType) or cls == SCALAR:
        return (frozenset(),) * rank
    ext = (1,) * (rank - t.rank) + tuple(t.shape)
    out = []
    for a in range(rank):
        spans = cls == FULL or (cls == COL and a < rank - 1) or \
            (cls == ROW and not info.planes <= a < _tail(info))
        sized = spans and info.space[a] == DYN and ext[a] != 1
        out.append(frozenset({arg}) if sized else frozenset())
    return tuple(out)


def _check_dims(op: Operation, args: list[BlockArgument], rank: int) -> None:
    """The host must know a fill's run-time extents: group inputs or constants."""
    for a in range(rank):
        d = shape_op_dim(op, a, rank)
        owner = getattr(d, "op", None)
        if d is not None and d not in args and not isinstance(owner, arith.ConstantOp):
            raise NotVectorizable("an array whose size the kernel computes itself", op.loc)


def _results(group: FusionGroupOp,
             info: GroupInfo) -> list[tuple[Value, tuple[int, ...], int | None]]:
    """The kernel's results with the space axes their classes span."""
    term = group.body.blocks[0].terminator
    assert term is not None
    out: list[tuple[Value, tuple[int, ...], int | None]] = []
    for j, v in enumerate(term.operand_values):
        cls = info.classes.get(v)
        if isinstance(v, BlockArgument) or cls not in (FULL, COL):
            continue  # passthrough inputs and whole-array results (their sources count)
        out.append((v, tuple(range(info.rank if cls == FULL else info.rank - 1)), j))
    return out


def _contributors(axis: int, args: list[BlockArgument], shape_ops: list[Operation],
                  src: dict[Value, tuple[frozenset[Source], ...]]) -> list[Source]:
    ins: list[Source] = [a for a in args if a in src[a][axis]]
    return ins + [op for op in shape_ops if op in src[op.result][axis]]
