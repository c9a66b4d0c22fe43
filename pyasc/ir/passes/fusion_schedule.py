"""Schedule classification of a set of fused ops: can it be ONE loop nest, and which?

:func:`analyze` takes the ops of a candidate group (program order) and the values it
must produce, and returns a :class:`Schedule` or ``None``.  The fusion pass calls it
on every merge it considers; ``lower_group`` calls it on a group's body.

* ``elementwise``: no reduction; every tensor output has the same symbolic shape, the
  *domain*, and one nest over it computes them all.
* ``reduction``: reductions over the same axes of sources of one domain shape (several
  of them form one multi-output group: horizontal fusion), elementwise producers, and
  outputs that are the domain shape (computed during the reduction pass) or the
  reduced shape.  With the last axis reduced the kept axes are looped outside and the
  reduced ones inside (scalar accumulators); with the last axis kept (``column``) the
  reductions must be outputs only and accumulate in place, in source order.
* ``rowwise``: like ``reduction`` with the last axes reduced (a trailing block), whose
  results also feed domain-shaped consumers (softmax, layernorm): per row, one pass
  per reduction phase, then the consumer pass.

Recompute rule for broadcasts: a member that is constant along a loop axis but varies
along a later (inner) one is recomputed at every iteration of the outer axis (a row
vector broadcast over rows).  It may be fused only if its op costs at most
:data:`BCAST_FLOPS` per element; otherwise the pass materializes it.  Members constant
along trailing loop axes are evaluated once outside those loops, at no extra cost.

Chained reductions: at most :data:`MAX_CHAINED_REDUCTIONS` reductions of a group read
a value computed from another member reduction (each is one more pass over the row).

Other limits: a general reshape reads only a group input (never a computed member),
a slice never reads a member computed from a gather (numpy checks the bounds of
every gathered index, including those a slice would drop), and a remap (slice, transpose,
gather: :data:`REMAPS`) never reads a member computed by arithmetic from a member remap.
A group evaluates a member at every index a remap reads it at, so ``x = x + x[::-1]``
fused k times would evaluate the first ``x`` at 2^k indices per element (exponential
code and work); with the rule a group has one level of remaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.passes.fusion_rules import is_unit_reshape, op_cost, role_of
from pyasc.ir.passes.fusion_shapes import Shape, ShapeSyms, aligned
from pyasc.ir.types import TensorType

BCAST_FLOPS = 2
MAX_CHAINED_REDUCTIONS = 4
"""Most reductions per group whose source needs another member reduction.  Each one is
a further pass over the row that recomputes the elementwise work before it from the
group's inputs (``lower_group_rows``), so a group with p chained reductions does
O(p^2) work per element and has O(p^2) code: a long program alternating elementwise
statements and reductions would be quadratic.  Softmax and layernorm need one, their
automatic backwards four (softmax's: the sum of ``exp``, the ties of the row maximum,
the two sums of the division's and the subtraction's adjoints), so each is one group."""

REMAPS = (tensor.SliceOp, tensor.TransposeOp, tensor.GatherOp)
"""Ops reading their source (operand 0) at other indices than the element they compute."""


@dataclass(frozen=True)
class Schedule:
    """The loop structure of a group (see the module docstring)."""

    kind: str                  # elementwise | reduction | rowwise | scalar
    domain: Shape              # symbolic iteration shape
    axes: tuple[int, ...] = ()  # reduced axes of the domain
    column: bool = False       # reduction keeping the last axis: in-place accumulation

    @property
    def loop_order(self) -> list[int]:
        """Domain axes from the outermost loop to the innermost."""
        n = len(self.domain)
        if self.column or not self.axes:
            return list(range(n))
        return [a for a in range(n) if a not in self.axes] + list(self.axes)


def reductions(ops: Sequence[Operation]) -> list[Operation]:
    return [op for op in ops if role_of(op) == "reduce"]


def reduction_dependent(ops: Sequence[Operation]) -> set[Value]:
    """Member values computed from a member reduction (reductions included)."""
    members = set(ops)
    dep: set[Value] = set()
    for op in ops:
        inner = [v for r in op.region_list for b in r.blocks for o in b.ops
                 for v in o.operand_values]
        if role_of(op) == "reduce" or any(
                v in dep for v in op.operand_values + inner
                if isinstance(v, OpResult) and v.op in members):
            dep.update(op.result_values)
    return dep


def is_row_level(syms: ShapeSyms, v: Value, rank: int, axes: Sequence[int]) -> bool:
    """True if ``v`` (aligned to a rank-``rank`` domain) is constant along ``axes``."""
    shape = syms.of(v)
    if len(shape) > rank:
        return False
    al = aligned(shape, rank)
    return all(al[a] in (None, 1) for a in axes)


def analyze(ops: Sequence[Operation], outputs: Sequence[Value],
            syms: ShapeSyms) -> Schedule | None:
    """The schedule of ``ops`` producing ``outputs``, or ``None`` if there is none."""
    if not any(role_of(op) not in (None, "scalar") for op in ops):
        return Schedule("scalar", ())
    if not _remaps_ok(ops):
        return None
    reds = reductions(ops)
    if not reds:
        return _elementwise(ops, outputs, syms)
    return _reduction(ops, reds, outputs, syms)


def _elementwise(ops: Sequence[Operation], outputs: Sequence[Value],
                 syms: ShapeSyms) -> Schedule | None:
    outs = [o for o in outputs if isinstance(o.type, TensorType)]
    if not outs or any(syms.of(o) != syms.of(outs[0]) for o in outs):
        return None
    sched = Schedule("elementwise", syms.of(outs[0]))
    return sched if _cheap_broadcasts(ops, sched, syms, set()) else None


def _reduction(ops: Sequence[Operation], reds: list[Operation], outputs: Sequence[Value],
               syms: ShapeSyms) -> Schedule | None:
    axes = reds[0].attributes["axes"]
    domain = syms.of(reds[0].operand_values[0])
    if not axes or any(r.attributes["axes"] != axes or syms.of(r.operand_values[0]) != domain
                       for r in reds):
        return None
    n = len(domain)
    dep = reduction_dependent(ops)
    if sum(r.operand_values[0] in dep for r in reds) > MAX_CHAINED_REDUCTIONS:
        return None
    forms = _forms(ops, dep, domain, axes, syms)
    if forms is None:
        return None
    element_dep = [v for v, f in forms.items() if f == "element"]
    rowwise = bool(element_dep)
    column = (n - 1) not in axes
    if column and (rowwise or _reductions_consumed(ops, reds)):
        return None
    if rowwise and tuple(axes) != tuple(range(n - len(axes), n)):
        return None
    kept = tuple(1 if a in axes else d for a, d in enumerate(domain))
    dropped = tuple(d for a, d in enumerate(domain) if a not in axes)
    for o in outputs:
        if isinstance(o.type, TensorType) and syms.of(o) not in (domain, kept, dropped):
            return None
    sched = Schedule("rowwise" if rowwise else "reduction", domain, tuple(axes), column)
    return sched if _cheap_broadcasts(ops, sched, syms, dep) else None


def _forms(ops: Sequence[Operation], dep: set[Value], domain: Shape,
           axes: Sequence[int], syms: ShapeSyms) -> dict[Value, str] | None:
    """How each reduction-dependent value is indexed: ``element`` (the domain shape),
    ``row`` (constant along the reduced axes once right-aligned: keepdims results,
    scalars) or ``dropped`` (the kept axes without keepdims, e.g. ``sum(x, axis=-1)``:
    usable only by ops of that same shape, since numpy broadcasting would align it
    with the trailing axes).  ``None`` if some value fits none of them."""
    forms: dict[Value, str] = {}
    for op in ops:
        for v in op.result_values:
            if v not in dep:
                continue
            form = form_of(v, domain, axes, syms)
            if form is None:
                return None
            forms[v] = form
        if not dropped_consistent(op, forms):
            return None
    return forms


def form_of(v: OpResult, domain: Shape, axes: Sequence[int], syms: ShapeSyms) -> str | None:
    """The form of one reduction-dependent value (see :func:`_forms`), or ``None``."""
    shape = syms.of(v)
    if shape == domain and role_of(v.op) != "reduce":
        return "element"
    if is_row_level(syms, v, len(domain), axes):
        return "row"
    if shape == tuple(d for a, d in enumerate(domain) if a not in axes):
        return "dropped"
    return None


def dropped_consistent(op: Operation, forms: dict[Value, str]) -> bool:
    """An op reading a ``dropped`` value produces ``dropped`` values only."""
    return not (any(forms.get(v) == "dropped" for v in op.operand_values) and any(
        forms.get(r) != "dropped" for r in op.result_values))


def _reductions_consumed(ops: Sequence[Operation], reds: list[Operation]) -> bool:
    results = {r.result for r in reds}
    return any(v in results for op in ops for v in op.operand_values)


def _cheap_broadcasts(ops: Sequence[Operation], sched: Schedule, syms: ShapeSyms,
                      dep: set[Value]) -> bool:
    """The broadcast recompute rule (module docstring) for every member value."""
    order = sched.loop_order
    return all(broadcast_ok(op, sched.domain, order, syms) for op in ops
               if role_of(op) not in (None, "scalar", "reduce")
               and op.result_values[0] not in dep)


def broadcast_ok(op: Operation, domain: Shape, order: Sequence[int], syms: ShapeSyms) -> bool:
    """The broadcast recompute rule for one member computing a non-reduction value."""
    n = len(domain)
    shape = syms.of(op.result_values[0])
    if len(shape) > n:
        return True  # read through a remap, only where needed
    al = aligned(shape, n)
    const = [al[a] in (None, 1) and domain[a] != 1 for a in order]
    varies_inside = [any(not c for c in const[k + 1:]) for k in range(len(order))]
    return not (any(c and v for c, v in zip(const, varies_inside, strict=True))
                and op_cost(op) > BCAST_FLOPS)


def _remaps_ok(ops: Sequence[Operation]) -> bool:
    """General reshapes read group inputs only; slices never drop gathered elements;
    remaps are not nested through arithmetic (module docstring)."""
    members = set(ops)
    gathered: set[Value] = set()
    remapped: set[Value] = set()
    for op in ops:
        srcs = [v for v in op.operand_values if isinstance(v, OpResult) and v.op in members]
        if isinstance(op, tensor.ReshapeOp) and srcs and not is_unit_reshape(op):
            return False
        if isinstance(op, tensor.SliceOp) and op.source in gathered:
            return False
        if remaps_remapped(op, op.operand_values[0] if srcs else None, remapped):
            return False
        if isinstance(op, tensor.GatherOp) or any(v in gathered for v in srcs):
            gathered.update(op.result_values)
        if isinstance(op, REMAPS) or any(v in remapped for v in srcs):
            remapped.update(op.result_values)
    return True


def remaps_remapped(op: Operation, v: Value | None, remapped: set[Value]) -> bool:
    """True if ``op`` is a remap of ``v``, a value computed by arithmetic (not a view)
    from a member remap (``remapped``: the member values computed from one)."""
    return isinstance(op, REMAPS) and v is not None and op.operand_values[0] is v and \
        v in remapped and not isinstance(getattr(v, "op", None), REMAPS)
