"""The rewrite of the convolution nests ``loop_conv_nest`` recognizes: a fresh buffer
before the nest for the convolution (computed there by ``loop_conv_fill.emit_convs``),
and the reduction a load of it (``init + conv[[n,] o, i, j]``: index 0 of an output axis
without a loop), which ``batch-loops``, run again, batches with the epilogue.
"""

from __future__ import annotations

from pyasc.backend.ascendc.loop_conv_nest import NestConv, match_nest, match_window_sum
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import MemRefType, index


def _zero(v: Value) -> bool:
    """``v`` is a constant 0.0 (the cube's sums start from +0.0: adding it changes no
    bit, so the epilogue needs no kernel)."""
    return isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and \
        v.op.attributes["value"] == 0


def _match(op: Operation, top: set[int]) -> NestConv | None:
    if isinstance(op, loop.ForOp) and len(op.inits) == 1:
        return match_nest(op, top)
    return match_window_sum(op, top) if isinstance(op, FusionGroupOp) else None


def _rewrite(m: NestConv) -> tuple[NestConv, Operation]:
    """A fresh buffer before the nest for the convolution, the reduction a load of it;
    returns the buffer's alloc, after which ``loop_conv_fill.emit_convs`` computes it."""
    g, top = m.geo, m.space[0]
    elem = m.x.type.element  # type: ignore[attr-defined]
    batch = m.names["n"] is not None
    shape = (g.n, g.o, g.oh, g.ow) if batch else (g.o, g.oh, g.ow)
    alloc = Builder.before(top).insert(mem.AllocOp([], [MemRefType(shape, elem)]))
    b = Builder.before(m.red)
    zero = b.insert(arith.ConstantOp.new(0, index)).result  # an axis of 1 (no loop)
    ivs = [zero if v is None else v for v in list(m.names.values())[0 if batch else 1:]]
    got = b.insert(mem.LoadOp([alloc.result, *ivs], [elem])).result
    init = m.red.inits[0] if isinstance(m.red, loop.ForOp) else None
    if init is not None and not _zero(init):  # acc = init; acc += ...: init + the sum
        got = b.insert(arith.AddOp([m.red.inits[0], got], [elem])).result
    m.red.result_values[0].replace_all_uses_with(got)
    inputs = list(m.red.operand_values)
    m.red.erase()
    for v in inputs:  # the window snapshots of a window sum, now unread
        while isinstance(v, OpResult) and not v.uses and v.op.parent is not None and \
                isinstance(v.op, mem.ToTensorOp | mem.SubviewOp):
            op, v = v.op, v.op.operand_values[0]
            op.erase()
    return m, alloc


def rewrite_loop_nests(fn: FuncOp, soc: SoC, keep_order: bool = False
                       ) -> list[tuple[NestConv, Operation]]:
    """Rewrite every conv reduction nest in ``fn``'s top-level blocks (after
    ``batch-loops``: the ones it left scalar, which the cube beats by orders of
    magnitude, so no estimate is asked); ``keep_order``: none.  Returns what
    ``loop_conv_fill.emit_convs`` completes."""
    if soc.cube is None or keep_order:
        return []
    blocks = top_blocks(fn.entry)
    top = {id(b) for b in blocks}
    found = []
    for block in blocks:
        for op in block.ops:
            if isinstance(op, loop.ForOp):
                found += [m for r in op.walk() if (m := _match(r, top)) is not None]
    return [_rewrite(m) for m in found]


__all__ = ["rewrite_loop_nests"]
