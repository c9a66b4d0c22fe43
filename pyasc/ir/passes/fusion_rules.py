"""What the fusion pass may put into a ``fusion.group``: op roles and per-element costs.

Roles (a table ``{op class: role}``, looked up by :func:`role_of`):

* ``elementwise``: ``arith``/``math`` ops on tensors (incl. ``cmp``, ``select``,
  ``cast``, ``isnan``...) and ``tensor.map``;
* ``generator``: ``tensor.fill`` and ``tensor.arange`` (no tensor operand);
* ``broadcast``: ``tensor.broadcast``;
* ``access``: ``tensor.slice``, ``tensor.transpose``, ``tensor.gather`` and
  ``tensor.reshape``: index remaps read through by the group's loop nest.  A reshape
  fuses only when it is a pure unit-dim remap or reads a group input (a contiguous
  input is viewed, any other is indexed through its flat position);
* ``reduce``: ``tensor.sum prod max min any all``;
* ``scalar``: scalar ``arith``/``math`` ops, scalar constants and ``tensor.dim``:
  computed once per group, never per element, so they are cloned into every group
  that needs them.

Everything else stays outside groups: ``matmul``, ``concat``, ``compress``,
``argmax``/``argmin``, dense constants (read as group inputs), ``extract``, memory ops,
calls, checks and control flow.

A group holds at most :data:`MAX_GROUP_OPS` tensor ops.

Costs are rough flops per element (:data:`COSTS`, default 1): index remaps and
generators 0, divisions and square roots 4, transcendental functions 16, a
``tensor.map`` the sum of its body.  The cost rules built on them are stated in
``fusion``.
"""

from __future__ import annotations

from pyasc.ir.core import Operation
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes import lower_elementwise
from pyasc.ir.types import DYN, ScalarType, TensorType

ELEMENTWISE: tuple[type[Operation], ...] = tuple(
    cls for cls, fn in lower_elementwise.RULES.items()
    if fn is lower_elementwise.lower_elementwise)
REDUCTIONS: tuple[type[Operation], ...] = (
    tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp, tensor.ReduceMinOp, tensor.AnyOp,
    tensor.AllOp)

_ROLES: dict[type[Operation], str] = {
    **{cls: "elementwise" for cls in ELEMENTWISE},
    tensor.MapOp: "elementwise",
    tensor.FillOp: "generator",
    tensor.ArangeOp: "generator",
    tensor.BroadcastOp: "broadcast",
    tensor.SliceOp: "access",
    tensor.TransposeOp: "access",
    tensor.GatherOp: "access",
    tensor.ReshapeOp: "access",
    **{cls: "reduce" for cls in REDUCTIONS},
    tensor.DimOp: "scalar",
}

MAX_GROUP_OPS = 256
"""Most tensor ops (scalar ops not counted) in one group; the fusion pass and the
AscendC grouping stop growing a group there.  A group is one loop body (one vector
kernel), and compilers downstream are superlinear in it: LLVM's loop vectorizer took
0.55 s for a 4,000-op body and 2.9 s for 8,000.  Past this size a boundary costs one
store and one load per element, little next to 256 ops of work (and smaller bodies are
interleaved: a 2,000-statement chain ran 1.6x faster in 16 groups than in one)."""

TRANSCENDENTAL = (m.ExpOp, m.Exp2Op, m.Expm1Op, m.LogOp, m.Log2Op, m.Log10Op, m.Log1pOp,
                  m.TanhOp, m.SinOp, m.CosOp, m.TanOp, m.ErfOp, m.SigmoidOp, m.PowOp,
                  m.AtanOp)
COSTS: dict[type[Operation], int] = {
    **{cls: 16 for cls in TRANSCENDENTAL},
    **{cls: 4 for cls in (arith.DivOp, arith.FloorDivOp, arith.RemOp, m.SqrtOp, m.RsqrtOp)},
    **{cls: 0 for cls in (tensor.FillOp, tensor.ArangeOp, tensor.BroadcastOp,
                          tensor.SliceOp, tensor.TransposeOp, tensor.ReshapeOp,
                          tensor.DimOp, arith.ConstantOp)},
}


def role_of(op: Operation) -> str | None:
    """The fusion role of ``op`` (see the module docstring), or ``None``."""
    if isinstance(op, arith.ConstantOp):
        return "scalar" if isinstance(op.result.type, ScalarType) else None
    role = _ROLES.get(type(op))
    if role is None:
        return None
    if role == "elementwise" and not any(isinstance(r.type, TensorType)
                                         for r in op.result_values):
        return "scalar"
    return role


def op_cost(op: Operation) -> int:
    """Flops per element of one op (a ``tensor.map`` costs its body)."""
    if isinstance(op, tensor.MapOp):
        return sum(op_cost(inner) for inner in op.body.blocks[0].ops[:-1])
    return COSTS.get(type(op), 1)


def is_unit_reshape(op: Operation) -> bool:
    """True if a ``tensor.reshape`` only inserts or removes static size-1 dims: the other
    dims are the same in the same order, with at most one ``?`` (two could trade
    factors, ``?x?`` -> ``?x1x?``)."""
    if not isinstance(op, tensor.ReshapeOp):
        return False
    src = [d for d in op.source.type.shape if d != 1]
    dst = [d for d in op.result.type.shape if d != 1]
    return src == dst and src.count(DYN) <= 1
