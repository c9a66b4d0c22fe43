"""Loop invariance for ``hoist-checks``: which values a loop cannot change, and moving
them out of the fast copy of a versioned loop.

A value is *invariant* in a loop when it is defined outside it, or computed inside it
by pure ops (or :func:`safe_load`\\ s) from invariant values: it can be computed once
before the loop.  A ``mem.load`` is invariant when the loop writes nothing that may be
its buffer (a fresh ``mem.alloc`` of the function is never a parameter) and calls
nothing; it may be executed before the loop, where it might not have run at all, only
when its indices are provably in bounds there (loop ranges and sizes decide, as for
``hoist-checks``' proofs): a gather's ``ids[i0]`` read inside the row loop of a fused
nest is, so its check leaves the row loop.
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, mem
from pyasc.ir.passes.affine import (
    Affine,
    Atom,
    Last,
    affine_of,
    enclosing_scopes,
    lower_bound,
    minimize,
)
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import MemRefType


def inside(lp: Operation, v: Value) -> bool:
    """``v`` is defined in ``lp`` (by an op in it, or as an argument of its blocks)."""
    owner = v.block.parent_op if isinstance(v, BlockArgument) else v.op  # type: ignore
    return owner is not None and lp.is_ancestor_of(owner)


def invariant(v: Atom, lp: Operation) -> bool:
    """``v`` has one value during all of ``lp`` and can be computed before it."""
    if isinstance(v, Last):
        return all(invariant(x, lp) for x in (v.loop.lower, v.loop.upper, v.loop.step))
    if not inside(lp, v):
        return True
    if not isinstance(v, OpResult) or v.op.region_list:
        return False
    if not (v.op.has_trait("pure") or safe_load(v.op, lp)):
        return False
    return all(invariant(x, lp) for x in v.op.operand_values)


def safe_load(op: Operation, lp: Operation) -> bool:
    """``op`` is a ``mem.load`` that reads the same before ``lp`` as in it, in bounds."""
    if not isinstance(op, mem.LoadOp):
        return False
    buf = op.operand_values[0]
    # through a view: its offsets would need the same proof
    return base_buffer(buf) is buf and unwritten(buf, lp) and in_bounds(op, lp)


def in_bounds(op: mem.LoadOp, scope: Operation) -> bool:
    """The indices of ``op`` (on a buffer, not a view) are in bounds for every value of
    the counters of the loops around ``scope`` (loop ranges and sizes decide)."""
    buf, *idx = op.operand_values
    t = buf.type
    assert isinstance(t, MemRefType)
    ranges = [r for _, rs in enclosing_scopes(scope) for r in rs]
    for axis, i in enumerate(idx):
        size = Affine(const=t.shape[axis]) if t.shape[axis] >= 0 else _dim(buf, axis)
        if size is None or not all(_holds(f, ranges) for f in (
                affine_of(i), size.plus(affine_of(i), -1).plus(Affine(const=-1)))):
            return False
    return True


def _dim(buf: Value, axis: int) -> Affine | None:
    """The size of a dynamic axis as a form, when a ``mem.dim`` of ``buf`` exists."""
    for user, _ in buf.uses:
        if isinstance(user, mem.DimOp) and user.attributes["axis"] == axis:
            return Affine.of_atom(user.result)
    return None


def _holds(form: Affine, ranges: list) -> bool:
    low = minimize(form, ranges)
    known = None if low is None else lower_bound(low)
    return known is not None and known >= 0


def unwritten(root: Value, lp: Operation) -> bool:
    """Nothing in ``lp`` writes ``root`` or memory that may be ``root``, and nothing in
    it is a call."""
    for op in lp.walk():
        if isinstance(op, func.CallOp):
            return False
        if op is lp or not op.traits & {"writes", "frees"}:
            continue
        dest = getattr(op, "dest", None)
        target = base_buffer(dest) if isinstance(dest, Value) else None
        fresh = isinstance(target, OpResult) and isinstance(target.op, mem.AllocOp)
        if target is None or target is root or not fresh:
            return False
    return True


_READ_ONLY = frozenset({"pure", "view", "reads", "constant", "checks", "terminator"})


def hoist_invariants(lp: Operation) -> None:
    """Move the loop-invariant pure ops and loads in ``lp`` (at any depth) before it,
    when nothing in ``lp`` writes memory.

    A failing check is an exit from the loop, so LLVM may no longer hoist a load that
    follows one (it is not sure to run).  In the fast copy every check of an invariant
    index was tested before the loop (or proven), so such a load is in bounds there and
    reads what any iteration would; a check left in the loop that is invariant (one
    that fails whenever it runs) keeps everything in place.  Never done without checks:
    with ``boundscheck=False`` an index of a loop that does not run may be out of
    bounds."""
    ops = [op for op in lp.walk() if op is not lp]
    if not all(op.region_list or op.traits & _READ_ONLY and not op.traits & {"writes", "frees"}
               and not isinstance(op, func.CallOp) for op in ops):
        return
    if any(isinstance(op, func.AssertOp) and invariant(op.cond, lp) for op in ops):
        return
    b = Builder.before(lp)
    for op in ops:  # pre-order: an op's operands move before it does
        if op.region_list or not (op.has_trait("pure") or isinstance(op, mem.LoadOp)):
            continue
        if op.parent is not None and all(not inside(lp, v) for v in op.operand_values):
            op.parent.detach(op)
            b.insert(op)


__all__ = ["hoist_invariants", "in_bounds", "inside", "invariant", "safe_load", "unwritten"]
