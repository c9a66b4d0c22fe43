"""``loop``: structured control flow with values carried through ``yield``.

* ``for(lb, ub, step, inits*)``: body ``^bb0(%iv: index, %iters...)`` runs for
  ``iv = lb + k*step``, ``k`` in ``range(max(0, ceil((ub - lb) / step)))``; ``step`` may be
  negative, never 0 (a run-time error).  The body ends in ``loop.yield`` of the next
  iteration values; the results are the final ones.  ``parallel = true`` promises the
  iterations are independent (set by passes, used by the thread-pool split).
  ``lanes = n`` marks a generated *lane loop* (``n`` independent accumulators updated
  in a small buffer): the CPU backend asks LLVM to vectorize it ``n`` wide and never to
  unroll it, rather than unrolling it into scalars that SLP re-packs in pieces.
  ``register_tile = true`` marks a loop whose carried values are a register tile (the
  matmul's micro-kernel): they are vectorized across (SLP), never along the loop, so the
  CPU backend keeps LLVM's loop vectorizer off it.
* ``poll`` on ``for`` and ``while`` (set by the ``interrupt-poll`` pass for the CPU
  backend): ``"backedge"`` polls for Ctrl-C between iterations, ``"strips"`` runs the
  loop in strips of a few thousand iterations and polls between strips, ``"counted"``
  (``while``) does the same with the loop's counter.  ``bound`` on
  a ``while`` a pass generated: it runs at most that many iterations each time.
* ``while(inits*)``: region ``before(args)`` ends in ``loop.condition(%c, vals*)``; while
  ``%c`` holds, ``after(vals)`` runs and yields the next ``args``; the results are the
  ``vals`` of the final condition (MLIR ``scf.while``).
* ``if(cond)``: ``then`` and ``else`` regions each end in ``loop.yield`` of the results.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Block, Location, Operation, Region, Value, attr
from pyasc.ir.ops.common import require, types_str
from pyasc.ir.types import Type, i1, index


def _yield_types(region: Region) -> list[Type] | None:
    term = region.blocks[0].terminator if region.blocks else None
    if term is None or term.name not in ("loop.yield", "loop.condition"):
        return None
    values = term.operand_values
    if term.name == "loop.condition":
        values = values[1:]
    return [v.type for v in values]


class ForOp(Operation):
    """Counted loop over ``index`` with loop-carried values."""

    name = "loop.for"
    operands = ("lower", "upper", "step", "inits*")
    results = ("outputs*",)
    regions = ("body",)
    # ``vector_bits``: the function holding the loop should use vectors this wide (the
    # matmul's micro-kernel on AVX-512; see lower_matmul_tiled); ``channels``: a loop
    # ``channel-interchange`` moved around a nest over outputs (batch-loops batches the
    # nest inside it)
    attrs = {"parallel": attr(bool, optional=True), "poll": attr(str, optional=True),
             "lanes": attr(int, optional=True), "vector_bits": attr(int, optional=True),
             "register_tile": attr(bool, optional=True), "channels": attr(bool, optional=True)}
    terminators = ("loop.yield",)

    @classmethod
    def empty(cls, lower: Value, upper: Value, step: Value, inits: Sequence[Value] = (),
              iv_name: str | None = None, loc: Location | None = None) -> ForOp:
        block = Block([index] + [v.type for v in inits])
        block.args[0].name_hint = iv_name
        return cls([lower, upper, step, *inits], [v.type for v in inits],
                   regions=[Region([block])], loc=loc)

    @property
    def induction_var(self) -> Value:
        return self.body.blocks[0].args[0]

    @property
    def iter_args(self) -> list[Value]:
        return self.body.blocks[0].args[1:]

    def verify_op(self) -> None:
        for v in (self.lower, self.upper, self.step):
            require(v.type == index, f"loop bounds must be index, got {v.type}")
        inits = [v.type for v in self.inits]
        require([r.type for r in self.outputs] == inits, "results must match inits")
        args = [a.type for a in self.body.blocks[0].args]
        require(args == [index] + inits,
                f"body arguments must be {types_str([index] + inits)}")
        ys = _yield_types(self.body)
        require(ys is None or ys == inits,
                f"yield types {types_str(ys)} must match inits {types_str(inits)}")


class WhileOp(Operation):
    """General loop: ``before`` computes the condition, ``after`` the next values."""

    name = "loop.while"
    operands = ("inits*",)
    results = ("outputs*",)
    regions = ("before", "after")
    attrs = {"poll": attr(str, optional=True), "bound": attr(int, optional=True)}
    terminators = ("loop.condition", "loop.yield")

    @classmethod
    def empty(cls, inits: Sequence[Value], result_types: Sequence[Type],
              loc: Location | None = None) -> WhileOp:
        before = Block([v.type for v in inits])
        after = Block(list(result_types))
        return cls(list(inits), list(result_types),
                   regions=[Region([before]), Region([after])], loc=loc)

    def verify_op(self) -> None:
        inits = [v.type for v in self.inits]
        results = [r.type for r in self.outputs]
        require([a.type for a in self.before.blocks[0].args] == inits,
                "before-region arguments must match inits")
        require([a.type for a in self.after.blocks[0].args] == results,
                "after-region arguments must match results")
        cond = _yield_types(self.before)
        require(cond is None or cond == results, "condition values must match results")
        body = _yield_types(self.after)
        require(body is None or body == inits, "after-region must yield the init types")


class IfOp(Operation):
    """Two-way branch with results yielded from both regions.  ``versioned`` marks a
    branch made by ``hoist-checks``: both regions hold the same loop, the ``then`` copy
    without the checks ``cond`` proved (backends may treat it as one loop)."""

    name = "loop.if"
    operands = ("cond",)
    results = ("outputs*",)
    regions = ("then_region", "else_region")
    attrs = {"versioned": attr(bool, optional=True)}
    terminators = ("loop.yield", "loop.yield")

    @classmethod
    def empty(cls, cond: Value, result_types: Sequence[Type] = (),
              loc: Location | None = None) -> IfOp:
        return cls([cond], list(result_types),
                   regions=[Region([Block()]), Region([Block()])], loc=loc)

    def verify_op(self) -> None:
        require(self.cond.type == i1, f"if condition must be i1, got {self.cond.type}")
        results = [r.type for r in self.outputs]
        for region in (self.then_region, self.else_region):
            require(not region.blocks[0].args, "if regions take no arguments")
            ys = _yield_types(region)
            require(ys is None or ys == results,
                    f"yield types {types_str(ys)} must match results {types_str(results)}")


class YieldOp(Operation):
    """Terminator of ``for``/``if`` regions and of ``while``'s ``after`` region."""

    name = "loop.yield"
    operands = ("values*",)
    traits = frozenset({"terminator"})


class ConditionOp(Operation):
    """Terminator of ``while``'s ``before`` region."""

    name = "loop.condition"
    operands = ("cond", "values*")
    traits = frozenset({"terminator"})

    def verify_op(self) -> None:
        require(self.cond.type == i1, "loop.condition needs an i1 condition")


def inside_loop(op: Operation) -> bool:
    """Whether ``op`` is nested in a ``loop.for`` or ``loop.while`` (at any depth)."""
    anc = op.parent_op
    while anc is not None:
        if isinstance(anc, ForOp | WhileOp):
            return True
        anc = anc.parent_op
    return False
