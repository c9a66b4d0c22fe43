"""Schedule analysis of a fused group: its iteration space and each value's *class*.

A group iterates over a space ``S`` (the shape of its largest values).  Every value of
the group body is classified relative to ``S``:

* ``full``: one element per element of ``S``;
* ``col``: one element per row (``S[:-1] + (1,)``, or ``S[:-1]`` for a reduction without
  keepdims: "squeezed"), e.g. a row maximum;
* ``row``: one row broadcast over the rows (``(..., 1, C)``), e.g. LayerNorm's gamma;
* ``scalar``: one value (kernel scalar arguments, constants, all-ones tensors);
* ``partial``: the result of a reduction over every axis (per-block partial results).

A reduction over every axis but the last (a *column* reduction, ``x.sum(axis=0)`` of a
matrix) gives a ``row`` value: one element per column.  More generally a reduction over
a run of axes ``j .. t-1`` with ``t <= k-1`` (``x.sum(axis=1)`` of ``(B, N, D)``: ``j =
1, t = 2``; of ``(B, N, H, W)``: ``t = 2``, columns ``H * W``) is a column reduction of
each of the ``prod(S[:j])`` *planes* of ``prod(S[j:t])`` rows by ``prod(S[t:])``
columns (``info.planes``, ``info.tail``).  A ``row`` value is then one row per plane
(``(B, 1, D)``; ``(B, D)`` without keepdims when ``j > 0``: *plane-squeezed*, which
numpy would align with ``(N, D)``, so only other such values may meet it).

The schedule follows: ``reduce`` when the group reduces over every axis (no ``col``/
``row`` values allowed then), ``cols`` when it has column reductions (no ``col`` values
then: blocks own column ranges and stream the rows, ``vec_cols``), ``rows`` when it has
``col``/``row`` values (reductions over the last axis), else ``flat``.  Anything else
raises :class:`NotVectorizable`, and the group is run by the scalar fallback instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.ir.core import BlockArgument, Location, Operation, OpResult, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import DYN, ScalarType, TensorType, Type

FULL, COL, ROW, SCALAR, PARTIAL = "full", "col", "row", "scalar", "partial"
REDUCTIONS = (tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp)


class NotVectorizable(Exception):
    """The group does not fit a vector schedule; ``reason`` says why (for the warning)."""

    def __init__(self, reason: str, loc: Location | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.loc = loc


@dataclass
class GroupInfo:
    """Result of :func:`analyze`."""

    schedule: str                      # flat | rows | reduce
    space: tuple[int, ...]             # S (DYN for run-time dims)
    classes: dict[Value, str] = field(default_factory=dict)
    squeezed: set[Value] = field(default_factory=set)   # col values of shape S[:-1]
    row_reductions: set[Operation] = field(default_factory=set)
    col_reductions: set[Operation] = field(default_factory=set)  # over axes j .. k-2
    planes: int = 0                    # j: the leading axes a column reduction keeps
    tail: int = -1                     # t: its first trailing kept axis (-1: k-1)
    plane_squeezed: set[Value] = field(default_factory=set)  # (B, D) row values

    @property
    def rank(self) -> int:
        return len(self.space)


def _shape(t: Type) -> tuple[int, ...] | None:
    return t.shape if isinstance(t, TensorType) else None


def _dims_match(a: int, b: int) -> bool:
    return a == b or DYN in (a, b)


def classify_type(t: Type, space: tuple[int, ...], planes: int = 0,
                  tail: int = -1) -> str | None:
    """The class of a value of type ``t`` given to a group iterating over ``space``
    (a ``row`` value has ones on the axes ``planes .. tail-1``, which a column
    reduction reduces, and broadcasts over the others: the host makes it whole)."""
    shape = _shape(t)
    if shape is None:
        return SCALAR
    k = len(space)
    if len(shape) > k:
        return None
    if all(d == 1 for d in shape):
        return SCALAR
    ext = (1,) * (k - len(shape)) + tuple(shape)
    if all(_dims_match(a, b) for a, b in zip(ext, space, strict=True)) and \
            all(not (a == 1 and b != 1) for a, b in zip(ext, space, strict=True)):
        return FULL
    if k >= 2 and ext[-1] == 1 and all(_dims_match(a, b) and not (a == 1 and b != 1)
                                       for a, b in zip(ext[:-1], space[:-1], strict=True)):
        return COL
    tail = k - 1 if tail < 0 else tail
    kept = [(a, b) for i, (a, b) in enumerate(zip(ext, space, strict=True))
            if i < planes or i >= tail]
    if k >= 2 and all(d == 1 for d in ext[planes:tail]) and \
            all(_dims_match(a, b) or a == 1 for a, b in kept):
        return ROW
    return None


def _column_axes(group: FusionGroupOp, ops: list[Operation],
                 space: tuple[int, ...]) -> tuple[int, int]:
    """``(j, t)`` of the group's column reductions (over the axes ``j .. t-1``,
    ``t <= k-1``; ``(0, k-1)`` when there are none).  Other runs raise later.  A group
    without reductions that reads one row per plane (``x - m`` with ``m`` of shape
    ``(B, 1, D)``, the consumer of a plane reduction) takes its ``j >= 1`` from that
    operand: alone it plans as the ``cols`` kernel it then merges with (grouping)."""
    k, found = len(space), set()
    for op in ops:
        axes = tuple(op.attributes["axes"]) if isinstance(op, REDUCTIONS) else ()
        if axes and axes[-1] < k - 1 and axes == tuple(range(axes[0], axes[-1] + 1)):
            found.add((axes[0], axes[-1] + 1))
    if not found and not any(isinstance(op, REDUCTIONS) for op in ops):
        sources = dict(zip(group.body.blocks[0].args, group.inputs, strict=True))
        values = [*sources, *(op.result for op in ops if isinstance(op, tensor.BroadcastOp))]
        found = {run for v in values if (run := _ones_run(v.type, space)) is not None
                 and _reduced_over(_source(v, sources), run)}
    if len(found) > 1:
        raise NotVectorizable("column reductions over different axes in one kernel")
    return found.pop() if found else (0, k - 1)


def _source(v: Value, sources: dict[Value, Value]) -> Value | None:
    """The value outside the group that ``v`` (a block argument, or a broadcast of one)
    stands for."""
    if isinstance(v, OpResult) and isinstance(v.op, tensor.BroadcastOp):
        v = v.op.operand_values[0]
    return sources.get(v)


def _reduced_over(v: Value | None, run: tuple[int, int], depth: int = 8) -> bool:
    """Whether ``v`` is computed from a reduction over the axes of ``run`` (``m / n``
    of ``m = x.sum(axis=1, keepdims=True)``; inside a fusion group too): the consumer
    of a plane reduction, not any array with a size-one axis (a conv's window broadcast
    over the output planes, ``(N, 1, H, W)``, is a stencil's, not one row per plane)."""
    if not isinstance(v, OpResult) or depth == 0:
        return False
    want = tuple(range(*run))
    ops = list(v.op.walk()) if isinstance(v.op, FusionGroupOp) else [v.op]
    if any(isinstance(o, REDUCTIONS) and tuple(o.attributes["axes"]) == want for o in ops):
        return True
    return any(_reduced_over(u, run, depth - 1) for u in v.op.operand_values)


def _ones_run(t: Type, space: tuple[int, ...]) -> tuple[int, int] | None:
    """``(j, t)`` when a value of type ``t`` is one row per plane of ``space``: ones
    exactly on the axes ``j .. t-1`` (``1 <= j``, ``t <= k-1``), the space's extents
    elsewhere."""
    shape, k = _shape(t), len(space)
    if shape is None or len(shape) != k:
        return None
    ones = [i for i, (a, b) in enumerate(zip(shape, space, strict=True)) if a == 1 and b != 1]
    if not ones or ones[0] < 1 or ones[-1] >= k - 1 or ones != list(range(ones[0], ones[-1] + 1)):
        return None
    return ones[0], ones[-1] + 1


def _domain(op: Operation) -> tuple[int, ...] | None:
    if isinstance(op, REDUCTIONS):
        return _shape(op.operand_values[0].type)
    shapes = [_shape(r.type) for r in op.result_values]
    shapes = [s for s in shapes if s is not None]
    return max(shapes, key=len) if shapes else None


def merge_space(ops: list[Operation]) -> tuple[int, ...]:
    """The iteration space of a group body's ops (raises NotVectorizable when their
    shapes do not merge)."""
    domains = [d for d in (_domain(op) for op in ops) if d is not None]
    if not domains:
        raise NotVectorizable("the group computes no arrays")
    k = max(len(d) for d in domains)
    space = [DYN] * k
    for d in (d for d in domains if len(d) == k):
        for i, (cur, new) in enumerate(zip(space, d, strict=True)):
            if new != DYN and new != 1:
                if cur not in (DYN, 1) and cur != new:
                    raise NotVectorizable(f"arrays of shapes {tuple(space)} and {d} in one kernel")
                space[i] = new
            elif new == 1 and cur == DYN and all(x[i] in (1,) for x in domains if len(x) == k):
                space[i] = 1
    return tuple(space)


def body_ops(group: FusionGroupOp) -> list[Operation]:
    """The group's ops without the terminator."""
    return [op for op in group.body.blocks[0].ops if op.name != "fusion.yield"]


def analyze(group: FusionGroupOp) -> GroupInfo:
    """Classify the values of ``group`` and pick its schedule (or raise NotVectorizable)."""
    ops = body_ops(group)
    space = merge_space(ops)
    if DYN in space:
        _check_one_computation(ops)
    info = GroupInfo("flat", space)
    info.planes, info.tail = _column_axes(group, ops, space)
    for arg in group.body.blocks[0].args:
        cls = classify_type(arg.type, space, info.planes, info.tail)
        if cls is None:
            raise NotVectorizable(f"input of type {arg.type} does not broadcast into "
                                  f"the kernel's iteration space")
        info.classes[arg] = cls
    for op in ops:
        _classify_op(op, info)
    _check_outputs(group, info)
    _pick_schedule(info, ops)
    return info


def _check_one_computation(ops: list[Operation]) -> None:
    """Arrays of run-time sizes share a kernel only when they are one computation
    (linked through array operands): then numpy's broadcasting relates their sizes and
    the host checks it.  Independent ones (``np.exp(x[::2])`` beside ``x.any()``) have
    no such relation, so the host's broadcast check would reject sizes numpy accepts."""
    root: dict[Value, Value] = {}

    def find(v: Value) -> Value:
        while root.setdefault(v, v) is not v:
            v = root[v]
        return v

    for op in ops:
        arrays = [v for v in (*op.operand_values, *op.result_values)
                  if isinstance(v.type, TensorType)]
        for v in arrays:
            root[find(v)] = find(arrays[0])
    if len({find(v) for v in list(root)}) > 1:
        raise NotVectorizable("independent computations on arrays of run-time sizes")


def _classify_op(op: Operation, info: GroupInfo) -> None:
    if isinstance(op, REDUCTIONS):
        _classify_reduction(op, info)
        return
    operand_classes = [info.classes[v] for v in op.operand_values]
    if PARTIAL in operand_classes:
        raise NotVectorizable("a whole-array reduction is used inside the same kernel",
                              op.loc)
    if isinstance(op, tensor.BroadcastOp | tensor.FillOp):
        cls = classify_type(op.result.type, info.space, info.planes, info.tail)
    elif not op.result_values:
        raise NotVectorizable(f"'{op.name}' has no result", op.loc)
    else:
        cls = _join(operand_classes, op, info)
    if cls is None or len(op.result_values) != 1:
        raise NotVectorizable(f"'{op.name}' does not fit the kernel's iteration space",
                              op.loc)
    result = op.result
    if cls == COL and any(v in info.squeezed for v in op.operand_values):
        info.squeezed.add(result)
    if any(v in info.plane_squeezed for v in op.operand_values):
        info.plane_squeezed.add(result)
    if cls == SCALAR and isinstance(result.type, TensorType):
        raise NotVectorizable("a one-element array computed inside a kernel", op.loc)
    info.classes[result] = cls


def _join(classes: list[str], op: Operation, info: GroupInfo) -> str | None:
    kinds = set(classes) - {SCALAR}
    squeezed = [v for v in op.operand_values if v in info.squeezed]
    rank = len(_shape(op.result_values[0].type) or ()) if op.result_values else 0
    # numpy aligns a reduced array without keepdims, (R,), with the *last* axis of the
    # other operands: against a full array, a column (R, 1) or a (1, 1) scalar the
    # result gains an axis and the reduced values run along it (indexed by column)
    if squeezed and (kinds - {COL} or any(len(_shape(v.type) or ()) < rank
                                           for v in squeezed)):
        raise NotVectorizable("a reduced array without keepdims broadcast against a "
                              "full one or a column", op.loc)
    flat = [v for v in op.operand_values if v in info.plane_squeezed]
    if flat and any(v not in info.plane_squeezed and info.classes[v] != SCALAR
                    for v in op.operand_values):
        raise NotVectorizable("a plane reduction without keepdims broadcast against "
                              "another array", op.loc)
    if not kinds:
        return SCALAR
    if FULL in kinds or kinds == {COL, ROW}:
        return FULL
    return kinds.pop() if len(kinds) == 1 else None


def _classify_reduction(op: Operation, info: GroupInfo) -> None:
    src = op.operand_values[0]
    if info.classes[src] != FULL:
        raise NotVectorizable("only full-size arrays are reduced in a kernel", op.loc)
    k = info.rank
    axes = tuple(op.attributes["axes"])
    keep = op.attributes["keepdims"]
    if axes == (k - 1,) and (k >= 2 or _one_row(op, info)):
        info.row_reductions.add(op)
        info.classes[op.result] = COL
        if not keep and k >= 2:
            info.squeezed.add(op.result)
    elif axes == tuple(range(k)):
        info.classes[op.result] = PARTIAL
    elif k >= 2 and axes == tuple(range(info.planes, info.tail)):
        # one value per column (of each plane): (1, ..., 1, C) with keepdims, else
        # (C,), which numpy aligns with the last axis too; (B, D) does not align
        info.col_reductions.add(op)
        info.classes[op.result] = ROW
        if info.planes and not keep:
            info.plane_squeezed.add(op.result)
    else:
        raise NotVectorizable(f"reduction over axes {axes} of a rank-{k} array", op.loc)


def _one_row(op: Operation, info: GroupInfo) -> bool:
    """Whether a reduction of a 1-D array is a row reduction (of its one row, in one
    block, the whole row in one UB tile) rather than a whole-array one (split across
    blocks, finished by the host).  Only when the length is static (the planner then
    checks that the row fits) and the kernel uses the result as an array, as
    ``x - x.sum()`` or ``x.sum(keepdims=True) * 2`` do; ``x.sum() * 2`` is a
    whole-array reduction like any other."""
    return info.space[0] != DYN and (op.attributes["keepdims"] or _feeds_arrays(op.result))


def _feeds_arrays(v: Value) -> bool:
    """True when an array of more than one element depends on ``v`` inside the group
    (directly or through scalar ops)."""
    todo, seen = [v], set()
    while todo:
        for user, _ in todo.pop().uses:
            if user.name == "fusion.yield" or user in seen:
                continue
            seen.add(user)
            shapes = [_shape(r.type) for r in user.result_values]
            if any(s is not None and any(d != 1 for d in s) for s in shapes):
                return True
            todo.extend(user.result_values)
    return False


def _check_outputs(group: FusionGroupOp, info: GroupInfo) -> None:
    term = group.body.blocks[0].terminator
    assert term is not None
    for v in term.operand_values:
        cls = info.classes[v]
        if isinstance(v, BlockArgument):
            continue
        if cls == SCALAR or (cls == ROW and not info.col_reductions):
            raise NotVectorizable(f"a {cls} result of a kernel", v.op.loc)  # type: ignore
        if cls == ROW and not _whole_row(v, info):
            raise NotVectorizable("a row result broadcast over the columns or planes",
                                  v.op.loc)  # type: ignore


def _whole_row(v: Value, info: GroupInfo) -> bool:
    """Whether row result ``v`` has every kept axis of the space (``(B, 1, D)`` or
    ``(B, D)``, not a ``(D,)`` operand seen over ``(B, N, D)``): the kernel writes
    one row of all columns per plane."""
    shape, space, j, t = _shape(v.type) or (), info.space, info.planes, info.tail
    kept = (*space[:j], *space[t:])
    if v in info.plane_squeezed:
        return len(shape) == len(kept) and \
            all(_dims_match(a, b) for a, b in zip(shape, kept, strict=True))
    ext = (1,) * (len(space) - len(shape)) + tuple(shape)
    have = (*ext[:j], *ext[t:])
    return all(_dims_match(a, b) and not (a == 1 and b != 1)
               for a, b in zip(have, kept, strict=True))


def _pick_schedule(info: GroupInfo, ops: list[Operation]) -> None:
    classes = set(info.classes.values())
    if PARTIAL in classes:
        if classes & {COL, ROW}:
            raise NotVectorizable("a whole-array reduction next to row-wise values")
        info.schedule = "reduce"
    elif info.col_reductions or (ROW in classes and info.planes):
        if COL in classes or info.row_reductions:
            raise NotVectorizable("column and row reductions (or per-row values) in one "
                                  "kernel")
        info.schedule = "cols"
    elif classes & {COL, ROW} or info.row_reductions:
        info.schedule = "rows"
    else:
        info.schedule = "flat"
    if info.schedule == "rows" and info.rank == 0:
        raise NotVectorizable("row-wise kernel over a scalar")


def is_vector_op(op: Operation) -> bool:
    """Ops a vector kernel may contain (before dtype checks)."""
    if isinstance(op, (*REDUCTIONS, tensor.BroadcastOp, tensor.FillOp)):
        return True
    if isinstance(op, arith.ConstantOp):
        return isinstance(op.result.type, ScalarType)
    return type(op).__module__ in (arith.__name__, m.__name__)
