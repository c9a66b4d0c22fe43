"""Loops over kernel taps (``pyasc.ops.max_pool2d``) as a pool kernel: recognition.

``max_pool2d`` is written as one strided slice per kernel tap folded into a carried
array: ``out = tap(0, 0); for ti: for tj: out = np.maximum(out, xp[..., ti + c :: s,
tj + c' :: s'])`` (the fast form on the CPU).  The taps of output ``(i, j)`` are the
elements ``xp[..., c + i * s + ti, c' + j * s' + tj]``, i.e. the window of rows
``[c + i * s, c + i * s + kh)`` and columns ``[c' + j * s', c' + j * s' + kw)``: a pooling
loop whose window bounds are affine in ``i`` and ``j``.  :func:`match_tap_loop` takes:

* an outer ``loop.for`` over ``ti`` from 0 to a constant ``kh``, step 1, carrying one
  array, and as its body (besides scalar arithmetic) an inner loop over ``tj`` from 0 to
  a constant ``kw`` carrying it on, whose body folds a snapshot of a view of ``xp`` into
  it with ``np.maximum``/``np.minimum`` (inside a fused group or not);
* the view's offsets along the last two axes are ``ti + c``/``tj + c'`` (``c``, ``c'``
  not depending on the taps; dilation 1), every other offset, size and step does not
  depend on the taps; the carried array starts as a snapshot of a view of ``xp`` (the
  host checks at run time that it is tap ``(0, 0)``'s view, that the views select whole
  leading axes, and runs the scalar form of the loop otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc.pool_loops import (
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

FOLDS: dict[type[Operation], str] = {arith.MaxOp: "max", arith.MinOp: "min"}


@dataclass
class TapLoop:
    """A matched tap nest (module docstring): ``view`` is the tap's view op (its
    operands are nest values), ``init`` the first snapshot's view (outside the nest)."""

    nest: loop.ForOp
    inner: loop.ForOp
    src: Value
    view: Operation
    init: Operation
    kind: str
    taps: tuple[int, int]
    dtype: ScalarType
    rank: int
    loc: Location
    post: str | None = None
    scale: Value | None = None

    @property
    def ivs(self) -> tuple[Value, Value]:
        return self.nest.induction_var, self.inner.induction_var


def _tap_loop(op: Operation, carried: Value | None) -> tuple[loop.ForOp, int]:
    """A loop from 0 to a constant, step 1, carrying one array (``carried`` when given)."""
    if not isinstance(op, loop.ForOp) or len(op.inits) != 1 or \
            constant_value(op.lower) != 0 or constant_value(op.step) != 1:
        raise NotAPoolLoop("not a loop over taps")
    n = constant_value(op.upper)
    if not isinstance(n, int) or n < 1 or carried is not None and op.inits[0] is not carried:
        raise NotAPoolLoop("not a loop over taps")
    return op, n


def _only(block_ops: list[Operation], kinds: tuple[type, ...]) -> list[Operation]:
    """The ops of a body that are not scalar arithmetic or a yield; all of ``kinds``."""
    rest = [op for op in block_ops if not is_scalar_op(op) and not isinstance(op, loop.YieldOp)]
    if not all(isinstance(op, kinds) for op in rest):
        raise NotAPoolLoop("a tap loop doing other work")
    return rest


def _fold(v: Value, acc: Value) -> tuple[str, Value]:
    """``max(acc, t)`` or ``min(t, acc)``...: the fold's kind and the tap ``t``."""
    if isinstance(v, OpResult) and isinstance(v.op, FusionGroupOp):
        term = v.op.body.blocks[0].terminator
        assert term is not None
        if len(v.op.body.blocks[0].ops) != 2:
            raise NotAPoolLoop("a group doing other work")
        v = term.operand_values[v.index]
    if not (isinstance(v, OpResult) and type(v.op) in FOLDS):
        raise NotAPoolLoop("not a max/min fold")
    a, b = (outer_value(x) for x in v.op.operand_values)
    if a is acc:
        return FOLDS[type(v.op)], b
    if b is acc:
        return FOLDS[type(v.op)], a
    raise NotAPoolLoop("not a fold of the carried array")


def _view_of(t: Value) -> Operation:
    if isinstance(t, OpResult) and isinstance(t.op, mem.ToTensorOp):
        v = t.op.operand_values[0]
        if isinstance(v, OpResult) and isinstance(v.op, mem.SubviewOp) and \
                not v.op.attributes.get("drop"):
            return v.op
    raise NotAPoolLoop("not a snapshot of a view")


def _plus(v: Value, iv: Value, deps: Deps) -> bool:
    """``v`` is ``iv`` or ``iv + c`` with ``c`` free of the taps."""
    v = outer_value(v)
    if v is iv:
        return True
    if isinstance(v, OpResult) and isinstance(v.op, arith.AddOp):
        a, b = (outer_value(x) for x in v.op.operand_values)
        return a is iv and deps.within(b, "") or b is iv and deps.within(a, "")
    return False


def match_tap_loop(nest: Operation, fn: FuncOp) -> TapLoop:
    """The tap loop ``nest`` is (module docstring); raises ``NotAPoolLoop``."""
    outer, kh = _tap_loop(nest, None)
    inner_ops = _only(list(outer.body.blocks[0].ops), (loop.ForOp,))
    if len(inner_ops) != 1:
        raise NotAPoolLoop("not a nest of two tap loops")
    inner, kw = _tap_loop(inner_ops[0], outer.body.blocks[0].args[1])
    body = inner.body.blocks[0]
    _only(list(body.ops), (mem.SubviewOp, mem.ToTensorOp, FusionGroupOp, arith.MaxOp,
                           arith.MinOp))
    term = body.terminator
    outer_term = outer.body.blocks[0].terminator
    assert term is not None and outer_term is not None
    if list(outer_term.operand_values) != list(inner.result_values):
        raise NotAPoolLoop("the outer loop carries something else")
    kind, tap = _fold(term.operand_values[0], body.args[1])
    view, init = _view_of(outer_value(tap)), _view_of(outer.inits[0])
    src = view.operand_values[0]
    t = src.type
    if init.operand_values[0] is not src or not isinstance(t, MemRefType) or \
            not t.is_contiguous or t.element.name not in DTYPES[kind]:
        raise NotAPoolLoop("not taps of one contiguous array")
    deps = Deps(outer, inner)
    offs, sizes, steps = view.parts()  # type: ignore[attr-defined]
    if not (_plus(offs[-2], outer.induction_var, deps) and
            _plus(offs[-1], inner.induction_var, deps)) or \
            not all(deps.within(v, "") for v in [*offs[:-2], *sizes, *steps]):
        raise NotAPoolLoop("taps that are not a window")
    result = outer.result_values[0].type
    if not isinstance(result, TensorType) or result.element != t.element:
        raise NotAPoolLoop("a fold changing the type")
    return TapLoop(outer, inner, src, view, init, kind, (kh, kw), t.element, t.rank, nest.loc)


def find_tap_loops(fn: FuncOp) -> dict[Operation, TapLoop]:
    """The top-level tap nests of ``fn`` that are pools."""
    return top_level_matches(fn, match_tap_loop)


__all__ = ["TapLoop", "find_tap_loops", "match_tap_loop"]
