"""A whole-window reduction as a chain of scalar ops, one window element at a time.

``batch_windows`` scalarizes a window's ``sum``/``max``/``min`` into one accumulator
per reduction (:class:`Chain`), stepped once per element of the window.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.types import ScalarType, bf16, f16, f32, i1

CHAIN = {tensor.SumOp: arith.AddOp, tensor.ReduceMaxOp: arith.MaxOp,
         tensor.ReduceMinOp: arith.MinOp}
BOOL_CHAIN = {tensor.ReduceMaxOp: arith.OrOp, tensor.ReduceMinOp: arith.AndOp}
"""The max and min of bools (``arith.max``/``min`` take no ``i1``): any and all."""


class WindowRefuse(Exception):
    """A window value is used in a way that has no per-element rule."""


class Chain:
    """A whole-window reduction built one element at a time, left to right.

    One accumulator: numpy sums a contiguous window pairwise (eight strided partial
    sums), but batched, each partial sum is an image, and eight of them per reduction
    would cross every kernel boundary through GM.  The difference is float rounding
    of the order (within the tolerance the tests use for every vector reduction).

    A float16 or bfloat16 sum accumulates in float32 and rounds once, as numpy's does
    (its pairwise sum adds half floats as floats): a chain of 25 float16 adds was 4x
    further from the exact sum than numpy's (2.1e-3 against 5e-4, a 5x5 window)."""

    def __init__(self, op: Operation, insert: Callable[[Operation], Value]) -> None:
        r = op.result_values[0]
        rank = len(op.operand_values[0].type.shape)  # type: ignore[attr-defined]
        if op.attributes.get("keepdims") or not isinstance(r.type, ScalarType) or \
                sorted(op.attributes.get("axes", ())) != list(range(rank)):
            raise WindowRefuse("a reduction over part of a window")
        chain = BOOL_CHAIN if r.type == i1 and type(op) in BOOL_CHAIN else CHAIN
        self.cls, self.type, self.loc, self.insert = chain[type(op)], r.type, op.loc, insert
        self.acc_type = f32 if self.cls is arith.AddOp and r.type in (f16, bf16) else r.type
        self.acc: Value | None = None

    def step(self, v: Value) -> None:
        v = self._cast(v, self.acc_type)
        self.acc = v if self.acc is None else self.insert(
            self.cls([self.acc, v], [self.acc_type], loc=self.loc))

    def total(self) -> Value:
        assert self.acc is not None
        return self._cast(self.acc, self.type)

    def _cast(self, v: Value, to: ScalarType) -> Value:
        return v if v.type == to else self.insert(arith.CastOp.new(v, to, loc=self.loc))


__all__ = ["BOOL_CHAIN", "CHAIN", "Chain", "WindowRefuse"]
