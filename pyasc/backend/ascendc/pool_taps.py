"""Loops over kernel taps (``pyasc.ops.max_pool2d``, ``avg_pool2d``) as a pool kernel:
recognition.

A pool written with one strided view per kernel tap, folded into an array (the fast
form on the CPU): output ``(i, j)`` folds the elements ``xp[..., off_r(ti) + i * s,
off_c(tj) + j * s']`` over the taps ``ti < kh``, ``tj < kw``.  When the tap offsets are
affine, ``off(t) = off(0) + t * d`` (``d`` the dilation), that is the window of rows
``[off_r(0) + i * s, ... + (kh - 1) * d + 1)`` with row step ``d``: a pooling loop whose
window bounds are affine in ``i`` and ``j``.  :func:`match_tap_loop` takes two forms:

* **carried**: ``out = tap(0, 0); for ti: for tj: out = np.maximum(out, tap(ti, tj))``
  (two loops from 0 to constants ``kh``, ``kw``, step 1, carrying one array; the carried
  array starts as a snapshot of a view of the same array, which the host checks is tap
  ``(0, 0)``; max/min only, a second fold of tap ``(0, 0)`` being harmless);
* **in place**: ``acc = np.full(shape, neutral); for ti: for tj: acc[...] = fold(acc,
  tap(ti, tj))`` (``+=`` for sums): ``mem.write`` of the fold of a snapshot of ``acc``
  into ``acc`` itself, ``acc`` a buffer of the function last written by a ``mem.fill``
  with the fold's neutral element (0, -inf, +inf) before the nest; the loops may carry
  index values only as Python's loop variables (their last value after the nest).

In both the fold is ``np.maximum``/``np.minimum``/``+`` of the carried array and a
snapshot of a view of one contiguous array ``xp`` (inside a fused group or not).  The
view's row offset and size may depend on ``ti`` alone, its column offset and size on
``tj`` alone, everything else on neither; the host evaluates them for every tap (the
tap counts are constants) and checks at run time that the offsets are affine with a
positive step, the sizes equal, and the views take whole leading axes (a slice clamped
by ``dynamic_shape``'s run-time bounds is then the same window), else it runs the scalar
form of the nest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.backend.ascendc.pool_match import (
    DTYPES,
    Deps,
    NotAPoolLoop,
    is_scalar_op,
    outer_value,
    top_level_matches,
)
from pyasc.ir.core import Location, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import MemRefType, ScalarType, TensorType

FOLDS: dict[type[Operation], str] = {arith.MaxOp: "max", arith.MinOp: "min",
                                      arith.AddOp: "sum"}
NEUTRAL = {"max": float("-inf"), "min": float("inf"), "sum": 0.0}


@dataclass
class TapLoop:
    """A matched tap nest (module docstring): ``view`` is the tap's view op (its
    operands are nest values); ``init`` the first snapshot's view (carried form) or
    ``acc`` the buffer folded in place; ``last`` the constant values of the nest's
    index results (Python's loop variables after the loops); ``group`` a division of
    ``acc`` by the 2-D array ``scale`` fused into the kernel (``post`` = "div") and
    ``between`` the snapshots from the nest to it."""

    nest: loop.ForOp
    inner: loop.ForOp
    src: Value
    view: Operation
    init: Operation | None
    acc: Value | None
    kind: str
    taps: tuple[int, int]
    dtype: ScalarType
    rank: int
    loc: Location
    last: dict[Value, int] = field(default_factory=dict)
    post: str | None = None
    scale: Value | None = None
    group: Operation | None = None
    between: list[Operation] = field(default_factory=list)

    @property
    def ivs(self) -> tuple[Value, Value]:
        return self.nest.induction_var, self.inner.induction_var

    @property
    def top(self) -> loop.ForOp:
        """The outermost loop (the host re-computes the values inside it)."""
        return self.nest

    @property
    def acc_dtype(self) -> ScalarType:
        """The type the kernel folds in: the taps' own (a fold in place rounds)."""
        return self.dtype

    @property
    def red_dtype(self) -> ScalarType:
        """The type of the post-operation (the division by the divisor's taps)."""
        return self.dtype


def _tap_loop(op: Operation) -> tuple[loop.ForOp, int]:
    """A loop from 0 to a constant, step 1."""
    if not isinstance(op, loop.ForOp) or constant_value(op.lower) != 0 or \
            constant_value(op.step) != 1:
        raise NotAPoolLoop("not a loop over taps")
    n = constant_value(op.upper)
    if not isinstance(n, int) or n < 1:
        raise NotAPoolLoop("not a loop over taps")
    return op, n


def _only(block_ops: list[Operation], kinds: tuple[type, ...]) -> list[Operation]:
    """The ops of a body that are not scalar arithmetic or a yield; all of ``kinds``."""
    rest = [op for op in block_ops if not is_scalar_op(op) and not isinstance(op, loop.YieldOp)]
    if not all(isinstance(op, kinds) for op in rest):
        raise NotAPoolLoop("a tap loop doing other work")
    return rest


def _fold(v: Value, is_acc: Callable[[Value], bool]) -> tuple[str, Value]:
    """``max(acc, t)`` or ``t + acc``...: the fold's kind and the tap ``t``."""
    if isinstance(v, OpResult) and isinstance(v.op, FusionGroupOp):
        term = v.op.body.blocks[0].terminator
        assert term is not None
        if len(v.op.body.blocks[0].ops) != 2:
            raise NotAPoolLoop("a group doing other work")
        v = term.operand_values[v.index]
    if not (isinstance(v, OpResult) and type(v.op) in FOLDS):
        raise NotAPoolLoop("not a max/min/sum fold")
    a, b = (outer_value(x) for x in v.op.operand_values)
    if is_acc(a) and not is_acc(b):
        return FOLDS[type(v.op)], b
    if is_acc(b) and not is_acc(a):
        return FOLDS[type(v.op)], a
    raise NotAPoolLoop("not a fold of the carried array")


def _view_of(t: Value) -> Operation:
    if isinstance(t, OpResult) and isinstance(t.op, mem.ToTensorOp):
        v = t.op.operand_values[0]
        if isinstance(v, OpResult) and isinstance(v.op, mem.SubviewOp) and \
                not v.op.attributes.get("drop"):
            return v.op
    raise NotAPoolLoop("not a snapshot of a view")


def _snapshot_of(v: Value, buf: Value) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp) and \
        v.op.operand_values[0] is buf


def _last_values(outer: loop.ForOp, inner: loop.ForOp, kh: int, kw: int) -> dict[Value, int]:
    """The nest's index results when they are Python's loop variables (the outer loop
    yields its own index or the inner loop's result, the inner loop its own index)."""
    oterm, iterm = outer.body.blocks[0].terminator, inner.body.blocks[0].terminator
    assert oterm is not None and iterm is not None
    last: dict[Value, int] = {}
    for res, v in zip(outer.result_values, oterm.operand_values, strict=True):
        if v is outer.induction_var:
            last[res] = kh - 1
        elif isinstance(v, OpResult) and v.op is inner and \
                iterm.operand_values[v.index] is inner.induction_var:
            last[res] = kw - 1
        else:
            raise NotAPoolLoop("the tap loops carry other values")
    return last


def _filled_before(buf: Value, nest: Operation, fn: FuncOp, kind: str) -> bool:
    """The last top-level op before ``nest`` using ``buf`` fills it with the neutral
    element of ``kind`` (nothing after the fill reads or writes it before the nest)."""
    last = None
    for op in fn.entry.ops:
        if op is nest:
            break
        if any(v is buf for v in op.operand_values) or any(
                v is buf for o in op.walk() for v in o.operand_values):
            last = op
    return isinstance(last, mem.FillOp) and last.operand_values[1] is buf and \
        constant_value(last.operand_values[0]) == NEUTRAL[kind]


def _inner(outer: loop.ForOp) -> tuple[loop.ForOp, int]:
    inner_ops = _only(list(outer.body.blocks[0].ops), (loop.ForOp,))
    if len(inner_ops) != 1:
        raise NotAPoolLoop("not a nest of two tap loops")
    inner, kw = _tap_loop(inner_ops[0])
    _only(list(inner.body.blocks[0].ops), (mem.SubviewOp, mem.ToTensorOp, FusionGroupOp,
                                           mem.WriteOp, *FOLDS))
    return inner, kw


def _carried(outer: loop.ForOp, inner: loop.ForOp) -> tuple[str, Operation, Operation]:
    """The carried form: the fold's kind, the tap's view and the first snapshot's."""
    body = inner.body.blocks[0]
    term, oterm = body.terminator, outer.body.blocks[0].terminator
    assert term is not None and oterm is not None
    if len(outer.inits) != 1 or len(inner.inits) != 1 or \
            inner.inits[0] is not outer.body.blocks[0].args[1] or \
            list(oterm.operand_values) != list(inner.result_values):
        raise NotAPoolLoop("the outer loop carries something else")
    kind, tap = _fold(term.operand_values[0], lambda v: v is body.args[1])
    if kind == "sum":
        raise NotAPoolLoop("a carried sum from tap (0, 0) would count it twice")
    return kind, _view_of(outer_value(tap)), _view_of(outer.inits[0])


def _in_place(outer: loop.ForOp, inner: loop.ForOp, fn: FuncOp) -> tuple[str, Operation, Value]:
    """The in-place form: the fold's kind, the tap's view and the buffer folded into."""
    writes = [op for op in inner.body.blocks[0].ops if isinstance(op, mem.WriteOp)]
    if len(writes) != 1:
        raise NotAPoolLoop("not one in-place fold")
    acc = writes[0].operand_values[1]
    kind, tap = _fold(writes[0].operand_values[0], lambda v: _snapshot_of(v, acc))
    inside = {id(op) for op in outer.walk()}
    if any(id(use) in inside and use is not writes[0] and not isinstance(use, mem.ToTensorOp)
           for use, _ in acc.uses):
        raise NotAPoolLoop("the nest uses the accumulator otherwise")
    if not (isinstance(acc, OpResult) and isinstance(acc.op, mem.AllocOp)) or \
            not _filled_before(acc, outer, fn, kind):
        raise NotAPoolLoop("an accumulator not filled with the fold's neutral element")
    return kind, _view_of(outer_value(tap)), acc


def match_tap_loop(nest: Operation, fn: FuncOp) -> TapLoop:
    """The tap loop ``nest`` is (module docstring); raises ``NotAPoolLoop``."""
    outer, kh = _tap_loop(nest)
    inner, kw = _inner(outer)
    carried = len(outer.inits) == 1 and isinstance(outer.inits[0].type, TensorType)
    init: Operation | None = None
    acc: Value | None = None
    last: dict[Value, int] = {}
    if carried:
        kind, view, init = _carried(outer, inner)
    else:
        kind, view, acc = _in_place(outer, inner, fn)
        last = _last_values(outer, inner, kh, kw)
    src = view.operand_values[0]
    t = src.type
    if init is not None and init.operand_values[0] is not src or \
            not isinstance(t, MemRefType) or not t.is_contiguous or \
            t.element.name not in DTYPES[kind]:
        raise NotAPoolLoop("not taps of one contiguous array")
    if acc is not None and acc.type.element != t.element:  # type: ignore[attr-defined]
        raise NotAPoolLoop("a fold changing the type")
    deps = Deps(outer, inner)
    offs, sizes, steps = view.parts()  # type: ignore[attr-defined]
    if not all(deps.within(v, "i") for v in (offs[-2], sizes[-2])) or \
            not all(deps.within(v, "j") for v in (offs[-1], sizes[-1])) or \
            not all(deps.within(v, "") for v in [*offs[:-2], *sizes[:-2], *steps]):
        raise NotAPoolLoop("taps that are not a window")
    result = outer.result_values[0].type if carried else None
    if carried and not (isinstance(result, TensorType) and result.element == t.element):
        raise NotAPoolLoop("a fold changing the type")
    found = TapLoop(outer, inner, src, view, init, acc, kind, (kh, kw), t.element, t.rank,
                    nest.loc, last)
    if acc is not None:
        _fuse_division(found, fn)
    return found


def _fuse_division(t: TapLoop, fn: FuncOp) -> None:
    """An average pool's ``acc / count`` right after the nest (only snapshots between),
    ``count`` a 2-D buffer of the output's rows and columns (checked on the host), and
    ``acc`` read by nothing else after the nest: the kernel divides each output row by
    ``count``'s row (``post`` = "div"), writing the quotient into ``acc``."""
    ops = list(fn.entry.ops)
    rest = ops[ops.index(t.nest) + 1:]
    between = []
    while rest and isinstance(rest[0], mem.ToTensorOp):
        between.append(rest.pop(0))
    if not rest or t.kind != "sum":
        return
    group, div = rest[0], rest[0]  # a group of the division, or the division alone
    if isinstance(group, FusionGroupOp):
        body = group.body.blocks[0].ops
        div = body[0] if len(body) == 2 and len(group.result_values) == 1 else group
    if not isinstance(div, arith.DivOp):
        return
    a, b = (outer_value(v) for v in div.operand_values)
    if not (_snapshot_of(a, t.acc) and isinstance(b, OpResult) and
            isinstance(b.op, mem.ToTensorOp)):
        return
    count = b.op.operand_values[0]
    ct = count.type
    if not (isinstance(ct, MemRefType) and ct.rank == 2 and ct.element == t.dtype and
            ct.is_contiguous) or count is t.acc:
        return
    before = {id(op) for op in ops[:ops.index(t.nest)]}
    nested = {id(op) for op in t.nest.walk()}
    for use, _ in t.acc.uses:  # type: ignore[union-attr]
        if id(use) in before or id(use) in nested:
            continue  # the fill before the nest, the fold in it
        if use in between and all(u is group for u, _ in use.result_values[0].uses):
            continue  # the dividend's snapshot
        return
    t.post, t.scale, t.group, t.between = "div", count, group, between


def find_tap_loops(fn: FuncOp) -> dict[Operation, TapLoop]:
    """The top-level tap nests of ``fn`` that are pools."""
    return top_level_matches(fn, match_tap_loop)


__all__ = ["TapLoop", "find_tap_loops", "match_tap_loop"]
