"""``interrupt-poll``: mark the loops where compiled code polls for Ctrl-C (SIGINT).

The CPU backend polls a countdown at the back-edge of the loops marked here (see
``pyasc.backend.llvm.emit_poll``), so that a long or endless kernel stops soon after
Ctrl-C; every few hundred thousand iterations the countdown runs out and the runtime
checks for a signal.  Loops are marked so that no vectorizable inner loop changes:

* ``loop.while``: ``poll = "backedge"`` (its trip count is unknown; such loops are not
  vectorized anyway);
* a ``loop.for`` containing another loop or a call: ``poll = "backedge"`` (one
  decrement and branch per iteration of a loop whose iteration runs a whole loop);
* an innermost ``loop.for`` whose trip count is *bounded* -- made only of constants up
  to :data:`BOUNDED_CONSTANT`, dims of arrays and the variables of enclosing loops
  with bounded trip counts, through additions, subtractions, minima, maxima, divisions,
  remainders and selections: unmarked.  It visits memory the kernel was given or
  allocated, so it ends soon; the poll of the loop around it counts its trips;
* any other innermost ``loop.for`` (say ``for i in range(n)`` with ``n`` a scalar
  argument, or ``range(10**12)``): ``poll = "strips"``: the backend runs it in strips
  of a few thousand iterations and polls between strips, the strip itself unchanged
  (still vectorizable).

Disabling the pass (``PYASC_DISABLE_PASSES=interrupt-poll``) compiles kernels that
cannot be interrupted (benchmarks measure the cost of polling that way).
"""

from __future__ import annotations

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.manager import Pass, PassContext, register_pass

BOUNDED_CONSTANT = 1 << 24
"""Largest constant loop bound that counts as bounded (~16M iterations)."""

_PASS_BOUND = (arith.AddOp, arith.SubOp, arith.MinOp, arith.MaxOp, arith.FloorDivOp,
               arith.RemOp, arith.ShrOp, arith.AndOp, arith.CastOp, arith.NegOp)
"""Ops whose result is bounded when all their operands are."""


@register_pass
class InterruptPoll(Pass):
    """Set ``poll`` on the loops where the CPU backend polls (see the module docstring)."""

    name = "interrupt-poll"
    description = "mark the loops that poll for Ctrl-C"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for f in module.functions:
            bounded = _Bounded()
            for op in f.walk():
                mode = poll_mode(op, bounded)
                if mode is not None:
                    op.attributes["poll"] = mode


def poll_mode(op: Operation, bounded: _Bounded | None = None) -> str | None:
    """``"backedge"``, ``"strips"`` or ``None`` for ``op`` (None for non-loops)."""
    if isinstance(op, loop.WhileOp):
        return "backedge"
    if not isinstance(op, loop.ForOp):
        return None
    if _contains_loop_or_call(op):
        return "backedge"
    bounded = bounded or _Bounded()
    return None if bounded(op.lower) and bounded(op.upper) else "strips"


def _contains_loop_or_call(op: Operation) -> bool:
    return any(inner is not op and isinstance(inner, (loop.ForOp, loop.WhileOp, func.CallOp))
               for inner in op.walk())


class _Bounded:
    """``bounded(v)``: whether ``v`` is bounded (module docstring), memoized."""

    def __init__(self) -> None:
        self.memo: dict[Value, bool] = {}

    def __call__(self, v: Value) -> bool:
        known = self.memo.get(v)
        if known is None:
            self.memo[v] = False  # cycles (none in SSA, but be safe) are unbounded
            known = self.memo[v] = self._compute(v)
        return known

    def _compute(self, v: Value) -> bool:
        if isinstance(v, BlockArgument):
            parent = v.block.parent_op
            return isinstance(parent, loop.ForOp) and v.index == 0 and \
                self(parent.lower) and self(parent.upper)
        assert isinstance(v, OpResult)
        op = v.op
        if isinstance(op, mem.DimOp):
            return True
        if isinstance(op, arith.ConstantOp):
            return isinstance(op.value, (int, bool)) and abs(int(op.value)) <= BOUNDED_CONSTANT
        if isinstance(op, arith.SelectOp):
            return self(op.operand_values[1]) and self(op.operand_values[2])
        if isinstance(op, _PASS_BOUND):
            return all(self(x) for x in op.operand_values)
        return False
