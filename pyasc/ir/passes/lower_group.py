"""``lower-to-loops`` rule for ``fusion.group``: one loop nest per group, no temporaries.

The body is classified again (``fusion_schedule.analyze``) and emitted with
``GroupEval``, which computes any body value at an index from loads of the inputs
(views, strides and negative steps are read through the lowered memrefs).  Only the
outputs are allocated (fresh contiguous buffers, as any tensor result) — plus, in one
stated ``rowwise`` case, one row buffer (``lower_group_rows``).

* ``elementwise``: one nest over the outputs' shape (outputs whose run-time sizes are
  the same values share it), C order so the innermost loop runs over the unit-stride
  axis of the outputs, the outermost loop ``parallel``.  A member constant along the
  trailing axes (a per-row scale) is computed once before the loops over those axes.
* ``reduction``/``rowwise`` with the last axis reduced: ``lower_group_rows``.
* ``reduction`` keeping the last axis (``column``): the reduction outputs are filled
  with the identity, then one nest over the source in C order updates them in place
  (source order, as numpy; outermost loop ``parallel`` when axis 0 is kept) and
  stores the domain-shaped outputs on the way.
* a group whose one result is only written into a view right after it
  (``out[:, o] += ...``, ``out[:, :, i, j] = x[...].mean(axis=(2, 3))``) stores into
  that view directly when no read can tell (``lower_group_inplace``); the
  ``mem.write`` then copies a buffer onto itself and is dropped.  When only a run-time
  test can tell (operands that are parameters, or views of them), the schedule is
  emitted twice under a ``loop.if`` on that test: stored directly, or into a
  temporary that is copied.
* ``generic`` (and any body the rules above cannot take): the body is inlined and
  lowered op by op.

Outputs whose sizes do not match the schedule's (only possible with dynamic sizes the
fusion pass could not prove equal) get their own nest after the schedule: correct,
just not fused.  Scalar outputs are plain values.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops.func import FusionGroupOp
from pyasc.ir.passes import lower_group_inplace, lower_group_rows
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.fusion_schedule import Schedule, analyze, reductions
from pyasc.ir.passes.fusion_shapes import ShapeSyms
from pyasc.ir.passes.lower_group_acc import Acc
from pyasc.ir.passes.lower_group_eval import GroupEval, hoister, nest, same_dims, supported
from pyasc.ir.passes.lower_group_rows import Outputs


def _elementwise(ev: GroupEval, sched: Schedule, outs: Outputs) -> None:
    families: list[list[Value]] = []
    for y in outs.tensors():
        for fam in families:
            if same_dims(ev.dims(fam[0]), ev.dims(y)):
                fam.append(y)
                break
        else:
            families.append([y])
    for fam in families:
        dims = ev.dims(fam[0])
        nest(ev.gen, dims, lambda ivs, fam=fam: outs.store_all(fam, ivs), parallel=True,
             at_depth=hoister(ev, dims, fam))
        outs.done.update(fam)


def _columns(ev: GroupEval, sched: Schedule, outs: Outputs) -> None:
    """Reductions keeping the last axis: in-place accumulation in source order."""
    gen = ev.gen
    reds = [r for r in reductions(ev.ops) if r.result in outs.buffers]
    if not reds:  # no reduction is read: only the domain-shaped outputs remain
        _elementwise(ev, sched, outs)
        return
    axes = sched.axes
    dims = ev.dims(reds[0].operand_values[0])
    accs = [Acc(ev, r, in_place=True) for r in reds]
    for acc in accs:
        buf = outs.buffers[acc.op.result]
        gen.copy(acc.zero(), buf, parallel=True)
        outs.done.add(acc.op.result)
    elementwise = [y for y in outs.tensors() if same_dims(ev.dims(y), dims)]
    outs.done.update(elementwise)

    def body(ivs: list[Value]) -> None:
        outs.store_all(elementwise, ivs)
        for acc in accs:
            keep = acc.op.attributes["keepdims"]
            where = [gen.const(0) if a in axes else iv for a, iv in enumerate(ivs)
                     if keep or a not in axes]
            buf = outs.buffers[acc.op.result]
            gen.store(acc.combine(gen.load(buf, where), acc.element(ivs)), buf, where)
    nest(gen, dims, body, parallel=0 not in axes, at_depth=hoister(ev, dims, elementwise))


def _inline(cx: Lowerer, op: Operation) -> list[Value]:
    """The unfused fallback: the body lowered op by op."""
    return cx.inline(op.region_list[0].blocks[0], cx.getall(op.operand_values))


def lower_group(cx: Lowerer, op: FusionGroupOp) -> list[Value]:
    """Lower one ``fusion.group`` (module docstring)."""
    block = op.body.blocks[0]
    ops, outputs = block.ops[:-1], block.ops[-1].operand_values
    sched = analyze(ops, outputs, ShapeSyms())
    if op.attributes["kind"] == "generic" or sched is None or sched.kind == "scalar" \
            or not all(supported(o) for o in ops) or any(v in block.args for v in outputs):
        return _inline(cx, op)
    ev = GroupEval(cx, op)
    ev.prologue()
    place = lower_group_inplace.destination(cx, op, sched.kind == "elementwise",
                                            lambda: ev.dims(ev.outputs[0]))
    if place is None:
        return _schedule(cx, ev, sched, None).results()
    if not place.checks:
        return _schedule(cx, ev, sched, place.dest).results()
    return _versioned(cx, ev, sched, place)


def _schedule(cx: Lowerer, ev: GroupEval, sched: Schedule, into: Value | None) -> Outputs:
    """Emit the group's schedule here, storing its single result into ``into`` when
    given, else into fresh buffers."""
    outs = Outputs(cx, ev, into)
    if sched.kind == "elementwise":
        _elementwise(ev, sched, outs)
    elif sched.column:
        _columns(ev, sched, outs)
    else:
        lower_group_rows.rows(ev, sched, outs)
    outs.finish()
    return outs


def _versioned(cx: Lowerer, ev: GroupEval, sched: Schedule,
               place: lower_group_inplace.Placement) -> list[Value]:
    """``loop.if`` on the run-time alias checks: the schedule stores into the
    destination directly, or (the operands may overlap it) fills a temporary that is
    copied into the destination.  The group's result is the destination either way,
    so the ``mem.write`` after it is dropped."""
    gen = cx.gen

    def direct() -> list[Value]:
        _schedule(cx, ev, sched, place.dest)
        return []

    def staged() -> list[Value]:
        (tmp,) = _schedule(cx, ev, sched, None).results()
        gen.copy(tmp, place.dest, parallel=True)
        return []
    gen.if_(lower_group_inplace.no_overlap(gen, place), [], direct, staged)
    return [place.dest]


RULES: dict[type[Operation], LowerFn] = {FusionGroupOp: lower_group}  # type: ignore[dict-item]
