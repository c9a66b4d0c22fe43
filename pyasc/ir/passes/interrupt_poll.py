"""``interrupt-poll``: mark the loops where compiled code polls for Ctrl-C (SIGINT).

The CPU backend polls a countdown at the back-edge of the loops marked here (see
``pyasc.backend.llvm.emit_poll``), so that a long or endless kernel stops soon after
Ctrl-C; every few hundred thousand iterations the countdown runs out and the runtime
checks for a signal.  Loops are marked so that no vectorizable inner loop changes:

* ``loop.while``: ``poll = "backedge"`` (its trip count is unknown; such loops are not
  vectorized anyway), unless the pass that generated it gave it a ``bound`` (the
  insertion steps of a sort).  An innermost counted one (``for k in range(n)`` with a
  ``break``): ``poll = "counted"``, run in strips by comparing the counter with a
  limit instead of ``n`` (``interrupt_while.py``): no work per iteration;
* a ``loop.for`` containing another loop or a call: ``poll = "backedge"`` (one
  decrement and branch per iteration of a loop whose iteration runs a whole loop),
  unless the loops in it are a small constant nest (:data:`SMALL_NEST`), which makes
  it an innermost loop for what follows;
* an innermost ``loop.for`` whose trip count is *bounded*: unmarked.  Its upper bound
  is bounded above and its lower bound below (the other way round for a negative
  step) by array dims, constants up to :data:`BOUNDED_CONSTANT` and the variables of
  enclosing loops, through additions, subtractions, minima (one bounded operand is
  enough for an upper bound), maxima, divisions, remainders, selections and products
  with a constant (``_RULES``), and values a bounded loop carries that change by
  constants only (NMS's ``count += 1``).  Such a loop is as long as an array the kernel
  was given or allocated, so it ends soon; the poll of the loop around it counts its
  trips.  The same holds for a counted ``while`` from a bounded-below counter to a
  bounded-above limit (``for k in range(count)`` with a ``break``): unmarked;
* any other innermost ``loop.for`` (say ``for i in range(n)`` with ``n`` a scalar
  argument, or ``range(10**12)``): ``poll = "strips"``: the backend runs it in strips
  of a few thousand iterations and polls between strips, the strip itself unchanged
  (still vectorizable).

Disabling the pass (``PYASC_DISABLE_PASSES=interrupt-poll``) compiles kernels that
cannot be interrupted (benchmarks measure the cost of polling that way).
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.interrupt_while import CountedWhile, counted
from pyasc.ir.passes.manager import Pass, PassContext, register_pass

BOUNDED_CONSTANT = 1 << 24
"""Largest constant loop bound that counts as bounded (~16M iterations)."""

SMALL_NEST = 256
"""Loops nested in a ``for`` with at most this many iterations in all, each with a
constant trip count (the 16 lanes of a float sum, a 3x3 window), count as straight-line
code: LLVM unrolls them and vectorizes the loop around them, so that loop is treated
as innermost."""

Range = tuple[bool, bool]
"""(bounded above, bounded below) by array extents and constants up to the limit."""

_RULES: dict[type, Callable[[Callable[[Value], Range], list[Value]], Range]] = {
    arith.AddOp: lambda r, xs: _both(r(xs[0]), r(xs[1])),
    arith.SubOp: lambda r, xs: _both(r(xs[0]), _flip(r(xs[1]))),
    arith.NegOp: lambda r, xs: _flip(r(xs[0])),
    arith.MinOp: lambda r, xs: (r(xs[0])[0] or r(xs[1])[0], r(xs[0])[1] and r(xs[1])[1]),
    arith.MaxOp: lambda r, xs: (r(xs[0])[0] and r(xs[1])[0], r(xs[0])[1] or r(xs[1])[1]),
    arith.SelectOp: lambda r, xs: _both(r(xs[1]), r(xs[2])),
    arith.CastOp: lambda r, xs: r(xs[0]),
    arith.FloorDivOp: lambda r, xs: _whole(r(xs[0])),  # |a // b| <= |a| for b != 0
    arith.ShrOp: lambda r, xs: _whole(r(xs[0])),
    arith.RemOp: lambda r, xs: _whole(r(xs[1])),  # |a % b| < |b|
    arith.MulOp: lambda r, xs: _scaled(r, xs),
}
"""How each op bounds its result from its operands' bounds (other ops: unbounded)."""


def _both(a: Range, b: Range) -> Range:
    return a[0] and b[0], a[1] and b[1]


def _flip(a: Range) -> Range:
    return a[1], a[0]


def _whole(a: Range) -> Range:
    return (a[0] and a[1],) * 2


def _scaled(r: Callable[[Value], Range], xs: list[Value]) -> Range:
    """A product with a constant factor up to the limit (``chunk * 65536``)."""
    for v, c in ((xs[0], _constant(xs[1])), (xs[1], _constant(xs[0]))):
        if c is not None and abs(c) <= BOUNDED_CONSTANT:
            return r(v) if c >= 0 else _flip(r(v))
    return False, False


@register_pass
class InterruptPoll(Pass):
    """Set ``poll`` on the loops where the CPU backend polls (see the module docstring)."""

    name = "interrupt-poll"
    description = "mark the loops that poll for Ctrl-C"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for f in module.functions:
            bounded = Bounded()
            for op in f.walk():
                mode = poll_mode(op, bounded)
                if mode is not None:
                    op.attributes["poll"] = mode


def poll_mode(op: Operation, bounded: Bounded | None = None) -> str | None:
    """``"backedge"``, ``"strips"`` or ``None`` for ``op`` (None for non-loops)."""
    if not isinstance(op, (loop.ForOp, loop.WhileOp)):
        return None
    inner = [nested_iterations(r.blocks[0]) for r in op.region_list]
    if None in inner or sum(inner) > SMALL_NEST:  # type: ignore[arg-type]
        return "backedge"
    bounded = bounded or Bounded()
    if isinstance(op, loop.WhileOp):  # a while a pass bounded runs like an inner loop
        if _static_trips(op) is not None:
            return None
        info = counted(op)
        if info is None:
            return "backedge"
        return None if bounded.counted_trips(op, info) else "counted"
    return None if bounded.trips(op) else "strips"


def nested_iterations(block: Block) -> int | None:
    """Iterations of all the loops in ``block`` (at any depth) if each has a constant
    trip count; ``None`` when some has not, or there is a ``while`` or a call."""
    total = 0
    for op in block.ops:
        if isinstance(op, func.CallOp):
            return None
        inner = [nested_iterations(r.blocks[0]) for r in op.region_list]
        if None in inner:
            return None
        if isinstance(op, (loop.ForOp, loop.WhileOp)):
            trips = _static_trips(op)
            if trips is None:
                return None
            total += trips * max(1, sum(inner))  # type: ignore[arg-type]
        else:
            total += sum(inner)  # type: ignore[arg-type]
    return total


def _static_trips(op: loop.ForOp | loop.WhileOp) -> int | None:
    """The trip count when it is a constant: constant bounds, or ``upper = lower + c``;
    for a ``while``, the ``bound`` the pass that made it gave."""
    if isinstance(op, loop.WhileOp):
        return op.attributes.get("bound")
    lo, hi, step = (_constant(v) for v in (op.lower, op.upper, op.step))
    if step is None or step == 0:
        return None
    if lo is not None and hi is not None:
        return len(range(lo, hi, step))
    owner = op.upper.owner
    if isinstance(owner, arith.AddOp) and op.lower in owner.operand_values:
        other = [v for v in owner.operand_values if v is not op.lower]
        span = _constant(other[0]) if other else None
        if span is not None and step > 0:
            return len(range(0, span, step))
    return None


class Bounded:
    """The :data:`Range` of index values and whether a loop's trip count is bounded
    (memoized per function)."""

    def __init__(self) -> None:
        self.memo: dict[Value, Range] = {}

    def trips(self, op: loop.ForOp) -> bool:
        """``ub - lb`` (positive step) or ``lb - ub`` (negative step) is bounded."""
        lb, ub = self(op.lower), self(op.upper)
        up, down = ub[0] and lb[1], lb[0] and ub[1]
        step = _constant(op.step)
        return up if step is not None and step > 0 else \
            down if step is not None and step < 0 else up and down

    def counted_trips(self, op: loop.WhileOp, info: CountedWhile) -> bool:
        """A counted ``while`` (``for k in range(n)`` with a ``break``) from a counter
        bounded below to a limit bounded above."""
        return self(info.limit)[0] and self(op.inits[info.counter])[1]

    def __call__(self, v: Value) -> Range:
        known = self.memo.get(v)
        if known is None:
            self.memo[v] = (False, False)  # no cycles in SSA, but be safe
            known = self.memo[v] = self._compute(v)
        return known

    def _compute(self, v: Value) -> Range:
        if isinstance(v, BlockArgument):
            parent = v.block.parent_op
            if isinstance(parent, loop.ForOp) and v.index > 0:
                return self._counter(parent, v)
            if not isinstance(parent, loop.ForOp):
                return False, False
            lb, ub = self(parent.lower), self(parent.upper)
            step = _constant(parent.step)
            if step is not None and step != 0:  # iv in [lb, ub) or (ub, lb]
                return (ub[0], lb[1]) if step > 0 else (lb[0], ub[1])
            return _both(lb, ub)
        assert isinstance(v, OpResult)
        op = v.op
        if isinstance(op, mem.DimOp):
            return True, True
        value = _constant(v)
        if value is not None:
            return value <= BOUNDED_CONSTANT, value >= -BOUNDED_CONSTANT
        rule = _RULES.get(type(op))
        return rule(self, op.operand_values) if rule else (False, False)


    def _counter(self, op: loop.ForOp, arg: BlockArgument) -> Range:
        """A value the loop carries that each iteration changes by constants only (NMS's
        ``count += 1`` on some paths): between its initial value and that plus the
        largest step times the trip count, a bounded loop's."""
        k = arg.index - 1
        steps = _steps(op.body.blocks[0].terminator.operand_values[k], arg)
        if steps is None or not self.trips(op):
            return False, False
        low, high = steps
        init = self(op.inits[k])
        return (init[0] and high <= BOUNDED_CONSTANT, init[1] and low >= -BOUNDED_CONSTANT)


def _steps(v: Value, arg: BlockArgument) -> tuple[int, int] | None:
    """The least and greatest constant ``v - arg`` on any path (through additions of
    constants, selections and ``if`` results), or None when ``v`` is anything else."""
    if v is arg:
        return 0, 0
    owner = v.owner
    if isinstance(owner, (arith.AddOp, arith.SubOp)):
        x, y = owner.operand_values
        c, base = (_constant(y), x) if _constant(y) is not None else (_constant(x), y)
        if c is None or (isinstance(owner, arith.SubOp) and base is not x):
            return None
        inner = _steps(base, arg)
        c = -c if isinstance(owner, arith.SubOp) else c
        return None if inner is None else (inner[0] + c, inner[1] + c)
    if isinstance(owner, arith.SelectOp):
        parts = [_steps(x, arg) for x in owner.operand_values[1:]]
    elif isinstance(owner, loop.IfOp) and isinstance(v, OpResult):
        parts = [_steps(r.blocks[0].terminator.operand_values[v.index], arg)
                 for r in (owner.then_region, owner.else_region)]
    else:
        return None
    if None in parts:
        return None
    return min(p[0] for p in parts), max(p[1] for p in parts)  # type: ignore[index]


def _constant(v: Value) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, (int, bool)):
        return int(owner.value)
    return None
