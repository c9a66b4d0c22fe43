"""The AscendC backend's steps for a convolution over a run-time channel count.

``channel-interchange`` (``ir/passes/channel_interchange.py``) moves the run-time
channel loop out of the nest over outputs; ``batch-loops`` batches the nest inside it;
grouping groups its body (``grouping.form_groups`` looks into ``channels`` loops) and
:func:`merge_channel_groups` merges the body's groups into one, while the union is
still a channel stencil (``channel_stencil``) whose kernel plans; :func:`find_channel_loops`
plans each such loop as one kernel (``channel_kernel``), a partition item of its own,
and :func:`lower_channels` launches it (``host_channels``).

The interchange is only kept where it pays: :func:`interchange_channels` first runs
the steps up to grouping on a copy of the module and rewrites, in the module itself,
only the nests whose loop became one channel kernel there (any other nest stays as it
was: one scalar kernel, as before).  The window-slice form of the conv
(``np.sum(x[:, i:i+3, j:j+3] * w[o])``) enters the trial rewritten into the loop form
(``ir/passes/channel_slices.py``), kept on the same condition.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.analysis import NotVectorizable
from pyasc.backend.ascendc.channel_kernel import plan_channel_kernel
from pyasc.backend.ascendc.grouping import Probe, form_groups, merge_adjacent
from pyasc.backend.ascendc.host import Lowering
from pyasc.backend.ascendc.host_channels import launch_channels
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.stencil_kernel import MAX_STENCIL_OPS
from pyasc.ir.core import Operation, OpResult
from pyasc.ir.ops import loop, mem, tensor
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.channel_interchange import candidates, interchange_function, match
from pyasc.ir.passes.channel_slices import rewrite_slices, slice_candidates
from pyasc.ir.passes.channel_stencil import (
    ChannelStencil,
    match_channel_group,
    match_channel_stencil,
)
from pyasc.ir.passes.versioning import top_blocks


def channel_loops(fn: FuncOp) -> list[loop.ForOp]:
    """The ``channels`` loops of ``fn``'s top-level code, in order."""
    return [op for block in top_blocks(fn.entry) for op in block.ops
            if isinstance(op, loop.ForOp) and op.attributes.get("channels")]


def merge_channel_groups(fn: FuncOp, soc: SoC) -> None:
    """Merge the groups of each channel loop's body while the union is one channel
    stencil whose kernel plans (the taps of a channel: one group)."""
    for chan in channel_loops(fn):
        merge_adjacent(chan.body.blocks[0], _probe(chan, soc), MAX_STENCIL_OPS)


def _probe(chan: loop.ForOp, soc: SoC) -> Probe:
    def probe(group: FusionGroupOp) -> None:  # (a merge attempt's group is detached)
        cs = match_channel_group(group, chan)
        if cs is None:
            raise NotVectorizable("not a channel stencil", group.loc)
    return probe


def find_channel_loops(fn: FuncOp, soc: SoC) -> dict[Operation, ChannelStencil]:
    """The channel loops of ``fn`` that plan as one channel kernel, with their match."""
    found: dict[Operation, ChannelStencil] = {}
    for chan in channel_loops(fn):
        cs = match_channel_stencil(chan)
        if cs is not None and plan_channel_kernel(cs, soc, "probe") is not None:
            found[chan] = cs
    return found


def interchange_channels(module: ModuleOp, entry: str, soc: SoC,
                         prepare: Callable[[ModuleOp, FuncOp], None],
                         probe: Probe) -> int:
    """Rewrite the nests of ``module``'s function ``entry`` whose channel loop becomes
    one channel kernel: a trial on a copy rewrites the window-slice sums into their loop
    form (``channel_slices``), runs ``channel-interchange``, ``prepare`` (batch-loops
    and what the backend does before grouping), grouping with ``probe`` and the merge,
    and keeps the nests whose loop plans; returns how many."""
    fn = module.get(entry)
    slices = slice_candidates(fn)
    if not slices and not candidates(fn):
        return 0  # (no copy of the module)
    trial = module.clone()
    assert isinstance(trial, ModuleOp)
    tfn = trial.get(entry)
    fasts = rewrite_slices(tfn) if slices else []
    order = [op for block in top_blocks(tfn.entry) for op in block.ops
             if isinstance(op, loop.ForOp) and match(op) is not None]
    interchange_function(tfn)
    prepare(trial, tfn)
    form_groups(tfn, probe)
    merge_channel_groups(tfn, soc)
    planned = find_channel_loops(tfn, soc)
    chans = channel_loops(tfn)
    if len(chans) != len(order):  # (one loop per rewritten nest, in order)
        return 0
    keep = {op: chan in planned for op, chan in zip(order, chans, strict=True)}
    # a slice rewrite is kept where its loop planned; the nests' order is the trial's
    # without the rejected rewrites
    if fasts:
        rewrite_slices(fn, lambda k: keep.get(fasts[k], False))
    kept = [keep[op] for op in order if op not in fasts or keep[op]]
    return interchange_function(fn, lambda k: k < len(kept) and kept[k])


def lower_channels(lw: Lowering, cs: ChannelStencil) -> None:
    """The channel loop of ``cs`` as one kernel launch."""
    k = plan_channel_kernel(cs, lw.soc, lw._name())
    if k is None:  # find_channel_loops planned it: the same plan with another name
        raise NotVectorizable("the channel kernel did not plan again", cs.loop.loc)
    lw.kernels.append(k)
    lw.hb.b.loc = cs.loop.loc
    launch_channels(lw.hb, k, cs, lw.env, lw.soc.vector_blocks)


def start_ops(cs: ChannelStencil) -> list[Operation]:
    """The ops around the loop of ``cs`` that its kernel does itself (the host skips
    them): the fill of the accumulators, or the write of the planes' initial values
    with the broadcast that only it reads (``ChannelStencil.init``); the epilogue's
    (:func:`post_ops`)."""
    post = post_ops(cs)
    if cs.fill is not None:
        return [cs.fill, *post]
    if cs.init is None or cs.init_values is None:
        return post
    ops: list[Operation] = [cs.init, *post]
    v = cs.init.operand_values[0]  # broadcast(reshape(to_tensor(values))): only the write's
    while isinstance(v, OpResult) and v is not cs.init_values and len(v.uses) == 1:
        ops.append(v.op)
        v = v.op.operand_values[0]
    return ops


def post_ops(cs: ChannelStencil) -> list[Operation]:
    """The ops after the loop of ``cs`` that its kernel's epilogue does (``cs.post``):
    the view of the accumulators, its snapshot, the group and its write to ``out``, the
    snapshots (and their reshapes, broadcasts) of the arrays only the group reads."""
    if cs.post is None or cs.post_write is None:
        return []
    snap = cs.post.inputs[0]
    assert isinstance(snap, OpResult)
    view = snap.op.operand_values[0]
    assert isinstance(view, OpResult)
    only = len(view.uses) == 1  # (a view the loop reads too stays)
    ops = [view.op] * only + [snap.op, cs.post, cs.post_write]
    for v in cs.post.inputs:  # the snapshots of the epilogue's arrays only it reads
        while isinstance(v, OpResult) and v is not snap and len(v.uses) == 1 and \
                isinstance(v.op, mem.ToTensorOp | tensor.ReshapeOp | tensor.BroadcastOp):
            ops.append(v.op)
            v = v.op.operand_values[0]
    return ops


__all__ = ["channel_loops", "find_channel_loops", "interchange_channels", "lower_channels",
           "merge_channel_groups", "post_ops", "start_ops"]
