"""Counted ``while`` loops: the ones that can poll for Ctrl-C once per strip.

A ``for k in range(n)`` with a ``break`` (or ``while k < n: ...; k += 1``) reaches the
IR as a ``loop.while`` whose condition requires ``k < n`` for a counter ``k`` that every
iteration advances by a positive constant.  Polling it at every back-edge costs a
decrement and a branch per iteration (measured: 8% of the benchmark NMS, whose inner
search is such a loop).  The ``interrupt-poll`` pass marks these ``poll = "counted"``
and the CPU backend compares ``k`` against a *limit* instead of ``n``::

    limit = min(n, k + STRIP * step)
    loop:   condition with k < limit            # the loop's own compare: no extra work
            body
    exit:   condition again, with k < n         # once per strip, and at the real exit
            if true: poll, limit = min(n, k + STRIP * step), back to the body

:func:`counted` accepts a loop only where that is the original loop: the condition's
values are the ``before`` arguments themselves, the ``before`` region has no effects
and allocates nothing (it runs again at each strip end), ``n`` is defined outside the
loop and used in the ``before`` region by that comparison only, and the comparison
enters the condition through ``and``/``select`` only (so a smaller limit
can only end an iteration sequence early, never continue one): nothing else uses the
comparison or the ``and``/``select`` chain above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.passes.effects import is_effect_free
from pyasc.ir.types import index

STRIP = 1 << 12
"""Iterations per strip."""


@dataclass(frozen=True)
class CountedWhile:
    """``before`` argument ``counter`` advances by ``step``; ``compare`` is ``k < limit``
    (``limit`` defined outside the loop)."""

    counter: int
    step: int
    compare: Operation
    limit: Value


def counted(op: loop.WhileOp) -> CountedWhile | None:
    """The counter of ``op`` if it is a counted loop (module docstring), else None."""
    before, after = op.before.blocks[0], op.after.blocks[0]
    cond_op, yield_op = before.terminator, after.terminator
    if not isinstance(cond_op, loop.ConditionOp) or not isinstance(yield_op, loop.YieldOp) \
            or list(cond_op.operand_values[1:]) != list(before.args) or not _free(before):
        return None
    for cmp in _required_comparisons(cond_op):
        k, n = cmp.operand_values
        if not isinstance(k, BlockArgument) or k.block is not before or k.type != index \
                or _inside(op, n) or _other_uses(n, op, cmp):
            continue
        step = _step(yield_op.operand_values[k.index], after.args[k.index])
        if step is not None and step > 0:
            return CountedWhile(k.index, step, cmp, n)
    return None


def _free(block) -> bool:  # noqa: ANN001 - a Block
    """The region may run once more: no effects, no allocations."""
    ops = [inner for top in block.ops for inner in top.walk()]
    return all(o.has_trait("terminator") or (is_effect_free(o) and
                                            not o.has_trait("allocates")) for o in ops)


def _required_comparisons(cond_op: loop.ConditionOp) -> list[Operation]:
    """The ``a < b`` comparisons the condition requires: itself, or reached through
    ``and`` and ``select(c, x, false)`` / ``select(c, x, c)`` (how ``c and x`` is
    lowered), none of whose results is used outside that chain."""
    chain: list[Operation] = []
    found: list[Operation] = []
    stack = [cond_op.operand_values[0]]
    while stack:
        v = stack.pop()
        if not isinstance(v, OpResult):
            continue
        op = v.op
        if isinstance(op, arith.CmpOp) and op.attributes["predicate"] == "lt":
            found.append(op)
        elif isinstance(op, arith.AndOp):
            stack.extend(op.operand_values)
        elif isinstance(op, arith.SelectOp):
            c, x, y = op.operand_values
            if not (_is_false(y) or y is c):
                continue
            stack.extend([c, x])
        else:
            continue
        chain.append(op)
    inside = set(chain) | {cond_op}
    if any(user not in inside for op in chain for user, _ in op.result.uses):
        return []
    return found


def _step(next_k: Value, k: Value) -> int | None:
    """``c`` when ``next_k`` is ``k + c`` with a constant ``c``."""
    if not isinstance(next_k, OpResult) or not isinstance(next_k.op, arith.AddOp):
        return None
    a, b = next_k.op.operand_values
    other = b if a is k else a if b is k else None
    return _int_constant(other) if other is not None else None


def _inside(op: Operation, v: Value) -> bool:
    owner = v.owner
    if not isinstance(owner, Operation):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)


def _other_uses(n: Value, op: loop.WhileOp, cmp: Operation) -> bool:
    """``n`` is used in ``op``'s ``before`` region by more than ``cmp``."""
    before = op.before.blocks[0]
    return any(user is not cmp and before.ancestor_of(user) is not None
               for user, _ in n.uses)


def _int_constant(v: Value) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, int) \
            and not isinstance(owner.value, bool):
        return int(owner.value)
    return None


def _is_false(v: Value) -> bool:
    owner = v.owner
    return isinstance(owner, arith.ConstantOp) and owner.value is False
