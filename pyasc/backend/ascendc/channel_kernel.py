"""A convolution over a run-time channel count as ONE stencil kernel (the plan).

``channel_stencil.match_channel_stencil`` recognizes the ``channels`` loop
``channel-interchange`` made, its body one stencil group adding a channel's taps to the
accumulator buffer.  :func:`plan_channel_kernel` plans it as a run-time stencil kernel
(``stencil_kernel``) with a :class:`~pyasc.backend.ascendc.stencil_kernel.ChannelPlan`:

* the group's input of the sum so far and its result are one UB accumulator per output
  plane of the unit (``accBuf_``, ``acc_tiles`` tiles: the host splits the output planes
  into groups of at most that many, each a unit of its own); the tile program adds
  the channel's taps to it in place (refused unless every read of the input comes
  before the first write of the result, so the in-place update reads the old sums);
* the per-plane weights ``w[:, c, *taps]`` are read from the channel's weights of the
  unit's planes, loaded once per channel into UB (``weight_bytes``) with one
  ``DataCopyPad`` of a row of taps per plane; every weight comes from one array;
* the channel's halo rows are the bases' (planes of the loop's index); the windows are
  gathered once per channel (each a tile of ``winBuf_``), not once per plane.

The kernel (``emit_channels``) starts every accumulator at the fill value, walks the
channels (the next channel's halo rows copied while this one computes), and writes the
accumulators to the accumulator buffer: the ``mem.fill`` before the loop is overwritten
whole, and nothing reads it.  An initial value per output (the nest
``channel-interchange`` writes before the loop, no fill) is read from the accumulator
buffer instead (``ChannelPlan.init`` "acc": ``acc = res[o, i, j] * 0.5``), unless it is
one value per output plane (``acc = bias[o]``: ``ChannelStencil.init_values``), which
the kernel reads itself, a value per plane of the unit ("planes"): the write before the
loop goes (``codegen``), and the accumulator buffer is only written.

The elementwise group after the loop (``ChannelStencil.post``: ``max(acc, 0)``, the
float16 cast of the float32 sums) is the kernel's epilogue when the kernel plans with
it (else it is planned again without, the group its own kernel): the vector lowering
makes it a tile program whose input is the plane's accumulator (``ChannelPlan.post``),
run on each plane once its sums are complete; its result is copied to ``out`` instead of
the accumulators, which then never reach GM (the host skips the group).  Its other
inputs (``ChannelStencil.post_inputs``): scalars become kernel parameters, a value
per plane a ``Duplicate`` of the plane's value (the unit's values in UB), a whole
array a tile buffer the kernel fills with the plane's rows (``ChannelPlan.post_inputs``).
Not with initial values read back from the accumulator buffer ("acc").
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import FULL, NotVectorizable, analyze
from pyasc.backend.ascendc.channel_plan import PLANE, WHOLE, ChannelPlan, PostInput
from pyasc.backend.ascendc.grouping import value_name
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.stencil_kernel import StencilKernel, plan_stencil_kernel
from pyasc.backend.ascendc.tiles import Buf, Instr, Ref
from pyasc.backend.ascendc.vec_kernel import RULES, KernelOutput, _outputs
from pyasc.backend.ascendc.vec_lower import VecLowering
from pyasc.ir.passes.channel_post import ACC, SCALAR
from pyasc.ir.passes.channel_stencil import ChannelStencil
from pyasc.ir.types import MemRefType, ScalarType

ACC_TILES = 16          # output planes whose accumulators a unit keeps (a group of planes)
WEIGHT_BYTES = 8192     # UB for a channel's weights of a unit's planes
MAX_TAPS_BYTES = 512    # one plane's taps of one channel (a row of the weight copy)


def plan_channel_kernel(cs: ChannelStencil, soc: SoC, name: str) -> StencilKernel | None:
    """The kernel of ``cs``, or None when it does not plan (the module docstring)."""
    w = cs.weights[0].weights if cs.weights else None
    if w is None or any(x.weights is not w for x in cs.weights) or \
            not isinstance(w.type, MemRefType) or cs.stencil.sizes is None:
        return None
    acc_type = cs.acc.type.element  # type: ignore[attr-defined]
    if not isinstance(acc_type, ScalarType) or not acc_type.is_float:
        return None

    def adapt(k: StencilKernel) -> None:
        assert isinstance(w.type, MemRefType)
        _accumulate_in_place(k, cs)
        wname = k.prog.unique(value_name(w) or "weights")
        _weights_from_ub(k, cs, wname)
        _multiply_by_weights(k)
        k.channels = ChannelPlan(k.inputs[cs.acc_input].vv.buf, k.outputs[0].buf,  # type: ignore[arg-type]
                                 acc_type, wname, w.type.element, w.type.rank,
                                 ACC_TILES, WEIGHT_BYTES, init=_start(cs))
        _windows_once_per_channel(k, k.channels)
        if cs.post is not None:
            _epilogue(k, cs, soc)

    k = plan_stencil_kernel(cs.group, soc, name, match=cs.stencil, adapt=adapt)
    if k is None and cs.post is not None:
        cs.post = None  # the kernel without the epilogue (it stays a kernel of its own)
        return plan_channel_kernel(cs, soc, name)
    if k is not None and k.channels is not None and k.channels.post:
        # (the epilogue's instructions took part in the buffers' assignment: after the
        # channels' program, so its temporaries may share their physical buffers)
        del k.prog.instrs[-len(k.channels.post):]
    return k


def _epilogue(k: StencilKernel, cs: ChannelStencil, soc: SoC) -> None:
    """The elementwise group after the loop (``ChannelStencil.post``) as a tile program
    on each plane's accumulator (``ChannelPlan.post``), its result the buffer the
    kernel copies to ``out`` (the kernel's output instead of the accumulators); its
    other inputs :func:`_post_inputs`."""
    plan, post = k.channels, cs.post
    assert plan is not None and post is not None
    if plan.init == "acc" or not k.dynamic:  # (the accumulator buffer is read at the start)
        raise NotVectorizable("an epilogue beside initial values per output", post.loc)
    info = analyze(post)
    if info.schedule != "flat":
        raise NotVectorizable("an epilogue that is not elementwise", post.loc)
    args = post.body.blocks[0].args
    for arg, pv in zip(args, cs.post_inputs, strict=True):
        arg.name_hint = arg.name_hint or value_name(pv.value)
    low = VecLowering(post, info, soc, RULES)
    low.prog.names = k.prog.names  # (one kernel: names unique across both programs)
    low.run()
    outs = _outputs(low, post)
    if len(outs) != 1 or outs[0].kind != FULL or outs[0].buf is None or \
            low.prog.reduce_tmp_types:
        raise NotVectorizable("an epilogue that is not one elementwise result", post.loc)
    _post_inputs(low, cs, plan)
    result = outs[0].buf
    # the tile's pitch a whole number of 32-byte blocks of every epilogue buffer's
    # elements too: the most elements of 32 bytes (the narrowest type's; powers of 2)
    k.unit = max([k.unit, *(32 // b.itemsize for b in low.prog.buffers if b.kind == "tile")])
    result.role = "acc"  # a TBuf of its own, copied to GM after the program
    plan.post, plan.post_scalars, plan.post_out = \
        list(low.prog.instrs), list(low.prog.scalars), result
    k.prog.buffers.extend(low.prog.buffers)
    k.prog.instrs.extend(low.prog.instrs)
    k.outputs[0] = KernelOutput(0, FULL, result)


def _post_inputs(low: VecLowering, cs: ChannelStencil, plan: ChannelPlan) -> None:
    """The epilogue's inputs: the accumulators' snapshot reads the plane's accumulator;
    a scalar is a kernel parameter (``ChannelPlan.post_params``); a value per plane is
    filled over the tile (``Duplicate`` of ``<name>Vals.GetValue(plane)``, the unit's
    values in UB) before its first use; a whole array's tile buffer receives the
    plane's rows before the program (``PostInput``)."""
    for arg, pv in zip(low.group.body.blocks[0].args, cs.post_inputs, strict=True):
        vv = low.get(arg)
        if pv.kind == SCALAR:
            plan.post_params.append((vv.expr, vv.dtype))
            continue
        buf = vv.buf
        # (every array input read: the host passes them all, in this order)
        if buf is None or vv.cls != FULL or \
                not any(buf in ins.reads() for ins in low.prog.instrs) or \
                any(ins.dst is not None and ins.dst.buf is buf for ins in low.prog.instrs):
            raise NotVectorizable("an epilogue input that is not a tile it reads",
                                  low.group.loc)
        if pv.kind == ACC:
            _read_accumulator(low, buf, plan)
        elif pv.kind == PLANE:
            _fill_plane_value(low, buf, plan, value_name(pv.value))
        else:  # WHOLE: a TBuf of its own, copied in before the program
            buf.role = "acc"
            plan.post_inputs.append(PostInput(buf.name, WHOLE, buf.dtype, buf, pv.offsets))


def _read_accumulator(low: VecLowering, source: Buf, plan: ChannelPlan) -> None:
    """The epilogue reads the plane's accumulator where it read ``source``."""
    low.prog.buffers.remove(source)
    for ins in low.prog.instrs:
        ins.srcs = tuple(Ref(plan.acc_out, s.row) if isinstance(s, Ref) and s.buf is source
                         else s for s in ins.srcs)
    if any(source in ins.reads() for ins in low.prog.instrs):
        raise NotVectorizable("the epilogue reads its input otherwise", low.group.loc)


def _fill_plane_value(low: VecLowering, buf: Buf, plan: ChannelPlan, hint: str | None) -> None:
    """``buf`` (a temporary now) is filled with the plane's value right before the
    first instruction reading it."""
    name = low.prog.unique(hint or "perPlane")
    buf.role = "calc"
    first = next(i for i, ins in enumerate(low.prog.instrs) if buf in ins.reads())
    ins = Instr("Duplicate", Ref(buf), (f"{name}Vals.GetValue(plane)",), (), "tile",
                loc=low.group.loc)
    if low.prog.check is not None:
        low.prog.check(ins)
    low.prog.instrs.insert(first, ins)
    plan.post_inputs.append(PostInput(name, PLANE, buf.dtype, buf))


def _start(cs: ChannelStencil) -> str:
    """Where the accumulators start (``ChannelPlan.init``)."""
    return "fill" if cs.fill is not None else "planes" if cs.init_values is not None else "acc"


def _accumulate_in_place(k: StencilKernel, cs: ChannelStencil) -> None:
    """The sum so far and the result become the accumulator (both leave the program's
    buffers); refused unless the update is safe in place."""
    acc_in = k.inputs[cs.acc_input].vv.buf
    if acc_in is None or len(k.outputs) != 1 or k.outputs[0].buf is None:
        raise NotVectorizable("a channel stencil of several results", k.group.loc)
    out = k.outputs[0].buf
    instrs = k.prog.instrs
    reads = [i for i, ins in enumerate(instrs) if acc_in in ins.reads()]
    writes = [i for i, ins in enumerate(instrs) if ins.dst is not None and ins.dst.buf is out]
    rewritten = any(ins.dst is not None and ins.dst.buf is acc_in for ins in instrs)
    if not writes or rewritten or reads and max(reads) > min(writes) or \
            acc_in.dtype != out.dtype or acc_in.dtype != cs.acc.type.element:  # type: ignore[attr-defined]
        raise NotVectorizable("the accumulator is not updated in place", k.group.loc)
    k.prog.buffers.remove(acc_in)
    k.prog.buffers.remove(out)


def _weights_from_ub(k: StencilKernel, cs: ChannelStencil, wname: str) -> None:
    """Each weight input's ``Duplicate`` reads its tap of the plane from the channel's
    weights in UB (``<w>Vals``: a row of ``W_ROW`` elements per plane of the unit)."""
    taps = {x.index: x.taps for x in cs.weights}
    for p in k.planes_in:
        buf = k.inputs[p.index].vv.buf
        rank = len(taps[p.index]) + 2
        at = " + ".join(f"{t} * {_stride(wname, a + 2, rank)}"
                        for a, t in enumerate(taps[p.index]))
        for ins in k.prog.instrs:
            if ins.api == "Duplicate" and ins.dst == Ref(buf):  # type: ignore[arg-type]
                ins.srcs = (f"{wname}Vals.GetValue(plane * W_ROW + {at})",)
    k.planes_in = []


def _multiply_by_weights(k: StencilKernel) -> None:
    """A weight's ``Duplicate`` that only ``Mul`` reads becomes ``Muls`` by the weight
    itself (the same products: one call and one tile buffer fewer per tap)."""
    instrs = k.prog.instrs
    for dup in [i for i in instrs if i.api == "Duplicate" and i.dst is not None and
                isinstance(i.srcs[0], str) and "Vals.GetValue(plane" in i.srcs[0]]:
        assert dup.dst is not None
        buf = dup.dst.buf
        users = [i for i in instrs if buf in i.reads()]
        if not users or any(u.api != "Mul" or u.per_row or u.srcs.count(Ref(buf)) != 1
                            for u in users):
            continue
        for u in users:
            other = u.srcs[1] if u.srcs[0] == Ref(buf) else u.srcs[0]
            u.api, u.srcs = "Muls", (other, dup.srcs[0])
        instrs.remove(dup)
        k.prog.buffers.remove(buf)


def _windows_once_per_channel(k: StencilKernel, plan: ChannelPlan) -> None:
    """The windows' gathers leave the per-plane program: the kernel runs them once per
    channel, into a tile each that every plane reads."""
    plan.windows = [i for i in k.prog.instrs if i.api == "Gather"]
    for ins in plan.windows:
        assert ins.dst is not None
        k.prog.instrs.remove(ins)
        k.prog.buffers.remove(ins.dst.buf)
        if any(ins.dst.buf is (i.dst.buf if i.dst is not None else None) for i in k.prog.instrs):
            raise NotVectorizable("a window written in the kernel", k.group.loc)
    plan.window_bytes = k.base_types[0].itemsize


def _stride(wname: str, axis: int, rank: int) -> str:
    """The element stride of ``axis`` of the weight array (its run-time dims)."""
    dims = [f"{wname}Dim{a}_" for a in range(axis + 1, rank)]
    return " * ".join(dims) if dims else "1"


__all__ = ["ACC_TILES", "MAX_TAPS_BYTES", "WEIGHT_BYTES", "plan_channel_kernel"]
