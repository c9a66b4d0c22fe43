"""Storing a fused group straight into the buffer its result is written to.

``out[:, o] += w * x[:, c, dy:dy + oh, dx:dx + ow]`` is, at tensor level,
``y = fusion.group(snapshot(out[:, o]), ...)`` followed by ``mem.write(y, out[:, o])``.
Lowered literally, the group fills a temporary and the write copies it into the view:
two extra passes over the data per statement.  :func:`destination` lets the group
store each element into the written view directly when that cannot change a value
that is read.  The rule:

* the group has one result, a tensor whose only use is the
  ``mem.write`` right after the group (only pure ops, such as the destination's
  ``mem.subview``, in between: nothing reads or writes memory between computing and
  writing), into a destination of that same shape (the write does not broadcast:
  static sizes equal, run-time sizes the same values, as ``x.shape[0]`` of a
  ``dynamic_shape`` parameter is for every view and array made from it);
* every tensor operand of the group lowers either
  - to the destination buffer itself, and every value computed from it inside the
    group is computed by elementwise ops of the result's shape (so element ``i`` of
    the destination is read only to compute element ``i``, before it is stored), or
  - to a buffer that cannot overlap the destination: a different base buffer, where
    at least one of the two is a ``mem.alloc`` of this function (two parameters may be
    the same array; a snapshot that had to be copied is a fresh ``mem.alloc``).

Reading the destination itself is allowed for ``elementwise`` schedules only, where
every element of the result is computed independently at its own index; a reduction
(``out[:, :, i, j] = x[..., window].mean(axis=(2, 3))``) stores into its destination
directly when no operand can overlap it.

An operand that is neither (two parameters, or views of them, may be the same array:
``f(x, out=x)``) is checked at run time instead (pass option ``alias_checks``, on by
default; the AscendC scalar kernels turn it off and keep the temporary).  The
:class:`Placement` then lists it, and ``lower_group`` versions the store on
:func:`no_overlap`: the group stores straight into the destination when every listed
operand is ``mem.disjoint`` from it, or, where reading the destination itself would be
allowed (elementwise, same shape, read only pointwise), is ``mem.same_view`` of it
(element ``i`` read only to compute element ``i``, before it is stored); otherwise it
fills a temporary that is then copied, as before.  ``disjoint`` compares address
ranges, so a partial overlap, a shifted, reversed or transposed view of the
destination, or a broadcast read of it always takes the temporary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.ops.func import FuncOp, FusionGroupOp
from pyasc.ir.passes.bufferize import Lowerer
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.fusion_rules import ELEMENTWISE
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.passes.lower_group_eval import same_dims
from pyasc.ir.types import DYN, MemRefType, TensorType, i1


def _next_effect(op: Operation) -> Operation | None:
    """The first op after ``op`` in its block that is not pure (views and index
    arithmetic, such as the ``mem.subview`` of the written destination, come between)."""
    block = op.parent
    assert block is not None
    for nxt in block.ops[block.index_of(op) + 1:]:
        if nxt.region_list or "pure" not in nxt.traits:
            return nxt
    return None


def _single_write(group: Operation) -> mem.WriteOp | None:
    """The ``mem.write`` right after ``group`` that is the only use of its only result."""
    results = group.result_values
    if len(results) != 1 or len(results[0].uses) != 1:
        return None
    write = _next_effect(group)
    if not isinstance(write, mem.WriteOp) or write.value is not results[0]:
        return None
    return write


def place_destinations(fn: FuncOp) -> None:
    """Move the pure ops computing the destination of a group's single write in front
    of the group (Python evaluates ``out[:, o]`` after the right-hand side), so that
    the destination is lowered before the group that may store into it."""
    for group in [op for op in fn.walk() if isinstance(op, FusionGroupOp)]:
        write = _single_write(group)
        if write is None:
            continue
        block = group.parent
        assert block is not None
        between = block.ops[block.index_of(group) + 1:block.index_of(write)]
        needed: set[Operation] = set()
        work = [write.dest]
        while work:
            v = work.pop()
            if isinstance(v, OpResult) and v.op in between and v.op not in needed:
                needed.add(v.op)
                work.extend(v.op.operand_values)
        for op in [o for o in between if o in needed]:  # in their order
            block.detach(op)
            block.insert(block.index_of(group), op)


def _pointwise_only(arg: Value, shape: tuple[int, ...]) -> bool:
    """True if every value computed from ``arg`` is an elementwise op of ``shape``."""
    work, seen = [arg], set()
    while work:
        v = work.pop()
        for user, _ in v.uses:
            if user.has_trait("terminator"):
                continue
            if not isinstance(user, ELEMENTWISE) or any(
                    r.type.shape != shape for r in user.result_values
                    if isinstance(r.type, TensorType)):
                return False
            for r in user.result_values:
                if r not in seen:
                    seen.add(r)
                    work.append(r)
    return True


def _is_alloc(v: Value) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp)


def views_of_one_local(a: Value, b: Value) -> bool:
    """True if ``a`` and ``b`` are views of the same array of this function (a
    ``mem.alloc``): ``t[1:] = t[:-1]`` and the like overlap by construction, so a
    run-time test would only double the code; they keep the temporary."""
    ra = base_buffer(a)
    return ra is base_buffer(b) and _is_alloc(ra)


def provably_disjoint(a: Value, b: Value) -> bool:
    """True if lowered memrefs ``a`` and ``b`` provably share no element."""
    ra, rb = base_buffer(a), base_buffer(b)
    return ra is not rb and (_is_alloc(ra) or _is_alloc(rb))


@dataclass
class Placement:
    """Where a group stores its single result: ``dest``, the lowered destination
    buffer, directly when ``checks`` is empty, else when :func:`no_overlap` holds for
    ``checks``: (operand buffer, may it be the same view of ``dest``) pairs."""

    dest: Value
    checks: list[tuple[Value, bool]] = field(default_factory=list)


def destination(cx: Lowerer, group: Operation, elementwise: bool,
                dims: Callable[[], list[Value]]) -> Placement | None:
    """Where ``group`` may store its single result (the destination of the
    ``mem.write`` after it), or None (module docstring).  ``elementwise``: the group's
    schedule computes each element at its own index; ``dims()``: the run-time sizes of
    the group's result."""
    write = _single_write(group)
    if write is None:
        return None
    y = write.value
    shape = y.type.shape if isinstance(y.type, TensorType) else None
    dtype = write.dest.type
    if shape is None or not isinstance(dtype, MemRefType) or len(dtype.shape) != len(shape):
        return None
    dst = cx.values.get(write.dest)  # defined before the group (place_destinations)
    if dst is None:
        return None
    if (DYN in shape or dtype.shape != shape) and not same_dims(dims(), cx.gen.dims(dst)):
        return None  # sizes not provably equal: the write may broadcast
    place = Placement(dst)
    args = group.region_list[0].blocks[0].args
    for operand, arg in zip(group.operand_values, args, strict=True):
        if not isinstance(operand.type, TensorType):
            continue
        buf = cx.get(operand)
        if buf is not dst and provably_disjoint(buf, dst):
            continue
        pointwise = elementwise and arg.type.shape == shape and _pointwise_only(arg, shape)
        if buf is dst and not pointwise:
            return None
        if buf is not dst:
            if not cx.options.get("alias_checks", True) or views_of_one_local(buf, dst):
                return None
            place.checks.append((buf, pointwise))
    return place


def no_overlap(gen: LoopGen, place: Placement) -> Value:
    """The ``i1`` run-time condition under which storing into ``place.dest`` directly
    is safe (module docstring)."""
    dst = place.dest
    cond: Value | None = None
    for buf, pointwise in place.checks:
        ok = gen.emit(mem.DisjointOp([buf, dst], [i1]))
        if pointwise:
            ok = gen.emit(arith.OrOp.new(ok, gen.emit(mem.SameViewOp([buf, dst], [i1]))))
        cond = ok if cond is None else gen.emit(arith.AndOp.new(cond, ok))
    assert cond is not None, "no_overlap needs at least one check"
    return cond
