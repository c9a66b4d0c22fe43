"""Affine forms of ``index`` values and the ranges of loop counters.

A run-time check ``func.assert(cond)`` whose ``cond`` is a conjunction of signed
comparisons of ``index`` values reads, conjunct by conjunct, as ``e >= 0`` for an
*affine form* ``e = c_1 * a_1 + ... + c_n * a_n + k``: ``x < y`` is ``y - x - 1 >= 0``.
The *atoms* ``a_i`` are values :func:`affine_of` does not look through (parameters,
loaded values, ``mem.dim``, loop counters...) or :class:`Last` markers.

:func:`minimize` gives a lower bound of ``e`` over the iterations of enclosing loops by
replacing each loop's counter, innermost first, with its first or last value,
whichever side the sign of its coefficient picks: exact for a box (the minimum of an
affine function over an interval is at an end), conservative for triangular nests
(a loop whose bounds depend on an outer counter is minimized first, which leaves an
affine form of that counter).  A loop with unit step ends at ``upper - 1``
(``upper + 1`` going down), an affine form; other constant steps end at a
:class:`Last` atom, computed when needed.  Loops with a step that is not a constant
are not looked through.  A ``loop.while`` that counts (``for ... range()`` with a
``break`` becomes one) has counters too (:func:`while_counters`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.types import index


class Last:
    """The value of ``loop``'s counter in its last iteration (an atom)."""

    __slots__ = ("loop",)

    def __init__(self, lp: loop.ForOp) -> None:
        self.loop = lp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Last) and other.loop is self.loop

    def __hash__(self) -> int:
        return hash((Last, id(self.loop)))


Atom = Value | Last


@dataclass
class Affine:
    """``sum(coeff * atom) + const`` (atoms in first-seen order, no zero coefficients)."""

    terms: dict[Atom, int] = field(default_factory=dict)
    const: int = 0

    @classmethod
    def of_atom(cls, a: Atom) -> Affine:
        return cls({a: 1})

    def plus(self, other: Affine, scale: int = 1) -> Affine:
        """``self + scale * other``."""
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + scale * c
        return Affine({a: c for a, c in terms.items() if c}, self.const + scale * other.const)

    def times(self, k: int) -> Affine:
        return Affine({a: c * k for a, c in self.terms.items()} if k else {}, self.const * k)

    def substitute(self, atom: Atom, by: Affine) -> Affine:
        """``self`` with ``atom`` replaced by the form ``by``."""
        c = self.terms.get(atom, 0)
        if not c:
            return self
        rest = Affine({a: k for a, k in self.terms.items() if a != atom}, self.const)
        return rest.plus(by, c)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def key(self) -> tuple:
        """The terms as a hashable key (for facts that differ only in the constant)."""
        return tuple(sorted(((id(a.loop) if isinstance(a, Last) else id(a), c)
                             for a, c in self.terms.items())))


_LINEAR = {arith.AddOp: 1, arith.SubOp: -1}


def affine_of(v: Value) -> Affine:
    """``v`` as an affine form, looking through ``index`` constants, ``add``, ``sub``,
    ``neg`` and ``mul`` by a constant (index arithmetic wraps like int64, so the form
    is exact modulo 2**64)."""
    c = constant_of(v)
    if v.type == index and isinstance(c, int) and not isinstance(c, bool):
        return Affine(const=c)
    if not isinstance(v, OpResult) or v.type != index:
        return Affine.of_atom(v)
    op = v.op
    sign = _LINEAR.get(type(op))
    if sign is not None:
        a, b = op.operand_values
        return affine_of(a).plus(affine_of(b), sign)
    if isinstance(op, arith.NegOp):
        return affine_of(op.operand_values[0]).times(-1)
    if isinstance(op, arith.MulOp):
        a, b = (affine_of(x) for x in op.operand_values)
        if a.is_const:
            return b.times(a.const)
        if b.is_const:
            return a.times(b.const)
    return Affine.of_atom(v)


_GE_ZERO = {  # predicate: (sign of lhs - rhs, constant) with "form >= 0"
    "ge": (1, 0), "gt": (1, -1), "le": (-1, 0), "lt": (-1, -1),
}


def conjuncts(cond: Value) -> list[tuple[Value, Affine]] | None:
    """``cond`` as comparisons ``(c, e)`` meaning ``e >= 0`` that all hold iff it holds,
    or ``None`` when some part is not a signed comparison of ``index`` values."""
    if isinstance(cond, OpResult) and isinstance(cond.op, arith.AndOp):
        out: list[tuple[Value, Affine]] = []
        for part in cond.op.operand_values:
            sub = conjuncts(part)
            if sub is None:
                return None
            out += sub
        return out
    if not (isinstance(cond, OpResult) and isinstance(cond.op, arith.CmpOp)):
        return None
    lhs, rhs = cond.op.operand_values
    rule = _GE_ZERO.get(cond.op.attributes["predicate"])
    if rule is None or lhs.type != index or rhs.type != index:
        return None
    sign, k = rule
    diff = affine_of(lhs).plus(affine_of(rhs), -1)
    return [(cond, diff.times(sign).plus(Affine(const=k)))]


def counter_of(v: Atom) -> loop.ForOp | None:
    """The ``loop.for`` whose counter ``v`` is, else ``None``."""
    if isinstance(v, BlockArgument) and v.index == 0:
        owner = v.block.parent_op
        if isinstance(owner, loop.ForOp):
            return owner
    return None


Range = tuple[Affine, Affine]
"""``(smallest, largest)`` value of a counter while its loop body runs."""


def counter_range(lp: loop.ForOp) -> Range | None:
    """The range of ``lp``'s counter, or ``None`` when its step is not a non-zero
    constant."""
    step = constant_of(lp.step)
    if not isinstance(step, int) or isinstance(step, bool) or step == 0:
        return None
    first, end = affine_of(lp.lower), affine_of(lp.upper)
    if abs(step) == 1:
        last = end.plus(Affine(const=-step))
    elif first.is_const and end.is_const:  # (an empty loop never runs: any value does)
        trips = len(range(first.const, end.const, step))
        last = Affine(const=first.const + max(trips - 1, 0) * step)
    else:
        last = Affine.of_atom(Last(lp))
    return (first, last) if step > 0 else (last, first)


def while_counters(w: loop.WhileOp) -> list[tuple[Value, Range]]:
    """Counters of a ``loop.while`` as its ``after`` region sees them: a value passed
    on unchanged by the condition, advanced by a constant ``c >= 1`` each iteration,
    and bounded by a conjunct ``x <= R`` of the condition with ``R`` set before the
    loop (how ``for ... range()`` with ``break`` is lowered).  It starts at its initial
    value and only grows until the condition stops the loop, so in ``after`` it lies
    in ``[init, R]``."""
    before, after = w.before.blocks[0], w.after.blocks[0]
    cond, step_op = before.terminator, after.terminator
    if not isinstance(cond, loop.ConditionOp) or not isinstance(step_op, loop.YieldOp):
        return []
    facts = [f for _, f in implied(cond.cond)]
    out = []
    for p, v in enumerate(cond.values):
        if not (isinstance(v, BlockArgument) and v.block is before and v.type == index):
            continue
        x = after.args[p]
        step = affine_of(step_op.values[v.index]).plus(Affine.of_atom(x), -1)
        if not (step.is_const and step.const >= 1):
            continue
        for f in facts:  # f = R - v >= 0 with R known before the loop
            bound = f.plus(Affine.of_atom(v))
            if f.terms.get(v) == -1 and all(not _within(w, a) for a in bound.terms):
                out.append((x, (affine_of(w.inits[v.index]), bound)))
                break
    return out


def _within(op: Operation, a: Atom) -> bool:
    if isinstance(a, Last):
        return op.is_ancestor_of(a.loop)
    owner = a.block.parent_op if isinstance(a, BlockArgument) else a.op  # type: ignore
    return owner is not None and op.is_ancestor_of(owner)


def implied(cond: Value) -> list[tuple[Value, Affine]]:
    """The analyzable conjuncts of ``cond`` (an ``and``, or a ``select(c, x, false)``
    as the frontend spells ``c and x``): what holds when ``cond`` does."""
    if isinstance(cond, OpResult):
        op = cond.op
        if isinstance(op, arith.AndOp) or isinstance(op, arith.SelectOp) and \
                constant_of(op.operand_values[2]) is False:
            return [p for v in op.operand_values[:2] for p in implied(v)]
    return conjuncts(cond) or []


def scope_ranges(op: Operation, inner: Operation) -> list[tuple[Atom, Range | None]]:
    """The counters of loop ``op`` seen from ``inner`` (nested in it) and their ranges
    (``None``: not known)."""
    if isinstance(op, loop.ForOp):
        return [(op.induction_var, counter_range(op))]
    if isinstance(op, loop.WhileOp) and op.after.blocks[0].ancestor_of(inner) is not None:
        return list(while_counters(op))
    return []


def enclosing_scopes(op: Operation) -> list[tuple[Operation, list[tuple[Atom, Range | None]]]]:
    """The loops around ``op`` (``loop.for``/``loop.while``), innermost first, with the
    counters each defines there."""
    out = []
    parent = op.parent_op
    while parent is not None:
        if isinstance(parent, loop.ForOp | loop.WhileOp):
            out.append((parent, scope_ranges(parent, op)))
        parent = parent.parent_op
    return out


def minimize(e: Affine, ranges: Iterable[tuple[Atom, Range | None]],
             used: list[tuple[Atom, Range]] | None = None) -> Affine | None:
    """A lower bound of ``e`` over the counters' ``ranges`` (innermost first; see the
    module docstring), or ``None`` when a counter in ``e`` has no known range.  The
    counters substituted and their ranges are appended to ``used``."""
    for atom, span in ranges:
        c = e.terms.get(atom, 0)
        if not c:
            continue
        if span is None:
            return None
        if used is not None:
            used.append((atom, span))
        e = e.substitute(atom, span[0] if c > 0 else span[1])
    return e


def lower_bound(form: Affine) -> int | None:
    """A constant lower bound of ``form`` from what atoms are known to be (``mem.dim``
    sizes are ``>= 0``), or ``None``."""
    for a, c in form.terms.items():
        if c < 0 or not is_size(a):
            return None
    return form.const


def is_size(a: Atom) -> bool:
    """``a`` is the size of an array's dimension (``mem.dim``/``tensor.dim``): at least
    0 and far below 2**40."""
    return isinstance(a, OpResult) and isinstance(a.op, mem.DimOp | tensor.DimOp)


__all__ = ["Affine", "Atom", "Last", "Range", "affine_of", "conjuncts", "counter_of",
           "counter_range", "enclosing_scopes", "implied", "is_size", "lower_bound", "minimize",
           "scope_ranges", "while_counters"]
