"""Gradient rules of structured control flow.

* ``loop.if``: the backward has the same ``if`` on the same condition; each branch
  recomputes its forward ops and sweeps them back (a nested :class:`Sweep`), yielding
  the adjoints of the outer values it read.  Only the taken branch runs, so a branch
  that would fail (a log of a negative number on the other side) is never evaluated.
* ``autodiff.custom_vjp`` (a call of a function with a registered gradient): its
  ``backward`` region, cloned with the result's adjoint for its argument.
* ``loop.for``: loops with a trip count known at compile time were unrolled before the
  sweep (``unroll``); one left here has a run-time trip count and is refused, as is
  ``loop.while`` (data-dependent iteration).
"""

from __future__ import annotations

from pyasc.ir.autodiff.activity import can_be_active
from pyasc.ir.autodiff.registry import not_differentiable, vjp_rule
from pyasc.ir.autodiff.sweep import Sweep
from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import loop
from pyasc.ir.ops.autodiff import CustomVjpOp
from pyasc.ir.types import MemRefType

Douts = list[Value | None]


def free_values(op: Operation, active: set[Value]) -> list[Value]:
    """Active values defined outside ``op`` that ops inside it read (first-use order)."""
    seen: dict[Value, None] = {}
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operand_values:
            if v in active and can_be_active(v) and not isinstance(v.type, MemRefType) \
                    and not _defined_inside(v, op):
                seen[v] = None
    return list(seen)


def _defined_inside(v: Value, op: Operation) -> bool:
    owner = v.owner
    inner = owner if isinstance(owner, Operation) else owner.parent_op
    return inner is not None and op.is_ancestor_of(inner)


@vjp_rule(loop.IfOp)
def _if(sw: Sweep, op: loop.IfOp, d: Douts) -> None:
    free = free_values(op, sw.active)
    new = loop.IfOp.empty(sw.v(op.cond), [sw.v(f).type for f in free])
    sw.em.b.insert(new)
    for src, dst in zip(op.region_list, new.region_list, strict=True):
        block = src.blocks[0]
        child = sw.child(Builder.at_end(dst.blocks[0], op.loc))
        child.clone_forward(block.ops)
        child.prepare_buffers(block.ops)
        for y, g in zip(block.terminator.operand_values, d, strict=True):
            if g is not None:
                child.accumulate(y, g)
        child.run(block.ops)
        grads = [child.adj.get(f) or child.em.zeros(f.type, like=sw.v(f)) for f in free]
        child.em.b.insert(loop.YieldOp(grads))
    for f, g in zip(free, new.result_values, strict=True):
        sw.accumulate(f, g)


@vjp_rule(CustomVjpOp)
def _custom_vjp(sw: Sweep, op: CustomVjpOp, d: Douts) -> list:
    block = op.backward.blocks[0]
    if d[0] is None:
        return [None] * len(op.inputs)
    mapping = dict(sw.fwd)
    mapping[block.args[0]] = d[0]
    for inner in block.ops[:-1]:
        sw.em.b.insert(inner.clone(mapping))
    grads: list = [None] * len(op.inputs)
    for i, y in zip(op.attributes["wrt"], block.terminator.operand_values, strict=True):
        x = op.inputs[i]
        if isinstance(x.type, MemRefType):
            sw.add_to_buffer(x, mapping.get(y, y))
        else:
            grads[i] = mapping.get(y, y)
    return grads


@vjp_rule(loop.ForOp)
def _for(sw: Sweep, op: Operation, d: Douts) -> None:
    raise not_differentiable(op.loc, "this loop's trip count is known only at run time "
                             "(or it is too long to unroll), and automatic "
                             "differentiation unrolls loops",
                             hint="loop over a compile-time range (shapes, constants, "
                             "pyasc.static values)")


@vjp_rule(loop.WhileOp)
def _while(sw: Sweep, op: Operation, d: Douts) -> None:
    raise not_differentiable(op.loc, "a while loop (or a loop with break) iterates a "
                             "data-dependent number of times",
                             hint="loop over a compile-time range instead")
