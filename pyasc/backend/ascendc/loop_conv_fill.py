"""Filling the buffers of rewritten conv nests (``loop_conv_nest``) with their matmul.

After the second ``batch-loops`` (which would have batched the im2col copy loop into
something ``conv_match`` no longer recognizes, so the copies are emitted only now), each
nest's buffer gets ``ConvEmitter``'s im2col copies and matmul right after its alloc.  When
the batched epilogue reads the buffer only as whole snapshots (the buffer is fresh:
nothing else writes it), the snapshots read the matmul result itself and the buffer is
dropped, so the epilogue is the matmul's (a conv MIX kernel, Fixpipe's ReLU) with no
round trip through GM.
"""

from __future__ import annotations

from pyasc.backend.ascendc.loop_conv import ConvEmitter
from pyasc.backend.ascendc.loop_conv_nest import NestConv
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import mem
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.types import MemRefType


def emit_convs(pending: list[tuple[NestConv, Operation]]) -> None:
    """Fill each rewritten nest's buffer with its convolution, right after its alloc
    (after the second ``batch-loops``, which would batch the im2col copy loop)."""
    for m, alloc in pending:
        t = alloc.result_values[0].type
        assert isinstance(t, MemRefType)
        at = alloc.parent.ops[alloc.parent.index_of(alloc) + 1]  # type: ignore[union-attr]
        e = ConvEmitter(m.x, m.w, m.geo, m.origin, at)
        y = e.product(t.tensor_type())
        if not _forward(alloc, y):
            e.b.insert(mem.WriteOp([y, alloc.result_values[0]], []))


def _whole(view: Operation) -> bool:
    """``view`` is a unit-step subview of all of its source."""
    parts = [[constant_int(v) for v in p] for p in view.parts()]  # type: ignore[attr-defined]
    shape = list(view.operand_values[0].type.shape)  # type: ignore[attr-defined]
    return not view.attributes.get("drop") and all(o == 0 for o in parts[0]) and \
        parts[1] == shape and all(k == 1 for k in parts[2])


def _forward(alloc: Operation, y: Value) -> bool:
    """When the batched epilogue reads the buffer only as whole snapshots (nothing else
    writes it: it is fresh), read ``y`` instead and drop the buffer, so the epilogue
    is the matmul's (a MIX kernel, Fixpipe's ReLU) with no round trip through GM."""
    buf = alloc.result_values[0]
    snaps = []
    for user, _ in buf.uses:
        views = [user] if isinstance(user, mem.ToTensorOp) else \
            [u for u, _ in user.result_values[0].uses] \
            if isinstance(user, mem.SubviewOp) and _whole(user) else None
        if not views or not all(isinstance(v, mem.ToTensorOp) for v in views):
            return False
        snaps += views
    for snap in snaps:
        snap.result_values[0].replace_all_uses_with(y)
        snap.erase()
    for user in [u for u, _ in buf.uses]:
        user.erase()
    alloc.erase()
    return True


__all__ = ["emit_convs"]
