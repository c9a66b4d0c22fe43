"""``dead-fills``: drop the fill of a fresh buffer whose every element is overwritten
before it is read (first in ``LOOP_PIPELINE``, so only the CPU backend sees it).

``np.empty``/``np.zeros``/``np.empty_like`` bound to a name become ``mem.alloc`` +
``mem.fill``; when the function then writes the whole array (``out[i] = ...`` in a
loop over ``range(out.shape[0])``, ``out[:, j] = ...``, ``out[i, j] = ...`` in two loops,
``out[...] = ...``), the fill is a full extra write pass for nothing (13% of a
layernorm).  A ``mem.fill(v, buf)`` is removed when all of this holds:

* ``buf`` is a ``mem.alloc`` (a fresh buffer nothing else can see) and the fill covers
  all of it;
* scanning the ops after the fill in its block, the first op that uses ``buf`` or a
  view of it other than through pure ops (views, sizes) *covers* it (a ``loop.if``
  covers it when the first such op of each branch does: the checked and unchecked
  copies of a loop that ``hoist-checks`` versioned, an if/else): inside that op
  exactly one op writes ``buf`` (a ``mem.store``, ``mem.write``, ``mem.fill`` or
  ``mem.copy``),
  nothing else reads or writes it, and that write runs unconditionally (its ancestors
  up to the op are ``loop.for`` loops only: no ``loop.if``, no ``loop.while``, so no
  ``break``);
* the write covers every element: followed back through ``mem.subview`` views to
  ``buf``, each axis of ``buf`` is either spanned whole (offset 0, step 1, size the
  axis' size) or indexed by the induction variable of one of those loops, running from
  0 to the axis' size by 1 (or by the constant 0 on an axis of size 1, where
  canonicalization removed the one-trip loop); and every one of those loops indexes an
  axis (a loop that indexes none might run zero times).

Anything else keeps the fill: a partial write (``out[1:]``, ``out[::2]``,
``range(n - 1)``), a conditional one, a read first (``out[i] = out[i - 1] + ...``), a
transposed or reshaped view, sizes the pass cannot prove equal.  The contents of an
array the function writes only in part therefore stay zeros, as before.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.types import DYN

WRITES = (mem.StoreOp, mem.WriteOp, mem.FillOp, mem.CopyOp)

Axis = tuple[str, Value | None]
"""How a write reaches one axis: ``("full", None)`` or ``("point", index value)``."""


@register_pass
class DeadFills(Pass):
    name = "dead-fills"
    description = "drop fills of fresh buffers that are overwritten whole before any read"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, mem.FillOp) and overwritten(op):
                op.erase()


def overwritten(fill: mem.FillOp) -> bool:
    """Whether every element ``fill`` writes is written again before any read."""
    buf = fill.dest
    if not (isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp)):
        return False
    ops = fill.parent.ops
    return _first_use_covers(ops[ops.index(fill) + 1:], buf, _views(buf))


def _first_use_covers(ops: list[Operation], buf: Value, aliases: set[Value],
                      outer: tuple[loop.ForOp, ...] = ()) -> bool:
    """The first of ``ops`` that uses ``buf`` (other than through pure ops) writes all
    of it (all of the slice the ``outer`` loops' counters select); a ``loop.if`` does
    when both of its branches do (the two copies of a loop ``hoist-checks`` versioned,
    or the user's if/else); so does a ``loop.for`` that touches only the slice its
    counter selects, when the first use in its body covers that slice."""
    for op in ops:
        users = [o for o in op.walk() if any(v in aliases for v in o.operand_values)]
        effects = [o for o in users if not o.has_trait("pure")]
        if not effects:
            continue
        if isinstance(op, loop.IfOp):
            return all(_first_use_covers(r.blocks[0].ops, buf, aliases, outer)
                       for r in (op.then_region, op.else_region))
        if len(effects) == 1 and _covers(op, effects[0], buf, aliases, outer):
            return True
        return isinstance(op, loop.ForOp) and _own_slice(op, users, buf) and \
            _first_use_covers(op.body.blocks[0].ops, buf, aliases, (*outer, op))
    return False


def _own_slice(lp: loop.ForOp, users: list[Operation], buf: Value) -> bool:
    """Every use of ``buf`` in ``lp`` is a load or store of ``buf`` itself whose index on
    one same axis is ``lp``'s counter: iterations touch disjoint slices (a row written
    whole then read, as in ``out[i, j] = e`` then ``out[i, j] /= s``)."""
    axes = None
    for o in users:
        if not isinstance(o, mem.LoadOp | mem.StoreOp):
            return False
        src, idx = (o.source, o.indices) if isinstance(o, mem.LoadOp) else \
            (o.dest, o.operand_values[2:])
        if src is not buf or (isinstance(o, mem.StoreOp) and o.operand_values[0] is buf):
            return False
        mine = {a for a, v in enumerate(idx) if v is lp.induction_var}
        axes = mine if axes is None else axes & mine
    return bool(axes)


def _views(buf: Value) -> set[Value]:
    """``buf`` and every view derived from it."""
    found, stack = {buf}, [buf]
    while stack:
        for user, idx in stack.pop().uses:
            if user.has_trait("view") and idx == 0:
                new = [r for r in user.result_values if r not in found]
                found.update(new)
                stack.extend(new)
    return found


def _covers(top: Operation, write: Operation, buf: Value, aliases: set[Value],
            outer: tuple[loop.ForOp, ...] = ()) -> bool:
    """``write`` (inside ``top``) writes every element of ``buf`` (with the ``outer``
    loops: every element over all their iterations) every time ``top`` runs."""
    if not isinstance(write, WRITES) or write.dest not in aliases or \
            write.operand_values[0] in aliases:
        return False
    loops = _enclosing_loops(top, write)
    loops = None if loops is None else [*loops, *outer]
    axes = _reach(write, buf)
    if loops is None or axes is None:
        return False
    used: set[int] = set()
    for a, (kind, value) in enumerate(axes):
        if kind == "full" or buf.type.shape[a] == 1 and constant_of(value) == 0:
            continue
        match = [k for k, lp in enumerate(loops) if lp.induction_var is value]
        if len(match) != 1 or match[0] in used or not _spans(loops[match[0]], buf, a):
            return False
        used.add(match[0])
    return len(used) == len(loops)


def _enclosing_loops(top: Operation, write: Operation) -> list[loop.ForOp] | None:
    """The ``loop.for`` ops between ``top`` (included) and ``write``; None when any
    other op with regions sits between them (the write might not run)."""
    loops: list[loop.ForOp] = []
    op = write.parent_op
    while op is not None and (op is top or top.is_ancestor_of(op)):
        if not isinstance(op, loop.ForOp):
            return None
        loops.append(op)
        op = op.parent_op
    return loops


def _spans(lp: loop.ForOp, buf: Value, axis: int) -> bool:
    """``lp`` runs its induction variable over ``0 .. size of axis`` by 1."""
    return constant_of(lp.lower) == 0 and constant_of(lp.step) == 1 and \
        _same_size(lp.upper, buf, axis)


def _reach(write: Operation, buf: Value) -> list[Axis] | None:
    """What ``write`` covers of each axis of ``buf``, followed back through subviews."""
    dest = write.dest
    axes: list[Axis]
    if isinstance(write, mem.StoreOp):
        axes = [("point", v) for v in write.operand_values[2:]]
    else:
        axes = [("full", None)] * dest.type.rank
    while dest is not buf:
        if not (isinstance(dest, OpResult) and isinstance(dest.op, mem.SubviewOp)):
            return None
        axes = _through_subview(dest.op, axes)
        if axes is None:
            return None
        dest = dest.op.source
    return axes


def _through_subview(view: mem.SubviewOp, axes: list[Axis]) -> list[Axis] | None:
    """The coverage of ``view``'s source from that of ``view`` (None: partial)."""
    offsets, sizes, steps = view.parts()
    drop = set(view.attributes.get("drop", ()))
    inner = iter(axes)
    out: list[Axis] = []
    for s, (off, size, step) in enumerate(zip(offsets, sizes, steps, strict=True)):
        if s in drop:
            out.append(("point", off))
            continue
        kind, value = next(inner)
        if constant_of(off) != 0 or constant_of(step) != 1:
            return None
        if kind == "full" and not _same_size(size, view.source, s):
            return None
        out.append((kind, value))
    return out


def _same_size(v: Value, buf: Value, axis: int) -> bool:
    """``v`` is provably the size of ``buf``'s axis ``axis``."""
    static = buf.type.shape[axis]
    if constant_of(v) is not None:
        return constant_of(v) == static
    if isinstance(v, OpResult) and isinstance(v.op, mem.DimOp) and \
            v.op.attributes["axis"] == axis and v.op.source is buf:
        return True
    size = _dynamic_size(buf, axis)
    return size is not None and (size is v or _same_dim(size, v))


def _dynamic_size(buf: Value, axis: int) -> Value | None:
    """The ``mem.alloc`` operand giving ``buf``'s dynamic axis ``axis``."""
    if not (isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp)):
        return None
    shape = buf.type.shape
    if shape[axis] != DYN:
        return None
    return buf.op.operand_values[sum(1 for s in shape[:axis] if s == DYN)]


def _same_dim(a: Value, b: Value) -> bool:
    """Two ``mem.dim`` ops of one buffer's same axis."""
    return all(isinstance(v, OpResult) and isinstance(v.op, mem.DimOp) for v in (a, b)) \
        and a.op.source is b.op.source and \
        a.op.attributes["axis"] == b.op.attributes["axis"]  # type: ignore[union-attr]
