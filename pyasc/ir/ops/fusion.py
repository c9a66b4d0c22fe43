"""``fusion``: the user's fusion boundaries and the fused groups the fusion pass forms.

* ``fusion.scope``: the body of ``with fusion_scope():``.  Ops inside may fuse with each
  other, never with ops outside.  Not isolated (it reads outer values directly); ends in
  ``fusion.yield`` of the values used after it.  The fusion pass dissolves it after
  forming groups inside it, numbering them ``scope = k`` (the k-th scope of the
  function) so that no later grouping merges them with groups outside it.
* ``fusion.group {kind}``: ONE kernel.  An isolated region whose block arguments are the
  group's inputs (same types as the operands); its body holds tensor-level ops and ends
  in ``fusion.yield`` of the outputs.  ``kind`` names the schedule class the fusion pass
  chose, which the backends turn into one loop nest (CPU) or one tiled kernel (AscendC):

  - ``"elementwise"``: every output has the group's iteration shape; the body is
    elementwise ops, broadcasts and constants;
  - ``"reduction"``: elementwise producers feeding reductions over the same axes;
  - ``"rowwise"``: reductions over the trailing axes with ``keepdims`` whose results are
    broadcast back into elementwise consumers (softmax, layernorm);
  - ``"generic"``: anything else kept together (no schedule promise).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Block, Location, Operation, Region, Value, attr
from pyasc.ir.ops.common import require

GROUP_KINDS = ("elementwise", "reduction", "rowwise", "generic")


def _check_yield(op: Operation) -> None:
    term = op.body.blocks[0].terminator
    if term is not None and term.name == "fusion.yield":
        got = [v.type for v in term.operand_values]
        require(got == [r.type for r in op.result_values], "yield types must match results")


class FusionScopeOp(Operation):
    """``with fusion_scope():`` body: a fusion boundary."""

    name = "fusion.scope"
    results = ("outputs*",)
    regions = ("body",)
    terminators = ("fusion.yield",)

    @classmethod
    def empty(cls, loc: Location | None = None) -> FusionScopeOp:
        return cls(regions=[Region([Block()])], loc=loc)

    def verify_op(self) -> None:
        _check_yield(self)


class FusionGroupOp(Operation):
    """A fused kernel over explicit inputs (isolated region)."""

    name = "fusion.group"
    operands = ("inputs*",)
    results = ("outputs*",)
    regions = ("body",)
    # ``stencil``: the inputs are windows of one array (``stencil-windows``)
    attrs = {"kind": attr(str), "scope": attr(int, optional=True),
             "stencil": attr(bool, optional=True)}
    terminators = ("fusion.yield",)
    traits = frozenset({"isolated", "pure"})

    @classmethod
    def empty(cls, inputs: Sequence[Value], kind: str,
              loc: Location | None = None) -> FusionGroupOp:
        block = Block([v.type for v in inputs], [v.name_hint for v in inputs])
        return cls(list(inputs), [], {"kind": kind}, [Region([block])], loc=loc)

    def verify_op(self) -> None:
        require(self.attributes["kind"] in GROUP_KINDS,
                f"kind must be one of {', '.join(GROUP_KINDS)}")
        args = [a.type for a in self.body.blocks[0].args]
        require(args == [v.type for v in self.inputs], "block arguments must match inputs")
        _check_yield(self)


class FusionYieldOp(Operation):
    """Terminator of ``fusion.scope`` and ``fusion.group``."""

    name = "fusion.yield"
    operands = ("values*",)
    traits = frozenset({"terminator"})
