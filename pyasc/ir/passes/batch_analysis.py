"""Which loop nests ``batch-loops`` may batch, and the class of each value of their body.

A value of the body is ``inv`` (loop-invariant: computed once, before), ``aff`` (an
index ``i_k + c`` of batch axis ``k``), ``row`` (a view of row ``i + c`` of a buffer,
``x[i + c, j + d]`` in a nest: one dropped axis per batch axis), or ``bat`` (depends on
the iteration: gets the batch axes in front).  :func:`analyze` prepares a detached
clone of the nest (``batch_nest``), classifies its body op by op with the table
``_RULES`` and checks the conditions the ``batch_loops`` docstring lists; it raises
:class:`Refuse` (with the reason) otherwise.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.batch_nest import constant_int, flatten, nest
from pyasc.ir.passes.batch_ranges import drop_dead_index_math, simplify_with_ranges
from pyasc.ir.passes.batch_views import fold_views
from pyasc.ir.passes.batch_windows import WindowRefuse, WindowSizes, scalarize_windows
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import TensorType, element_type, f64

INV, AFF, ROW, BAT = "inv", "aff", "row", "bat"
REDUCTIONS = (tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp, tensor.ReduceMinOp,
              tensor.AnyOp, tensor.AllOp)

Pattern = tuple[tuple[int, int] | None, ...]
"""Per axis of an accessed buffer: ``(k, c)`` for index ``i_k + c``, None if invariant."""


class Refuse(Exception):
    """The nest is not provably batchable (the message says why, for tests)."""


class NeedSizes(Refuse):
    """Batchable if the run-time size values ``sizes`` had those static values
    (``batch_windows.WindowSizes``): ``batch_loops`` versions the nest on them."""

    def __init__(self, msg: str, sizes: dict[Value, int],
                 dims: dict[tuple[Value, int], int] | None = None) -> None:
        super().__init__(msg)
        self.sizes = sizes
        self.dims = dims or {}  # (whole buffer, axis) -> extent (``WindowSizes.dims``)


@dataclass
class Access:
    """One memory access of the body: the buffer value it goes through and where."""

    source: Value
    pattern: Pattern | None      # None: a loop-invariant access (a whole-buffer read)
    writes: bool


@dataclass
class Batch:
    """A batchable nest: its innermost body (flattened, on a detached clone) classified."""

    loops: list[loop.ForOp]          # the clone's nest, outermost first
    ops: list[Operation]
    kinds: dict[Value, str] = field(default_factory=dict)
    affine: dict[Value, tuple[int, int]] = field(default_factory=dict)
    accesses: list[Access] = field(default_factory=list)
    rank: int = 0                    # R: the rank of the iteration-dependent arrays

    def kind(self, v: Value) -> str:
        return self.kinds.get(v, INV)

    @property
    def axes(self) -> int:
        return len(self.loops)


# -- classifying the body's ops -----------------------------------------------------

def _invariant(op: Operation, b: Batch) -> bool:
    if any(b.kind(v) != INV for v in op.operand_values):
        return False
    return op.has_trait("pure") or isinstance(op, mem.ToTensorOp)


def _pattern(indices: list[Value], b: Batch) -> Pattern:
    """The access pattern of ``indices``: batch axes in increasing order, each once."""
    pattern = tuple(b.affine.get(v) if b.kind(v) == AFF else None for v in indices)
    if any(b.kind(v) not in (INV, AFF) for v in indices):
        raise Refuse("an index that is not i + constant or loop-invariant")
    axes = [p[0] for p in pattern if p is not None]
    if axes != sorted(set(axes)):
        raise Refuse("batch axes out of order or repeated in one access")
    return pattern


def _subview(op: Operation, b: Batch) -> str:
    """``x[i + c]`` (one loop) or ``x[i + c, j + d]`` (a nest, one dropped axis per
    loop, in nest order: a batch loop around rows): the iteration's row.  A loop's axis
    may be kept with size 1 (``x[i:i + 1]``: a row of shape ``(1, n)``)."""
    assert isinstance(op, mem.SubviewOp)
    offsets, sizes, steps = op.parts()
    if all(b.kind(v) == INV for v in op.operand_values):
        return INV  # a view taken inside the loop but not depending on it
    n = b.axes
    lead = [b.affine.get(v) if b.kind(v) == AFF else None for v in offsets[:n]]
    if b.kind(op.source) != INV or len(offsets) <= n or \
            [p[0] if p else None for p in lead] != list(range(n)):
        raise Refuse("a view that does not select row i + c")
    rest = [*offsets[n:], *sizes, *steps]
    if any(b.kind(v) != INV for v in rest) or \
            any(constant_int(sizes[a]) != 1 or constant_int(steps[a]) != 1
                for a in range(n)):
        raise Refuse("a view of row i with iteration-dependent bounds")
    b.accesses.append(Access(op.source, tuple(lead), False))
    return ROW


def _load(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.LoadOp)
    if b.kind(op.source) != INV:  # (batch_views folds r[0] of a row r = x[i] into x[i, 0])
        raise Refuse("a load from a view of the iteration")
    pattern = _pattern(list(op.indices), b)
    batched = any(p is not None for p in pattern)
    b.accesses.append(Access(op.source, pattern if batched else None, False))
    return BAT if batched else INV


def _store(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.StoreOp)
    pattern = _pattern(list(op.indices), b)
    if b.kind(op.value) not in (INV, BAT) or b.kind(op.dest) != INV:
        raise Refuse("a store of an index or into a view of the iteration")
    b.accesses.append(Access(op.dest, pattern, True))
    return INV


def _write(op: Operation, b: Batch) -> str:
    assert isinstance(op, mem.WriteOp)
    if b.kind(op.dest) != ROW or b.kind(op.value) not in (INV, BAT):
        raise Refuse("a write that is not into row i")
    view = op.dest.op  # type: ignore[attr-defined]
    lead = tuple(b.affine[v] for v in view.parts()[0][:b.axes])
    b.accesses.append(Access(view.source, lead, True))
    return INV


def _to_tensor(op: Operation, b: Batch) -> str:
    if b.kind(op.operand_values[0]) == ROW:
        return BAT
    raise Refuse("a snapshot of an iteration-dependent view")


def _reduce(op: Operation, b: Batch) -> str:
    if b.kind(op.operand_values[0]) != BAT:
        raise Refuse("a reduction of a view")
    if op.attributes["keepdims"] is False and isinstance(op.result.type, TensorType):
        raise Refuse("a reduction over some axes without keepdims changes the rank")
    return BAT


def _index_math(op: Operation, b: Batch) -> str | None:
    """``i + c``, ``c + i``, ``i - c``: an affine index (None when ``op`` is not one)."""
    if not isinstance(op, arith.AddOp | arith.SubOp):
        return None
    lhs, rhs = op.operand_values
    c = constant_int(rhs) if b.kind(lhs) == AFF else None
    if isinstance(op, arith.AddOp) and c is None and b.kind(rhs) == AFF:
        lhs, c = rhs, constant_int(lhs)
    if c is None or b.kind(lhs) != AFF:
        return None
    k, off = b.affine[lhs]
    b.affine[op.result] = (k, off + (c if isinstance(op, arith.AddOp) else -c))
    return AFF


def _elementwise(op: Operation, b: Batch) -> str:
    kinds = {b.kind(v) for v in op.operand_values}
    if not kinds <= {INV, BAT} or op.region_list or len(op.result_values) != 1:
        raise Refuse(f"'{op.name}' on a loop index or a view")
    return BAT


_RULES: dict[type[Operation], Callable[[Operation, Batch], str]] = {
    mem.SubviewOp: _subview, mem.LoadOp: _load, mem.StoreOp: _store,
    mem.WriteOp: _write, mem.ToTensorOp: _to_tensor,
    **{cls: _reduce for cls in REDUCTIONS},
}


def _classify(op: Operation, b: Batch) -> None:
    rule = _RULES.get(type(op))
    if rule is None and type(op).__module__ in (arith.__name__, m.__name__):
        rule = _elementwise
    if op.region_list:
        raise Refuse(f"'{op.name}' inside the loop")
    if _invariant(op, b) and not isinstance(op, mem.SubviewOp):
        kind = INV
        if isinstance(op, mem.ToTensorOp):
            b.accesses.append(Access(op.operand_values[0], None, False))
    elif rule is None:
        raise Refuse(f"'{op.name}' inside the loop")
    else:
        kind = _index_math(op, b) or rule(op, b)
    for r in op.result_values:
        b.kinds[r] = kind


# -- whole-nest conditions ----------------------------------------------------------

def _check_ranks(b: Batch) -> None:
    ranks = {v.type.rank for v, k in b.kinds.items()
             if k == BAT and isinstance(v.type, TensorType)}
    if len(ranks) > 1:
        raise Refuse(f"iteration-dependent arrays of ranks {sorted(ranks)}")
    b.rank = ranks.pop() if ranks else 0
    for op in b.ops:
        if not op.result_values or b.kind(op.result_values[0]) != BAT:
            continue
        for v in op.operand_values:
            if b.kind(v) == INV and isinstance(v.type, TensorType) and v.type.rank > b.rank:
                raise Refuse("an invariant array of higher rank than the rows")
    for op in b.ops:
        if isinstance(op, mem.WriteOp) and b.kind(op.value) == BAT and \
                op.dest.type.rank != b.rank:  # type: ignore[attr-defined]
            raise Refuse("an iteration-dependent value written into a row of another rank")


def _own(access: Access, axes: int) -> bool:
    """Whether an access touches exactly the iteration's own element (or row)."""
    return access.pattern is not None and \
        [p for p in access.pattern if p is not None] == [(k, 0) for k in range(axes)]


def _check_accesses(b: Batch) -> None:
    written = {base_buffer(a.source) for a in b.accesses if a.writes}
    args = {base_buffer(a.source) for a in b.accesses
            if not isinstance(base_buffer(a.source), OpResult)}
    for root in written:
        mine = [a for a in b.accesses if base_buffer(a.source) is root]
        if len({a.source for a in mine}) > 1 or not all(_own(a, b.axes) for a in mine):
            raise Refuse("a written buffer is also reached at other elements or through "
                         "another view")
        if not isinstance(root, OpResult) and len(args) > 1:
            raise Refuse("a written argument beside other arguments (they may alias)")
        if isinstance(root, OpResult) and b.loops[0].is_ancestor_of(root.op):
            raise Refuse("a buffer allocated inside the loop")


def _body(loops: list[loop.ForOp]) -> list[Operation]:
    """The outer levels' invariant ops, then the innermost body (without yields)."""
    ops: list[Operation] = []
    for lp in loops:
        inner = loops[loops.index(lp) + 1] if lp is not loops[-1] else None
        ops += [op for op in lp.body.blocks[0].ops
                if op is not inner and not isinstance(op, loop.YieldOp)]
    return ops


def _prepare(top: loop.ForOp) -> list[loop.ForOp]:
    loops = nest(top)
    if any(lp.iter_args or constant_int(lp.step) != 1 for lp in loops):
        raise Refuse("a loop with carried values or a step other than 1")
    if not flatten(loops[-1].body.blocks[0]):
        raise Refuse("a loop in the body that is not small and static")
    # ``x[c][i + a][j + b]`` is ``x[c, i + a, j + b]``
    fold_views(loops[-1].body.blocks[0], [lp.body.blocks[0] for lp in loops[:-1]])
    # numpy's clamping of a window slice, decided by the loops' bounds (run-time shapes)
    simplify_with_ranges(loops[-1].body.blocks[0], loops)
    try:  # window slices (``img[i-5:i+6, j-5:j+6]``) become their elements
        scalarize_windows(loops[-1].body.blocks[0], {lp.induction_var for lp in loops})
    except WindowSizes as exc:
        raise NeedSizes(str(exc), exc.sizes, exc.dims) from None
    except WindowRefuse as exc:
        raise Refuse(str(exc)) from None
    drop_dead_index_math(loops[-1].body.blocks[0])
    return loops


def has_float64_batch(b: Batch) -> bool:
    """Whether an iteration-dependent value of the nest holds float64."""
    return any(k == BAT and element_type(v.type) == f64 for v, k in b.kinds.items())


def analyze(for_op: loop.ForOp) -> Batch:
    """Classify a detached, flattened clone of the nest rooted at ``for_op``; raises
    :class:`Refuse` when it is not provably batchable."""
    clone = for_op.clone({})
    assert isinstance(clone, loop.ForOp)
    try:
        loops = _prepare(clone)
        b = Batch(loops, _body(loops))
        outer = {op for lp in loops[:-1] for op in lp.body.blocks[0].ops}
        for k, lp in enumerate(loops):
            b.kinds[lp.induction_var] = AFF
            b.affine[lp.induction_var] = (k, 0)
        for op in b.ops:
            _classify(op, b)
            if op in outer and (op.has_trait("writes") or
                                any(b.kind(r) != INV for r in op.result_values)):
                raise Refuse("work between the loops of the nest")
        if not any(a.writes for a in b.accesses):
            raise Refuse("the loop writes nothing")
        _check_ranks(b)
        _check_accesses(b)
    except Refuse:
        clone.erase()
        raise
    return b
