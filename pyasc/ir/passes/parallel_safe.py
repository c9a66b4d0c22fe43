"""Which loops may be split over threads without changing what anyone sees.

An analysis of loop-level IR shared by the CPU backend (``backend/llvm/parallel.py``
splits the outermost :func:`splittable` loop) and ``memplan`` (which keeps loop-private
buffers inside that loop, so that it stays splittable).  Three questions about a
``loop.for`` without carried values:

:func:`independent` -- may its iterations run in any order, at once?  Passes mark the
loops they generate ``parallel = true``; a loop the user wrote (``for i in range(...)``)
is proved independent here when every memory effect in it is one of:

* any access to a buffer allocated inside the loop (private to the iteration),
  including its ``mem.dealloc`` and whole-buffer writes (``mem.fill``, ``mem.copy``);
* loads from a buffer the loop never writes (parameters included);
* a ``mem.store`` into a buffer ``B`` the *function* allocates (``mem.alloc``, so no
  parameter and no view can alias it), directly (not through a view), with the loop
  variable itself as the index of one fixed axis of ``B`` in every store; every other
  use of ``B`` (or of a view of ``B``) inside the loop is a ``mem.load`` from ``B`` with
  the loop variable at that same axis, or ``mem.dim``.

Iteration ``i`` then writes only elements whose coordinate on that axis is ``i``, and
reads written elements only there: no two iterations touch the same written element.
Calls (``func.call``) and any other writing op make a loop dependent.  The seed's
bilateral filter's row loop qualifies.  The AscendC scalar backend
(``ascendc/scalar_plan.py``) asks the same question of a kernel's loop with its own
``owned`` (kernel arrays it knows share no memory with the others the loop touches).

:func:`partial_writes_visible` -- could a failing split loop leave the caller's memory
different from a sequential run?  Sequentially, iterations after the first failing one
never run; split, some of them may have run.  That is invisible when the loop writes
only buffers the function allocates (the kernel frees or discards them on an error;
a caller may name other hidden buffers), and impossible when nothing in the loop can
fail (``func.assert``, ``func.call``, an inner loop whose step is not a constant).  A
call counts as writing every memref it is given.  Allocation failure is not counted:
running out of memory is not reproducible anyway.

:func:`splittable` -- both of the above, for a loop marked ``parallel = true`` by the
pass that generated it or proved independent, that frees no buffer defined outside it,
and that is not a small loop (constant trip count, less than ``loop_cost.INLINE_WORK``
of work, which the pool would run inline anyway) nested in a loop carrying values: the
16-iteration lane loops of a float sum would otherwise become a pool call per step.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.loop_cost import INLINE_WORK, static_work
from pyasc.ir.types import MemRefType


def independent(op: loop.ForOp, owned: Callable[[Value], bool] | None = None) -> bool:
    """Whether the iterations of ``op`` touch no written element in common (see the
    module docstring); ``False`` whenever that cannot be shown.  ``owned(b)`` says
    whether a stored-to root buffer ``b`` shares memory with nothing else ``op`` can
    reach (default: ``b`` is a ``mem.alloc`` of the function)."""
    owned = owned or _function_owned
    if op.inits:
        return False
    iv = op.induction_var
    axes: dict[Value, int] = {}
    for inner in op.walk():
        if isinstance(inner, func.CallOp):
            return False
        if inner.has_trait("writes") and not isinstance(inner, mem.StoreOp) and \
                not all(_private(op, v) for v in _written(inner)):
            return False
        if isinstance(inner, mem.StoreOp) and not _private(op, inner.dest):
            if not _claims(inner, iv, axes, owned):
                return False
    return all(_uses_ok(op, buf, axes[buf], iv) for buf in axes)


def splittable(op: loop.ForOp) -> bool:
    """Whether ``op``'s iterations may run on several threads (see the module
    docstring); whether a loop nested in a split one is split too is the caller's call."""
    if op.inits or not (op.attributes.get("parallel") or independent(op)):
        return False
    if op.attributes.get("lanes"):
        return False  # a generated lane loop: one vector step, never worth a dispatch
    if _in_accumulation(op) and (static_work(op) or INLINE_WORK) < INLINE_WORK:
        return False  # a lane loop inside a sum: dispatched per step, always inline
    if partial_writes_visible(op):
        return False
    return not any(isinstance(d, mem.DeallocOp) and not _inside(op, d.buffer)
                   for d in op.walk())


def _in_accumulation(op: Operation) -> bool:
    """``op`` is nested in a loop carrying values (a sequential accumulation)."""
    parent = op.parent_op
    while parent is not None:
        if isinstance(parent, loop.WhileOp) or (isinstance(parent, loop.ForOp)
                                                and parent.inits):
            return True
        parent = parent.parent_op
    return False


def partial_writes_visible(op: loop.ForOp,
                           hidden: Callable[[Value], bool] | None = None) -> bool:
    """Whether a failing run of ``op`` split over threads could leave memory the caller
    can see different from a sequential run (see the module docstring).  ``hidden(b)``
    says whether the caller never sees root buffer ``b`` after a failure (default:
    ``b`` is a ``mem.alloc`` of the function)."""
    hidden = hidden or _function_owned
    return _can_fail(op) and any(not hidden(base_buffer(v)) for inner in op.walk()
                                 for v in _written(inner))


def _private(op: Operation, v: Value) -> bool:
    """``v`` views a buffer allocated inside ``op``."""
    root = base_buffer(v)
    return isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp) and \
        op is not root.op and op.is_ancestor_of(root.op)


def _inside(op: Operation, v: Value) -> bool:
    """``v`` is defined inside ``op`` (a result of a nested op or a block argument)."""
    owner = v.owner
    if isinstance(owner, Block):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)


def _function_owned(v: Value) -> bool:
    root = base_buffer(v)
    return isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp)


def _written(op: Operation) -> list[Value]:
    """The buffers ``op`` may write: a writing op's destination; for a call, every
    memref it is given."""
    if isinstance(op, func.CallOp):
        return [v for v in op.operand_values if isinstance(v.type, MemRefType)]
    if not op.has_trait("writes"):
        return []
    dest = getattr(op, "dest", None)
    return [dest if isinstance(dest, Value) else op.operand_values[0]]


def _claims(store: mem.StoreOp, iv: Value, axes: dict[Value, int],
            owned: Callable[[Value], bool]) -> bool:
    """A store directly into an ``owned`` buffer indexed by ``iv`` on the buffer's
    claimed axis (the first such axis of its first store)."""
    dest = store.dest
    if base_buffer(dest) is not dest or not owned(dest):
        return False
    positions = [k for k, v in enumerate(store.indices) if v is iv]
    if dest in axes:
        return axes[dest] in positions
    if not positions:
        return False
    axes[dest] = positions[0]
    return True


def _uses_ok(op: loop.ForOp, buf: Value, axis: int, iv: Value) -> bool:
    """Every use of ``buf`` or a view of it inside ``op`` stays on row ``iv``."""
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operand_values:
            if base_buffer(v) is not buf:
                continue
            if isinstance(inner, mem.DimOp):
                continue
            if isinstance(inner, (mem.LoadOp, mem.StoreOp)) and v is buf and \
                    _indexed(inner, axis, iv):
                continue
            return False
    return True


def _indexed(op: mem.LoadOp | mem.StoreOp, axis: int, iv: Value) -> bool:
    indices = op.indices
    return axis < len(indices) and indices[axis] is iv


def _can_fail(op: loop.ForOp) -> bool:
    for inner in op.walk():
        if isinstance(inner, (func.AssertOp, func.CallOp)):
            return True
        if isinstance(inner, loop.ForOp) and inner is not op and \
                not _nonzero_constant(inner.step):
            return True
    return False


def _nonzero_constant(v: Value) -> bool:
    owner = v.owner
    return isinstance(owner, arith.ConstantOp) and isinstance(owner.value, int) and \
        owner.value != 0
