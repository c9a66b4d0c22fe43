"""What the pool recognizers (``pool_loops``, ``pool_taps``) share: the refusal, fused
groups seen from outside, scalar index arithmetic and which loop variables it depends
on, the comparison of two index expressions, the scan of a function's top-level nests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import ScalarType

T = TypeVar("T")

# element types per fold of the tap pools (sums: float32 only, a float16 fold in place
# rounds every step); the window loops' float16 sums accumulate in float32 (pool_loops)
DTYPES: dict[str, tuple[str, ...]] = {"sum": ("f32",), "max": ("f32", "f16"),
                                      "min": ("f32", "f16")}
_SCALAR_DIALECTS = (arith.__name__, m.__name__)


class NotAPoolLoop(Exception):
    """The nest is something else than a loop of window reductions."""


def outer_value(v: Value) -> Value:
    """``v`` seen from outside fused groups: a group's block argument is its operand."""
    while isinstance(v, BlockArgument) and isinstance(v.block.parent_op, FusionGroupOp):
        v = v.block.parent_op.inputs[v.index]
    return v


def through_group(v: Value) -> Value:
    """A group's result as the value its body yields (in body terms)."""
    if isinstance(v, OpResult) and isinstance(v.op, FusionGroupOp):
        term = v.op.body.blocks[0].terminator
        assert term is not None
        return term.operand_values[v.index]
    return v


def is_scalar_op(op: Operation) -> bool:
    """Pure scalar arithmetic the host can re-compute."""
    return type(op).__module__ in _SCALAR_DIALECTS and not op.region_list and \
        all(isinstance(v.type, ScalarType) for v in [*op.operand_values, *op.result_values])


class Deps:
    """Which induction variables (``i``, ``j``, ``c`` for the loops over leading axes) a
    nest value depends on; None when it is not scalar index arithmetic the host can
    re-compute.  ``top`` is the outermost loop of the nest (``nest`` by default)."""

    def __init__(self, nest: loop.ForOp, inner: loop.ForOp, top: loop.ForOp | None = None,
                 leads: Iterable[loop.ForOp] = ()) -> None:
        self.ivs = {nest.induction_var: "i", inner.induction_var: "j"}
        self.ivs.update({lp.induction_var: "c" for lp in leads})
        self.inside = {r for op in (top or nest).walk() for r in op.result_values}
        self.memo: dict[Value, frozenset[str] | None] = {}

    def of(self, v: Value) -> frozenset[str] | None:
        v = outer_value(v)
        if v in self.ivs:
            return frozenset(self.ivs[v])
        if v not in self.inside:
            return frozenset()
        if v not in self.memo:
            self.memo[v] = None  # a cycle cannot occur in SSA; this guards the recursion
            op = v.op  # type: ignore[attr-defined]
            deps: frozenset[str] | None = frozenset()
            if not is_scalar_op(op):
                deps = None
            for o in op.operand_values if deps is not None else ():
                d = self.of(o)
                deps = None if d is None else deps | d
                if deps is None:
                    break
            self.memo[v] = deps
        return self.memo[v]

    def within(self, v: Value, allowed: str) -> bool:
        d = self.of(v)
        return d is not None and d <= frozenset(allowed)


def same_value(a: Value, b: Value, depth: int = 16) -> bool:
    """``a`` and ``b`` are the same scalar expression (the same ops, attributes and
    leaves; a fused group's copy of the index arithmetic equals the original)."""
    a, b = outer_value(a), outer_value(b)
    if a is b:
        return True
    if depth == 0 or not (isinstance(a, OpResult) and isinstance(b, OpResult)):
        return False
    if type(a.op) is not type(b.op) or a.index != b.index or \
            a.op.attributes != b.op.attributes or not is_scalar_op(a.op):
        return False
    xs, ys = a.op.operand_values, b.op.operand_values
    return len(xs) == len(ys) and all(same_value(x, y, depth - 1)
                                      for x, y in zip(xs, ys, strict=True))


def top_level_matches(fn: FuncOp, match: Callable[[loop.ForOp, FuncOp], T]
                      ) -> dict[Operation, T]:
    """The top-level loop nests of ``fn`` that ``match`` takes (it raises
    :class:`NotAPoolLoop` for the others)."""
    found: dict[Operation, T] = {}
    for op in fn.entry.ops:
        if isinstance(op, loop.ForOp):
            try:
                found[op] = match(op, fn)
            except NotAPoolLoop:
                continue
    return found


__all__ = ["DTYPES", "Deps", "NotAPoolLoop", "is_scalar_op", "outer_value", "same_value",
           "through_group", "top_level_matches"]
