"""Counted ``while`` loops as ``loop.for`` loops, so that ``batch-loops`` sees them.

A user who writes ``i = 0; while i < n: ...; i += 1`` means ``for i in range(n)``, and
the frontend lowers it to a ``loop.while`` whose one carried value is the counter.
:func:`as_for` rewrites such a loop into the ``loop.for`` it stands for when that is
exactly equivalent:

* the loop carries one value, the counter ``k`` (an ``index``); the condition is
  ``k < n`` and passes ``k`` on unchanged; ``n`` is computed by pure ops that do not
  read ``k`` (or before the loop), so it is the same at every test and the ops move in
  front of the loop (no memory reads: the body may write what they would read);
* the body yields ``k + c`` with a constant ``c >= 1`` (then ``k`` never decreases, so
  the loop runs ``range(init, n, c)``);
* the loop's result (the counter's final value) is used only when ``c == 1``: it is
  ``max(init, n)``.

Anything else (a ``break``, which adds a flag to the condition, an accumulator, a
counter changed by a variable) leaves the loop alone.  Only the AscendC pipeline runs
this (inside ``batch-loops``), before its analysis, so a while loop over rows becomes
the rows schedule like its ``for`` spelling.
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.types import index


def _step(next_k: Value, k: Value) -> int | None:
    """``c`` when ``next_k`` is ``k + c`` (or ``c + k``) with a constant ``c``."""
    if not isinstance(next_k, OpResult) or not isinstance(next_k.op, arith.AddOp):
        return None
    a, b = next_k.op.operand_values
    other = b if a is k else a if b is k else None
    return constant_int(other) if other is not None else None


def _inside(op: Operation, v: Value) -> bool:
    owner = v.owner
    if not isinstance(owner, Operation):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)


def _bound(w: loop.WhileOp) -> tuple[Operation, list[Operation]] | None:
    """The comparison ``k < n`` of ``w``'s condition and the other ops of its ``before``
    region (all pure and independent of ``k``), or None."""
    before = w.before.blocks[0]
    cond, k = before.terminator, before.args[0]
    if not isinstance(cond, loop.ConditionOp) or list(cond.operand_values[1:]) != [k]:
        return None
    c = cond.operand_values[0]
    if not isinstance(c, OpResult) or not isinstance(c.op, arith.CmpOp) or \
            c.op.attributes["predicate"] != "lt" or c.op.operand_values[0] is not k or \
            any(user is not cond for user, _ in c.op.result.uses):
        return None
    rest = [op for op in before.ops if op is not cond and op is not c.op]
    inner = {v for op in rest for v in op.result_values}
    for op in rest:
        if not op.has_trait("pure") or op.region_list or \
                any(v is k or (v not in inner and _inside(w, v)) for v in op.operand_values):
            return None
    return c.op, rest


def as_for(w: loop.WhileOp) -> loop.ForOp | None:
    """Replace the counted loop ``w`` (module docstring) by its ``loop.for``; returns
    it, or None (``w`` unchanged)."""
    if len(w.inits) != 1 or w.inits[0].type != index:
        return None
    after = w.after.blocks[0]
    found = _bound(w)
    yld = after.terminator
    if found is None or not isinstance(yld, loop.YieldOp):
        return None
    step = _step(yld.operand_values[0], after.args[0])
    used = bool(list(w.outputs[0].uses))
    if step is None or step < 1 or (used and step != 1):
        return None
    cmp, rest = found
    b = Builder.before(w)
    mapping: dict[Value, Value] = {}
    for op in rest:  # n's computation, once, in front of the loop
        b.insert(op.clone(mapping))
    n = mapping.get(cmp.operand_values[1], cmp.operand_values[1])
    init = w.inits[0]
    step_v = b.insert(arith.ConstantOp.new(step, index, loc=w.loc)).result
    new = b.insert(loop.ForOp.empty(init, n, step_v, loc=w.loc))
    body = new.body.blocks[0]
    after.args[0].replace_all_uses_with(new.induction_var)
    next_k = yld.operand_values[0]
    yld.erase()
    if not list(next_k.uses):  # the counter's increment, dead now (``k + c``, _step)
        next_k.op.erase()  # type: ignore[union-attr]
    for op in list(after.ops):
        body.append(after.detach(op))
    body.append(loop.YieldOp([], loc=yld.loc))
    if used:
        last = b.insert(arith.MaxOp([init, n], [index], loc=w.loc)).result
        w.outputs[0].replace_all_uses_with(last)
    w.erase()
    return new


__all__ = ["as_for"]
