"""The elementwise group after a ``channels`` loop that becomes its kernel's epilogue.

``channel_stencil`` recognizes the loop; :func:`post_group_after` the one group after
it that reads the accumulators (``out[...] = max(acc, 0)``, ``acc * s + b[o]``,
``acc + r[o, i, j]``) and what each of its inputs is (:class:`PostValue`).  The
kernel writes ``out`` where the loop is and reads the group's inputs there, so the
group is refused when an op between the loop and its write writes memory or reads
``out`` (:func:`touched_between`).  Its scalars and per-plane views are taken at the
loop: defined before it, or computed after it by region-free ops that write nothing
(``s[()]`` of a 0-d array, ``b[0:O]``), which the host computes at the launch (the
same values: nothing in between writes memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import loop, mem
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.channel_views import inside, only_use, per_plane_values, whole_buffer
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.window_values import static_int, window_start
from pyasc.ir.types import MemRefType, ScalarType

ACC, SCALAR, PLANE, WHOLE = "acc", "scalar", "plane", "whole"  # PostValue kinds


@dataclass
class PostValue:
    """An input of the post group: the accumulators' snapshot (``ACC``), a scalar of
    before the loop (``SCALAR``), the 1-D view of one value per output plane
    (``PLANE``), or an array read whole over the accumulators' extents (``WHOLE``)."""

    kind: str
    value: Value
    # WHOLE: the view's constant offsets into the array (a gate ``g[o, i + 1, j + 1]``)
    offsets: tuple[int, ...] = ()


def post_group_after(chan: loop.ForOp, acc: Value
                     ) -> tuple[FusionGroupOp, mem.WriteOp, Value, list[PostValue]] | None:
    """``(group, write, out, inputs)`` when the only op after ``chan`` that reads ``acc``
    (views aside) is a snapshot of a whole view of it, read by one elementwise group
    (its other inputs: :func:`_post_inputs`), whose result is written to ``out[0:s0,
    0:s1, ...]`` with the view's own sizes ``s`` (``out`` a contiguous array the
    function allocates, of the same rank); else None."""
    block = chan.parent
    assert block is not None
    if acc.op.parent is not block:  # type: ignore[attr-defined]
        return None  # (read after the block, where this does not look)
    after = [op for top in block.ops[block.index_of(chan) + 1:] for op in top.walk()]
    touching = [op for op in after if not isinstance(op, mem.SubviewOp) and
                any(base_buffer(v) is acc for v in op.operand_values)]
    if len(touching) != 1 or not isinstance(touching[0], mem.ToTensorOp):
        return None
    snap = touching[0]
    view = snap.operand_values[0]
    if whole_buffer(view, chan) is not acc:
        return None
    group = only_use(snap.result)
    if not isinstance(group, FusionGroupOp) or \
            group.attributes.get("kind") != "elementwise" or len(group.result_values) != 1:
        return None
    inputs = _post_inputs(group, snap.result, view, chan)
    write = only_use(group.result_values[0])
    if inputs is None or not isinstance(write, mem.WriteOp) or \
            write.operand_values[0] is not group.result_values[0]:
        return None
    dest = write.operand_values[1]
    if not (isinstance(dest, OpResult) and isinstance(dest.op, mem.SubviewOp)) or \
            dest.op.attributes.get("drop"):
        return None
    out = dest.op.source
    assert isinstance(acc.type, MemRefType)
    # (an array the function allocates: not x or w, which other units still read)
    if not (isinstance(out, OpResult) and isinstance(out.op, mem.AllocOp)) or \
            not isinstance(out.type, MemRefType) or not out.type.is_contiguous or \
            out.type.rank != acc.type.rank or not _same_extents(dest, view) or \
            touched_between(chan, write, out):
        return None
    return group, write, out, inputs


def _same_extents(view: Value, like: Value) -> bool:
    """Whether ``view`` is a subview at offset 0, unit steps, of the same size values as
    the subview ``like``."""
    return _shifted_starts(view, like) == (0,) * len(view.op.parts()[0])  # type: ignore[attr-defined]


def _shifted_starts(view: Value, like: Value) -> tuple[int, ...] | None:
    """``view``'s constant starts (each a constant, ``0 + c`` of the nest, or numpy's
    ``min(c, D)``, at least 0) when it has unit steps and the size values of the
    subview ``like``, else None."""
    offsets, sizes, steps = view.op.parts()  # type: ignore[attr-defined]
    starts = tuple(window_start(view.op, i, o) for i, o in enumerate(offsets))  # type: ignore[attr-defined]
    ok = all(o is not None and o >= 0 for o in starts) and \
        all(static_int(s) == 1 for s in steps) and \
        all(a is b for a, b in zip(sizes, like.op.parts()[1], strict=True))  # type: ignore[attr-defined]
    return starts if ok else None  # type: ignore[return-value]


def _post_inputs(group: FusionGroupOp, snap: Value, view: Value, chan: loop.ForOp
                 ) -> list[PostValue] | None:
    """What each input of the post group is (:class:`PostValue`): the snapshot ``snap``
    of the accumulators (once), a scalar defined before ``chan``, one value per output
    plane (``bias[o]``: ``broadcast(reshape(to_tensor(values)))``, ``values`` a 1-D
    view the host computes from arrays of before the loop), or a whole snapshot of a
    contiguous array of before the loop over the accumulators' extents (a residual
    ``r[o, i, j]``); else None."""
    rank = view.type.rank  # type: ignore[attr-defined]
    found: list[PostValue] = []
    for v in group.inputs:
        if v is snap:
            found.append(PostValue(ACC, v))
        elif isinstance(v.type, ScalarType):
            if not _host_computable(v, chan):
                return None
            found.append(PostValue(SCALAR, v))
        elif (values := per_plane_values(v, rank)) is not None:
            if not _host_computable(values, chan):
                return None
            found.append(PostValue(PLANE, values))
        elif (src := _whole_array(v, view, chan)) is not None:
            found.append(PostValue(WHOLE, *src))
        else:
            return None
    return found if [p.kind for p in found].count(ACC) == 1 else None


def _whole_array(v: Value, view: Value, chan: loop.ForOp
                 ) -> tuple[Value, tuple[int, ...]] | None:
    """``(a, offsets)`` when ``v`` is ``to_tensor(a[o0:o0+s0, o1:o1+s1, ...])`` with the
    sizes ``s`` of the accumulators' ``view`` and constant offsets ``o`` (``a``
    contiguous, of their rank, from before ``chan``; the host checks it holds them)."""
    if not (isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)):
        return None
    sub = v.op.operand_values[0]
    if not (isinstance(sub, OpResult) and isinstance(sub.op, mem.SubviewOp)) or \
            sub.op.attributes.get("drop"):
        return None
    starts, a = _shifted_starts(sub, view), sub.op.source
    ok = starts is not None and isinstance(a.type, MemRefType) and a.type.is_contiguous \
        and a.type.rank == view.type.rank and _before(a, chan)  # type: ignore[attr-defined]
    return (a, starts) if ok else None  # type: ignore[return-value]


def _before(v: Value, chan: loop.ForOp) -> bool:
    """Whether ``v``, used in ``chan``'s block, is defined before ``chan``: a block
    argument (of that block or one around it), or an op before it in its block or in a
    block around it (the host has it at the launch)."""
    if not isinstance(v, OpResult):
        return True
    block = chan.parent
    top: Operation | None = v.op
    while top is not None and top.parent is not block:
        top = top.parent_op
    if top is None:
        return True  # (an op of a block around ``chan``'s: it comes before the loop)
    assert block is not None
    return block.index_of(top) < block.index_of(chan)


def _host_computable(v: Value, chan: loop.ForOp) -> bool:
    """Whether the host can compute ``v`` at ``chan``: defined before it, or the result
    of a region-free op writing nothing (a view, a scalar op, a read) of such values.
    A read gives the same value there: nothing between the loop and the user's write
    writes memory (:func:`touched_between`), and the accumulators and ``out`` are not
    read there."""
    if _before(v, chan):
        return True
    if not isinstance(v, OpResult) or v.op.region_list or v.op.has_trait("writes") or \
            inside(v, chan):
        return False
    return all(_host_computable(u, chan) for u in v.op.operand_values)


def touched_between(chan: loop.ForOp, write: mem.WriteOp, out: Value) -> bool:
    """Whether an op between ``chan`` and ``write`` (at the top of their block) writes
    memory or reads ``out``: the kernel writes ``out`` where ``chan`` is, before them."""
    block = chan.parent
    assert block is not None
    tops = [op for op in block.ops if op.is_ancestor_of(write) or op is write]
    if len(tops) != 1:
        return True
    for top in block.ops[block.index_of(chan) + 1:block.index_of(tops[0]) + 1]:
        for op in top.walk():
            if op is write or isinstance(op, mem.SubviewOp | mem.DimOp):
                continue
            if op.has_trait("writes") or any(base_buffer(v) is out for v in op.operand_values):
                return True
    return False


__all__ = ["ACC", "PLANE", "SCALAR", "WHOLE", "PostValue", "post_group_after",
           "touched_between"]
