"""Chained indexing ``x[c][i + a][j + b]`` as the one access ``x[c, i + a, j + b]``.

Python users often index one axis at a time: ``x[ch][i + a][j + b] * w[ch][a][b]``.
The frontend lowers each ``[...]`` of an array to a ``mem.subview`` (the view ``x[ch]``,
then its row ``[i + a]``) and the last one to a ``mem.load`` of the view.  The batch
analysis reads accesses through one view of an unchanged buffer only, so the chain
left the nest a scalar kernel while ``x[ch, i + a, j + b]`` batched.  :func:`fold_views`
rewrites, in a flattened loop body, every ``mem.load``/``mem.store``/``mem.subview``
whose buffer is itself a ``mem.subview`` into the same access of the view's source:
along an axis the view dropped the index is the view's offset; along a kept axis it is
``offset + index * step`` (the view's own step; the ``add``/``mul`` are omitted for a
zero offset and a unit step).  The element addressed is the same (a view is an affine
map of its source); index checks were emitted by the frontend against the view's
sizes before the access and stay as they are.  The views left without uses are erased.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.types import index

_ACCESS = {mem.LoadOp: 1, mem.StoreOp: 2, mem.SubviewOp: 1}
"""The operand position of each access's indices (after its buffer)."""


def _buffer(op: Operation) -> Value:
    return op.operand_values[_ACCESS[type(op)] - 1]


class _Folder:
    def __init__(self, block: Block, at: Operation) -> None:
        self.block, self.at = block, at

    def _emit(self, op: Operation) -> Value:
        self.block.insert(self.block.index_of(self.at), op)
        return op.result_values[0]

    def _affine(self, offset: Value, i: Value, step: Value) -> Value:
        """``offset + i * step``."""
        loc = self.at.loc
        if constant_int(step) != 1:
            i = self._emit(arith.MulOp([i, step], [index], loc=loc))
        if constant_int(offset) == 0:
            return i
        return self._emit(arith.AddOp([offset, i], [index], loc=loc))

    def indices(self, view: mem.SubviewOp, idx: list[Value]) -> list[Value]:
        """``view[idx]`` as indices of ``view``'s source."""
        offsets, _, steps = view.parts()
        drop = set(view.attributes.get("drop") or ())
        kept = iter(idx)
        return [offsets[a] if a in drop else self._affine(offsets[a], next(kept), steps[a])
                for a in range(len(offsets))]

    def view(self, outer: mem.SubviewOp, inner: mem.SubviewOp) -> list[Value]:
        """The operands and ``drop`` of ``outer`` (a view of view ``inner``) as one view
        of ``inner``'s source."""
        o2, s2, st2 = outer.parts()
        o1, s1, st1 = inner.parts()
        d1 = set(inner.attributes.get("drop") or ())
        d2 = set(outer.attributes.get("drop") or ())
        offs, sizes, steps, drop = [], [], [], []
        p = 0
        for a in range(len(o1)):
            if a in d1:
                offs.append(o1[a])
                sizes.append(s1[a])
                steps.append(st1[a])
                drop.append(a)
                continue
            offs.append(self._affine(o1[a], o2[p], st1[a]))
            sizes.append(s2[p])
            steps.append(st1[a] if constant_int(st2[p]) == 1 else self._emit(
                arith.MulOp([st1[a], st2[p]], [index], loc=outer.loc)))
            if p in d2:
                drop.append(a)
            p += 1
        return [inner.source, *offs, *sizes, *steps, drop]  # type: ignore[list-item]


def _fold(block: Block, op: Operation) -> bool:
    src = _buffer(op)
    if not isinstance(src, OpResult) or not isinstance(src.op, mem.SubviewOp):
        return False
    inner = src.op
    f = _Folder(block, op)
    loc = op.loc
    if isinstance(op, mem.SubviewOp):
        *operands, drop = f.view(op, inner)
        attrs = {"drop": tuple(drop)} if drop else {}
        new: Operation = mem.SubviewOp(operands, [op.result.type], attrs, loc=loc)
    elif isinstance(op, mem.LoadOp):
        idx = f.indices(inner, list(op.indices))
        new = mem.LoadOp([inner.source, *idx], [op.result.type], loc=loc)
    else:
        assert isinstance(op, mem.StoreOp)
        idx = f.indices(inner, list(op.indices))
        new = mem.StoreOp([op.value, inner.source, *idx], [], loc=loc)
    block.insert(block.index_of(op), new)
    for old, r in zip(op.result_values, new.result_values, strict=True):
        old.replace_all_uses_with(r)
    op.erase()
    return True


def fold_views(block: Block, outer: Sequence[Block] = ()) -> None:
    """Fold the accesses through views of views in ``block`` (module docstring); then
    erase the views of ``block`` and of the ``outer`` blocks nothing uses any more."""
    for op in list(block.ops):  # in order: a chain's first fold feeds the next one's
        if type(op) in _ACCESS:
            _fold(block, op)
    for b in (block, *outer):
        for op in reversed(list(b.ops)):
            if isinstance(op, mem.SubviewOp) and not list(op.result.uses):
                op.erase()


__all__ = ["fold_views"]
