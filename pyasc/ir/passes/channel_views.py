"""Views around a ``channels`` loop (``channel_stencil``, ``channel_post``): whether a
value is defined inside the loop, a whole view of a buffer made before it, the 1-D
values of a broadcast of one value per output plane."""

from __future__ import annotations

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import loop, mem, tensor
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.passes.window_values import same_size, static_int
from pyasc.ir.types import DYN, MemRefType


def inside(v: Value, top: Operation) -> bool:
    """Whether ``v`` is a result of ``top`` or of an op inside it."""
    return isinstance(v, OpResult) and (v.op is top or top.is_ancestor_of(v.op))


def whole_buffer(view: Value, chan: loop.ForOp) -> Value | None:
    """The buffer ``view`` is all of (a unit-step subview at offset 0 of a ``mem.alloc``
    made before ``chan``, keeping every axis), else None."""
    if not (isinstance(view, OpResult) and isinstance(view.op, mem.SubviewOp)) or \
            view.op.attributes.get("drop"):
        return None
    buf = view.op.source
    offsets, _, steps = view.op.parts()
    if not (isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp)) or \
            inside(buf, chan) or any(constant_int(o) != 0 for o in offsets) or \
            any(static_int(s) != 1 for s in steps):
        return None
    return buf


def _size(v: Value, axis: int) -> Value | int:
    """The extent of ``axis`` of the tensor ``v`` (a reshape's or broadcast's result):
    its static size, or the operand that gives it."""
    shape = v.type.shape  # type: ignore[attr-defined]
    if shape[axis] != DYN:
        return shape[axis]
    return v.op.operand_values[1 + sum(d == DYN for d in shape[:axis])]  # type: ignore[attr-defined]


def per_plane_values(v: Value, rank: int) -> Value | None:
    """The 1-D memref whose ``[p]`` is plane ``p``'s value in ``v``, a tensor of
    ``rank`` (axis ``rank - 3`` the planes): ``broadcast(reshape(to_tensor(values)))``
    with every axis of the reshape 1 but the planes', of the broadcast's extent there."""
    if not (isinstance(v, OpResult) and isinstance(v.op, tensor.BroadcastOp)):
        return None
    shaped = v.op.operand_values[0]
    if not (isinstance(shaped, OpResult) and isinstance(shaped.op, tensor.ReshapeOp)):
        return None
    snap = shaped.op.operand_values[0]
    shape = shaped.type.shape  # type: ignore[attr-defined]
    axis = len(shape) - 3  # the planes' axis, right-aligned with the broadcast's
    if not (isinstance(snap, OpResult) and isinstance(snap.op, mem.ToTensorOp)) or \
            axis < 0 or any(d != 1 for k, d in enumerate(shape) if k != axis):
        return None
    values = snap.op.operand_values[0]
    a, b = _size(shaped, axis), _size(v, rank - 3)
    if isinstance(a, int) or isinstance(b, int):  # (a static extent)
        same = (a if isinstance(a, int) else static_int(a)) == \
            (b if isinstance(b, int) else static_int(b))
    else:
        same = same_size(a, b)
    ok = isinstance(values.type, MemRefType) and values.type.rank == 1 and \
        values.type.element == v.type.element  # type: ignore[attr-defined]
    return values if ok and same else None


def only_use(v: Value) -> Operation | None:
    """The one op using ``v``, else None."""
    ops = [op for op, _ in v.uses]
    return ops[0] if len(ops) == 1 else None


__all__ = ["inside", "only_use", "per_plane_values", "whole_buffer"]
