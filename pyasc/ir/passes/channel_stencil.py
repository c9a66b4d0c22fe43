"""``channel_stencil``: a loop ``channel-interchange`` made, with the stencil group its
body became, recognized as ONE stencil over a run-time count of channels.

After ``channel-interchange`` and ``batch-loops`` a convolution with a run-time channel
count (``for c in range(x.shape[0])``) is::

    acc = alloc(O, rows, cols); fill(init, acc)
    for c in range(C):                                   # marked ``channels``
        acc[...] = group(to_tensor(acc),                 # the sum so far
                         x[c, a:..., b:...] broadcast over the O planes,   # 9 windows
                         w[:, c, a, b] as (O, 1, 1),     # 9 per-plane weights
                         scalars defined before the loop)
    out[...] = acc                                       # the final copy nest

(``(N, O, rows, cols)`` with a batch loop around it: windows ``x[:, c, a:..., b:...]``
and weights ``(1, O, 1, 1)``).  :func:`match_channel_stencil` recognizes it from the IR
alone: the group's windows are a :class:`~pyasc.ir.passes.stencil_windows.StencilMatch`
whose bases are planes of the loop's index (``StencilBase.channel``), every per-plane
input is a tap of a weight array indexed by the channel (:class:`ChannelWeight`), one
input is the whole accumulator buffer, and the group's one result is written back to it
whole.  Nothing else in the body writes memory, and every scalar input is defined before
the loop, so the loop is the channel loop of one kernel: per tile of the output, the
accumulators stay in UB while the kernel walks the channels, each channel's halo rows
read once for every output plane.  When the only reader of ``acc`` after the loop is one
elementwise group, written to an array the function allocates over the same extents
(``out[...] = max(acc, 0)``, float16's cast of the float32 sums, ``acc * s + b[o]``,
``acc + r[o, i, j]``: ``channel_post``), that group is the match's ``post``: the
kernel's epilogue (``backend/ascendc/channel_kernel.py``).

:func:`match_channel_group` is the same test of a group alone (no write yet: a merge
probe while grouping builds it), :func:`channel_bodies` the blocks grouping must look
into.  This module only recognizes; the AscendC backend's ``channel_kernel`` runs the
match (``docs/ascendc-backend.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import loop, mem, tensor
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.passes.channel_post import PostValue, post_group_after
from pyasc.ir.passes.channel_views import inside, per_plane_values, whole_buffer
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.stencil_windows import StencilMatch, match_stencil
from pyasc.ir.passes.window_values import static_int
from pyasc.ir.types import MemRefType, ScalarType


@dataclass
class ChannelWeight:
    """Group input ``index`` is ``weights[:, c, *taps]`` (one value per output plane,
    for channel ``c``)."""

    index: int
    weights: Value                   # the (O, C, *taps' extents) buffer
    taps: tuple[int, ...]            # the static offsets after the channel axis


@dataclass
class ChannelStencil:
    """A ``channels`` loop whose body is one stencil group accumulating into ``acc``."""

    loop: loop.ForOp
    group: FusionGroupOp
    stencil: StencilMatch            # its windows: planes of the loop's index
    acc: Value                       # the accumulator buffer (a ``mem.alloc``)
    acc_input: int                   # the group input reading the sum so far
    weights: list[ChannelWeight] = field(default_factory=list)
    write: mem.WriteOp | None = None  # the group's result written back to ``acc``
    fill: mem.FillOp | None = None   # ``acc``'s initial value, before the loop
    # or one initial value per output plane (``acc = bias[o]``): ``init`` writes all of
    # ``acc`` before the loop, a broadcast of ``init_values[p]`` over plane ``p``
    init: mem.WriteOp | None = None
    init_values: Value | None = None  # the 1-D view of the planes' values
    # the one elementwise group after the loop reading ``acc`` (its only reader there),
    # its result written to ``post_out`` over the same extents (the kernel's epilogue)
    post: FusionGroupOp | None = None
    post_write: mem.WriteOp | None = None
    post_out: Value | None = None
    post_inputs: list[PostValue] = field(default_factory=list)  # one per post input


def channel_bodies(block: Block) -> list[Block]:
    """The bodies of the ``channels`` loops among the ops of ``block``."""
    return [op.body.blocks[0] for op in block.ops
            if isinstance(op, loop.ForOp) and op.attributes.get("channels")]


def _accumulator(group: FusionGroupOp, chan: loop.ForOp) -> tuple[int, Value] | None:
    """``(input index, buffer)`` of the one group input that is a snapshot of a whole
    buffer allocated before the loop (the sum so far), else None."""
    found = []
    for index, v in enumerate(group.inputs):
        if isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp):
            buf = whole_buffer(v.op.operand_values[0], chan)
            if buf is not None and buf.type.rank == v.type.rank:  # type: ignore[attr-defined]
                found.append((index, buf))
    return found[0] if len(found) == 1 else None


def _weight(src: Value, chan: loop.ForOp) -> tuple[Value, tuple[int, ...]] | None:
    """``(w, taps)`` when the per-plane values ``src`` are ``w[:, c, *taps]`` reshaped
    (``(O, 1, 1)``, or ``(1, O, 1, 1)`` in a batch loop's space), else None."""
    if not (isinstance(src, OpResult) and isinstance(src.op, tensor.ReshapeOp)):
        return None
    snap = src.op.operand_values[0]
    if not (isinstance(snap, OpResult) and isinstance(snap.op, mem.ToTensorOp)):
        return None
    view = snap.op.operand_values[0]
    if not (isinstance(view, OpResult) and isinstance(view.op, mem.SubviewOp)):
        return None
    w, (offsets, _, steps) = view.op.source, view.op.parts()
    rank = len(offsets)
    taps = [static_int(o) for o in offsets[2:]]
    if not isinstance(w.type, MemRefType) or not w.type.is_contiguous or rank < 3 or \
            tuple(view.op.attributes.get("drop") or ()) != tuple(range(1, rank)) or \
            constant_int(offsets[0]) != 0 or offsets[1] is not chan.induction_var or \
            any(t is None for t in taps) or any(static_int(s) != 1 for s in steps):
        return None
    return w, tuple(taps)  # type: ignore[arg-type]


def match_channel_group(group: FusionGroupOp, chan: loop.ForOp) -> ChannelStencil | None:
    """``group`` (in the body of ``chan``) as one channel of a channel stencil: its
    windows planes of ``chan``'s index, its per-plane inputs weights of that channel,
    one input the whole accumulator, its scalars defined before the loop; else None."""
    acc = _accumulator(group, chan)
    if acc is None or len(group.result_values) != 1:
        return None
    m = match_stencil(group, chan.induction_var, frozenset({acc[0]}))
    if m is None or not m.bases or not all(b.channel and b.fixed for b in m.bases):
        return None
    if any(isinstance(v.type, ScalarType) and inside(v, chan) for v in group.inputs):
        return None  # a scalar of the channel (the host could not pass it once)
    found = ChannelStencil(chan, group, m, acc[1], acc[0])
    for index, src in sorted(m.per_plane.items()):
        weight = _weight(src, chan)
        if weight is None:
            return None
        found.weights.append(ChannelWeight(index, *weight))
    return found


def match_channel_stencil(chan: Operation) -> ChannelStencil | None:
    """The channel stencil of ``chan`` (the module docstring), else None."""
    if not (isinstance(chan, loop.ForOp) and chan.attributes.get("channels")) or \
            chan.inits or constant_int(chan.lower) != 0 or constant_int(chan.step) != 1:
        return None
    body = chan.body.blocks[0].ops[:-1]
    groups = [op for op in body if isinstance(op, FusionGroupOp)]
    writes = [op for op in body if op.has_trait("writes") or op.region_list]
    if len(groups) != 1 or len(writes) != 2 or not isinstance(writes[-1], mem.WriteOp):
        return None  # the group (pure, with a region) and the write back, nothing else
    found = match_channel_group(groups[0], chan)
    write = writes[-1]
    if found is None or write.operand_values[0] is not groups[0].result_values[0] or \
            whole_buffer(write.operand_values[1], chan) is not found.acc:
        return None
    found.write = write
    found.fill = _fill_before(chan, found.acc)
    if found.fill is None:
        start = _plane_init_before(chan, found.acc)
        if start is not None:
            found.init, found.init_values = start
    post = post_group_after(chan, found.acc)
    read = {base_buffer(v) for v in [*(b.value for b in found.stencil.bases),
                                     *(w.weights for w in found.weights),
                                     *([found.init_values] if found.init_values else [])]}
    if post is not None and post[2] not in read:  # (no unit writes what another reads)
        found.post, found.post_write, found.post_out, found.post_inputs = post
    return found


def _fill_before(chan: loop.ForOp, acc: Value) -> mem.FillOp | None:
    """The ``mem.fill`` of all of ``acc`` that sets its initial value: the last op before
    ``chan`` that touches ``acc``, when it is one."""
    block = chan.parent
    assert block is not None
    for op in reversed(block.ops[:block.index_of(chan)]):
        if acc in op.operand_values:
            return op if isinstance(op, mem.FillOp) and op.operand_values[1] is acc else None
    return None


def _plane_init_before(chan: loop.ForOp, acc: Value) -> tuple[mem.WriteOp, Value] | None:
    """``(write, values)`` when the last op before ``chan`` that writes memory is the
    write of ``broadcast(reshape(values))`` to all of ``acc``, ``values`` a 1-D view of
    one value per output plane (``channel-interchange``'s batched ``tmp[o, i, j] =
    bias[o]``), and nothing after it reads ``acc``: the kernel can read ``values``
    itself at the launch, and the write go."""
    block = chan.parent
    assert block is not None
    for op in reversed(block.ops[:block.index_of(chan)]):
        if not (op.has_trait("writes") or op.region_list):
            if op.has_trait("reads") and any(base_buffer(v) is acc for v in op.operand_values):
                return None  # (a snapshot of the initial values)
            continue
        if not isinstance(op, mem.WriteOp) or whole_buffer(op.operand_values[1], chan) is not acc:
            return None
        values = per_plane_values(op.operand_values[0], acc.type.rank)  # type: ignore[attr-defined]
        return (op, values) if values is not None else None
    return None


__all__ = ["ChannelStencil", "ChannelWeight", "channel_bodies", "match_channel_group",
           "match_channel_stencil"]
