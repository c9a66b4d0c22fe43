"""``forward-writes``: a local buffer written whole and read whole holds its last value.

An in-place update of a computed array (``wts /= wts.sum()``, ``acc += x`` on an array
value) makes the frontend allocate a buffer for it (``mem.alloc``), write the value
(``mem.write``) and snapshot it back (``mem.to_tensor``) after each update.  When every use
of such a buffer is one of these, in the block of its allocation (no view, no element
access, no use in a nested region, not returned: nothing else can read or write it), each
snapshot is the value of the last write before it, and is replaced by that value
(store-to-load forwarding).  The buffer is then only written, which ``dce`` drops, and
the array work stays values: fused, batched over a user loop (the window loops that the
AscendC backend runs as stencil kernels: a bilateral filter normalising its weights in
place was a scalar kernel), vectorized by the CPU backend.

A write broadcasts its value into the buffer, so it forwards only when the value has the
buffer's shape: the same static shape, or run-time sizes proven equal by ``ShapeSyms``
(extended here with the allocation's sizes and snapshots).  Any other write (a scalar, a
broadcast) leaves the following snapshots as they are until the next whole write.  No
value changes: a snapshot and the value last written are the same array.
"""

from __future__ import annotations

from pyasc.ir.core import Block, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.fusion_shapes import Shape, ShapeSyms
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.types import DYN, MemRefType, TensorType


class BufferSyms(ShapeSyms):
    """``ShapeSyms`` that also knows the sizes of an allocation and of a view, and a
    snapshot's shape (its buffer's)."""

    def _compute(self, v: Value) -> Shape:
        op = v.op if isinstance(v, OpResult) else None
        if isinstance(op, mem.ToTensorOp):
            return self.of(op.source)
        if isinstance(op, mem.AllocOp):
            dims = iter(op.operand_values)
            return tuple(self.size(next(dims)) if d == DYN else d
                         for d in v.type.shape)  # type: ignore[attr-defined]
        if isinstance(op, mem.SubviewOp):
            drop = op.attributes.get("drop") or ()
            return tuple(self.size(n) for a, n in enumerate(op.parts()[1]) if a not in drop)
        return super()._compute(v)

    def size(self, v: Value) -> object:
        """A buffer's extent (``mem.dim``) is its symbol, as a tensor's (``tensor.dim``)."""
        if isinstance(v, OpResult) and isinstance(v.op, mem.DimOp):
            return self.of(v.op.source)[v.op.attributes["axis"]]
        return super().size(v)


def _local_uses(buf: Value, block: Block) -> bool:
    """Every use of ``buf`` is a whole write into it or a snapshot of it, in ``block``."""
    for user, idx in buf.uses:
        if user.parent is not block:
            return False
        if not (isinstance(user, mem.ToTensorOp) or
                isinstance(user, mem.WriteOp) and idx == 1 and user.value is not buf):
            return False
    return True


def _forward_buffer(alloc: mem.AllocOp, syms: BufferSyms) -> bool:
    """Replace each snapshot of ``alloc``'s buffer by the value last written whole."""
    buf, block = alloc.result, alloc.parent
    t = buf.type
    if block is None or not isinstance(t, MemRefType) or not _local_uses(buf, block):
        return False
    users = {id(u) for u, _ in buf.uses}
    current: Value | None = None
    changed = False
    for op in block.ops[block.index_of(alloc) + 1:]:
        if id(op) not in users:
            continue
        if isinstance(op, mem.WriteOp):
            v = op.value
            same = isinstance(v.type, TensorType) and v.type == t.tensor_type() and \
                syms.of(v) == syms.of(buf)
            current = v if same else None
        elif current is not None and op.result_values[0].uses:
            op.result_values[0].replace_all_uses_with(current)
            changed = True
    return changed


def forward_writes(module: ModuleOp) -> bool:
    """Forward the writes of every local buffer of ``module``; True if anything changed."""
    syms = BufferSyms()
    allocs = [op for op in module.walk() if isinstance(op, mem.AllocOp)]
    return any([_forward_buffer(op, syms) for op in allocs])


@register_pass
class ForwardWrites(Pass):
    """Snapshots of a buffer written whole become the value written (module docstring)."""

    name = "forward-writes"
    description = __doc__ or ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        forward_writes(module)


__all__ = ["BufferSyms", "ForwardWrites", "forward_writes"]
