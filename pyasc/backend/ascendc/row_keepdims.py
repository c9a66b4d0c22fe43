"""A group's squeezed row reductions yielded in their ``keepdims`` form when the host
reshapes them into it anyway.

``m = x.max(axis=-1); return x - m[:, None], m`` (or ``x.mean(-1)``, ``m.reshape(-1,
1)``, ``s[:, np.newaxis]``): the fusion pass gives the reduction a group of its own,
yielding ``m`` of shape ``(n,)``, and the host reshapes it to ``(n, 1)`` for the
consumer's group.  A kernel cannot take that reshape (a ``(n,)`` input of a kernel over
``(n, c)`` is a row vector to numpy), so the two groups never merge and ``x`` is read
twice.  Yet ``(n,)`` and ``(n, 1)`` are the same column in UB and in GM.

:func:`keep_row_dims` rewrites such a group so that it yields ``(n, 1)``: the squeezed
values it computes (a last-axis reduction without keepdims of a rank >= 2 array, and
elementwise ops whose array operands are all such values: ``sum / n``, casts) get the
unit axis back when nothing else in the group reads them (numpy aligns a ``(n,)`` array
with the *last* axis of anything wider, so no other use keeps its meaning).  The
host's reshape to ``(n, 1)`` is then the group's result itself, when its sizes are
provably the result's (``ShapeSyms`` through the group's body: ``x.shape[0]`` for
``m[:, None]`` of ``x.max(-1)`` with run-time shapes); every other user of the result
reads ``(n,)`` through a new host reshape.  ``grouping.merge_adjacent`` then merges the
two groups: one kernel writes both ``x - m`` and ``m``.

The other way round, a group computing on squeezed views of another group's columns
(``m + np.log(s)``, a softmax's logsumexp from its ``(n, 1)`` max and sum) reads the
columns themselves: its arguments are seeds of the same rewrite, and it merges with
the group computing them.
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import REDUCTIONS
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.forward_writes import BufferSyms
from pyasc.ir.passes.fusion_rules import ELEMENTWISE
from pyasc.ir.passes.fusion_shapes import Shape
from pyasc.ir.types import DYN, TensorType, index


class _GroupSyms(BufferSyms):
    """``BufferSyms`` that also sees through a fusion group to the value it yields."""

    def _compute(self, v: Value) -> Shape:
        group = v.op if isinstance(v, OpResult) else None
        if not isinstance(group, FusionGroupOp) or not isinstance(v.type, TensorType):
            return super()._compute(v)
        body = group.body.blocks[0]
        for arg, outer in zip(body.args, group.inputs, strict=True):
            if arg not in self._memo:
                self._memo[arg] = self.of(outer)
        assert body.terminator is not None
        derived = self.of(body.terminator.operand_values[v.index])  # type: ignore[attr-defined]
        return tuple(d if d != DYN else s for d, s in zip(v.type.shape, derived, strict=True))


def keep_row_dims(block: Block) -> bool:
    """Rewrite every group of ``block`` whose squeezed row reductions the host reshapes
    to their ``keepdims`` form (module docstring); True if any was."""
    syms, changed = _GroupSyms(), False
    for op in list(block.ops):
        if isinstance(op, FusionGroupOp) and _rewrite(op, syms):
            syms, changed = _GroupSyms(), True  # the shapes it remembers changed
    return changed


def _rewrite(group: FusionGroupOp, syms: _GroupSyms) -> bool:
    body = group.body.blocks[0]
    term = body.terminator
    assert term is not None
    squeezes = {arg: outer for arg, outer in zip(body.args, group.inputs, strict=True)
                if _squeeze_of_column(outer, syms)}
    cone = _squeezed(body.ops, set(squeezes))
    if squeezes and not _closed(cone, term):  # the arguments' uses do not all keep
        squeezes, cone = {}, _squeezed(body.ops, set())
    if not cone or not _closed(cone, term):
        return False
    widened = [r for r, y in zip(group.result_values, term.operand_values, strict=True)
               if y in cone]
    keeps = {r: [u for u, _ in r.uses if _keepdims_view(u, r, syms)] for r in widened}
    if not squeezes and not any(keeps.values()):
        return False  # no host reshape to spare: leave the group as it is
    for v in cone:
        v.type = _keep(v.type)  # type: ignore[arg-type]
        if isinstance(v, OpResult) and isinstance(v.op, REDUCTIONS):
            v.op.attributes["keepdims"] = True
    for arg, outer in squeezes.items():  # the group reads the column itself
        group.set_operand(arg.index, outer.op.source)  # type: ignore[attr-defined]
        if not outer.uses:
            _erase_dead(outer.op)  # type: ignore[attr-defined]
    for r in widened:
        _squeeze_users(group, r, keeps[r])
    return True


def _erase_dead(op: Operation) -> None:
    """Erase unused pure ``op`` and the pure ops only it used (its ``tensor.dim``
    sizes: a dead use of a group's result would keep it a kernel output)."""
    operands = op.operand_values
    op.erase()
    for v in operands:
        if isinstance(v, OpResult) and not v.uses and v.op.parent is not None and \
                v.op.has_trait("pure") and not v.op.region_list and \
                not any(r.uses for r in v.op.result_values):
            _erase_dead(v.op)


def _squeezed(ops: list[Operation], seeds: set[Value]) -> set[Value]:
    """The values of a group body that are squeezed columns: ``seeds`` (arguments), a
    last-axis reduction without keepdims of a rank >= 2 array, and elementwise ops of
    such values (and scalars)."""
    cone = set(seeds)
    for op in ops:
        if isinstance(op, REDUCTIONS):
            src = op.operand_values[0].type
            if isinstance(src, TensorType) and src.rank >= 2 and \
                    not op.attributes["keepdims"] and \
                    tuple(op.attributes["axes"]) == (src.rank - 1,):
                cone.add(op.result)
        elif isinstance(op, ELEMENTWISE) and len(op.result_values) == 1:
            arrays = [v for v in op.operand_values if isinstance(v.type, TensorType)]
            if arrays and all(v in cone for v in arrays):
                cone.add(op.result)
    return cone


def _squeeze_of_column(v: Value, syms: _GroupSyms) -> bool:
    """Whether ``v`` is a host reshape of a column ``(..., n, 1)`` (rank >= 2) that
    another group computes to ``(..., n)``, with sizes provably the column's."""
    op = v.op if isinstance(v, OpResult) else None
    if not isinstance(op, tensor.ReshapeOp) or not isinstance(v.type, TensorType):
        return False
    src = op.source
    return isinstance(src, OpResult) and isinstance(src.op, FusionGroupOp) and \
        v.type.rank >= 1 and src.type == _keep(v.type) and (*syms.of(v), 1) == syms.of(src)


def _closed(cone: set[Value], term: Operation) -> bool:
    """Whether every use of a cone value is the yield or an op computing a cone value."""
    return all(user is term or any(r in cone for r in user.result_values)
               for v in cone for user, _ in v.uses)


def _keep(t: TensorType) -> TensorType:
    return TensorType((*t.shape, 1), t.element)


def _keepdims_view(user: Operation, r: Value, syms: _GroupSyms) -> bool:
    """Whether ``user`` reshapes ``r`` (squeezed) to ``r``'s shape plus a unit axis,
    with sizes provably ``r``'s."""
    if not isinstance(user, tensor.ReshapeOp) or user.source is not r:
        return False
    t = user.result.type
    return isinstance(t, TensorType) and isinstance(r.type, TensorType) and \
        t == _keep(r.type) and syms.of(user.result) == (*syms.of(r), 1)


def _squeeze_users(group: FusionGroupOp, r: Value, keeps: list[Operation]) -> None:
    """``r`` gets the unit axis: its keepdims reshapes become ``r`` itself, its other
    users read a host reshape of it to its former shape."""
    old = r.type
    assert isinstance(old, TensorType)
    r.type = _keep(old)
    users = [(u, i) for u, i in r.uses if u not in keeps]
    for view in keeps:
        view.result.replace_all_uses_with(r)
        view.erase()
    if not users:
        return
    block = group.parent
    assert block is not None
    at = block.index_of(group) + 1
    dims = []
    for axis, d in enumerate(old.shape):
        if d == DYN:
            dim = tensor.DimOp([r], [index], {"axis": axis}, loc=group.loc)
            dims.append(block.insert(at + len(dims), dim).result)
    back = tensor.ReshapeOp([r, *dims], [old], loc=group.loc)
    block.insert(at + len(dims), back)
    back.result.name_hint = r.name_hint
    for user, idx in users:
        user.set_operand(idx, back.result)
