"""What scalar AscendC cannot express: checks on a region at loop level.

* calls to other compiled functions;
* arrays carried by loops or produced by branches (kept in carrier arrays by
  ``emit_carry``) of run-time size (static ones of any size have carriers:
  ``scalar_plan.place_carriers``);
* writes into a carried array, or into an array a branch chose, whose buffer may be
  visible elsewhere: carriers are copies, numpy's arrays are references.

Each raises :class:`~pyasc.backend.ascendc.unsupported.DeviceUnsupportedError` at the
loop's or call's Python line.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import MemRefType

LOCAL_LIMIT = 4096
"""Largest static temporary (bytes) kept as a local array on the kernel's stack; also
the budget of the carrier arrays kept there (larger ones live in GM)."""


RUNTIME_SIZE_CARRIES = {
    False: ("an array of run-time size (dynamic_shape) kept from one iteration of this "
            "loop to the next or to the code after it (a name bound to a new array in "
            "the loop and read again before it is rebound)",
            "allocate the array before the loop and update it in place (acc += row, "
            "acc[:] = ...), or compile without dynamic_shape"),
    True: ("an array of run-time size (dynamic_shape) bound to a name in this branch "
           "and read after it",
           "write each branch's array into one array allocated before the branch "
           "(out[i] = ...), select with np.where, or compile without dynamic_shape"),
}
"""The error and hint of an array of run-time size kept across loop iterations (key
``False``) or out of a branch (``True``): scalar AscendC has no carrier for it."""


def reject_unsupported(low: FuncOp, private: Callable[[int], bool]) -> None:
    """Raise the coded error of the first construct in ``low`` (a region at loop level)
    that scalar AscendC cannot express; ``private(i)`` says whether argument ``i`` is a
    buffer nothing outside the region sees afterwards."""
    for op in low.walk():
        if isinstance(op, func.CallOp):
            raise unsupported("a call to another compiled function inside device code",
                              op.loc)
        if isinstance(op, loop.IfOp) and _writes_aliased_branch(op, low):
            raise unsupported("writing into an array chosen by a branch that may alias "
                              "another array", op.loc,
                              hint="copy the array in the branch (x.copy())")
        if isinstance(op, loop.ForOp | loop.WhileOp) and _writes_aliased_carry(op, private):
            raise unsupported("writing into a loop-carried array that may alias "
                              "another array", op.loc,
                              hint="copy the array before the loop (x.copy())")
        if isinstance(op, loop.ForOp | loop.WhileOp | loop.IfOp):
            if any(v.type.num_elements() is None for v in carried_values(op)):
                what, hint = RUNTIME_SIZE_CARRIES[type(op) is loop.IfOp]
                raise unsupported(what, op.loc, hint=hint)


def _writes_aliased_carry(lp: Operation, private: Callable[[int], bool]) -> bool:
    """Carried arrays are copies (emit_carry): wrong when the loop writes into one whose
    initial buffer is visible elsewhere: an argument that is not ``private`` to the
    region, or a buffer used anywhere but before the loop."""
    body = lp.region_list[0].blocks[0]
    carried = {a for a in body.args if isinstance(a.type, MemRefType)}
    if isinstance(lp, loop.WhileOp):
        carried |= {a for a in lp.after.blocks[0].args if isinstance(a.type, MemRefType)}
    if not any(isinstance(x, mem.StoreOp) and base_buffer(x.dest) in carried
               for x in lp.walk()):
        return False
    return not all(_owned(init, lp, private) for init in lp.operand_values
                   if isinstance(init.type, MemRefType))


def _owned(init: Value, lp: Operation, private: Callable[[int], bool]) -> bool:
    """``init`` is a buffer only ``lp`` uses from now on (a copy of it is unobservable)."""
    base = base_buffer(init)
    owned = isinstance(base, OpResult) and isinstance(base.op, mem.AllocOp) or \
        isinstance(base, BlockArgument) and isinstance(base.block.parent_op, FuncOp) \
        and private(base.index)
    return owned and all(_before(user, lp) for user in _users(base) if user is not lp)


def fresh_result(v: OpResult, private: Callable[[int], bool]) -> bool:
    """A ``for``/``if`` array result that is always a contiguous buffer of its own (every
    value it can take was allocated inside the op, or is a ``for``'s owned initial
    buffer): returning a copy of it (emit_carry) cannot be told from numpy's result."""
    op, i = v.op, v.index
    t = v.type
    if not isinstance(t, MemRefType) or t.strides is not None or \
            not isinstance(op, loop.ForOp | loop.IfOp):
        return False
    if isinstance(op, loop.ForOp) and not _owned(op.inits[i], op, private):
        return False
    for region in op.region_list:
        block = region.blocks[0]
        term = block.terminator
        y = term.operand_values[i] if term is not None else None
        base = base_buffer(y) if y is not None else None
        if y is None or y.type != t:
            return False
        if not (base in block.args or isinstance(base, OpResult) and
                isinstance(base.op, mem.AllocOp) and op.is_ancestor_of(base.op)):
            return False
    return True


def _writes_aliased_branch(op: loop.IfOp, fn: FuncOp) -> bool:
    """A branch's array results are copies too: wrong when code writes into one and a
    branch yields an array it did not allocate itself."""
    arrays = {r for r in op.result_values if isinstance(r.type, MemRefType)}
    if not arrays or not any(isinstance(x, mem.StoreOp) and base_buffer(x.dest) in arrays
                             for x in fn.walk()):
        return False
    for region in op.region_list:
        term = region.blocks[0].terminator
        for v in term.operand_values if term is not None else []:
            base = base_buffer(v)
            if isinstance(v.type, MemRefType) and not (
                    isinstance(base, OpResult) and isinstance(base.op, mem.AllocOp)
                    and op.is_ancestor_of(base.op)):
                return True
    return False


def _users(v: Value) -> list[Operation]:
    """Every op using ``v`` or a view of it."""
    out, todo = [], [v]
    while todo:
        for user, _ in todo.pop().uses:
            out.append(user)
            if user.has_trait("view"):
                todo.extend(user.result_values)
    return out


def _before(user: Operation, lp: Operation) -> bool:
    """``user`` runs before ``lp`` (both in ``lp``'s block, at any depth for ``user``)."""
    op: Operation | None = user
    while op is not None and op.parent is not lp.parent:
        op = op.parent_op
    ops = list(lp.parent.ops)  # type: ignore[union-attr]
    return op is not None and op is not lp and ops.index(op) < ops.index(lp)


def carried_values(op: Operation) -> list[Value]:
    """The memref values a loop or branch keeps in carrier arrays (``emit_carry.slot``):
    its array results, and a ``while``'s array state."""
    values = list(op.result_values)
    if isinstance(op, loop.WhileOp):
        values += op.before.blocks[0].args
    return [v for v in values if isinstance(v.type, MemRefType)]


__all__ = ["LOCAL_LIMIT", "carried_values", "fresh_result", "reject_unsupported"]
