"""What ``select-chains`` rewrites: user-written running max/min/argmax loops, searched
in lanes by ``select_chains`` (loop level, CPU only).

A maximum written as a loop::

    mx = x[i, 0]
    for j in range(1, m):
        if x[i, j] > mx:        # or mx = max(mx, x[i, j]), mx = x[i, j] if ... else mx
            mx = x[i, j]        # (and k = j: the argmax form)

is, once ``speculate-guards`` has if-converted it, a loop-carried compare-and-select
chain ``mx = select(x > mx, x, mx)``: one dependent compare and blend per element,
which LLVM never vectorizes.  The chain's *take rule* ``x P mx`` (``P`` one of
``gt ge lt le``, NaN compares false) fixes what it computes: the first (``gt``/``lt``)
or last (``ge``/``le``) best element of ``{init} + x`` (``init`` counting as the first),
NaN elements never taken, a NaN ``init`` never replaced.  Lanes compute the same:

* lane ``k`` runs the same rule from ``init`` over the elements ``lower + W i + k``
  (``lanes_emit``), so it ends on the first (last) best of ``init`` and its elements;
* the lanes are merged by value with the strict rule; equal values go to the lane whose
  element came first (``gt``/``lt``) or last (``ge``/``le``), known from the iteration
  each lane last took (its *rank*; ``init`` ranks before every element), so the merged
  lane holds the whole prefix's first (last) best element and every value chosen with it
  (the *payloads*, ``k = j``): bit-identical, ``-0.0``/``0.0`` ties and NaN included;
* a chain with no payloads is merged without ranks: equal values have equal bits except
  ``-0.0``/``0.0``, so a float result that is a zero is recomputed by the original loop
  (rows whose maximum is zero run twice: exact, and rare);
* the ``(upper - lower) % W`` last iterations run the original loop, started from the
  merged state (its state after a prefix is exactly that prefix's best).

The rule, for a ``loop.for`` ``L`` of step 1 whose body is region-free pure ops and
loads (nothing in ``L`` writes memory, so lanes and a re-run read the same): every
carried value is a *chain* or a *payload*. A chain ``a`` has two uses, ``c = cmp(x, a)``
(either order) and ``s = select(c, x', a)`` (or ``select(c, a, x')``: take when ``c`` is
false, only for integers, where ``not (x <= a)`` is ``x > a``; for floats it also takes
NaN), ``x'`` computing the same as ``x``, ``s`` yielded at ``a``'s place and nowhere
else used. A payload ``b`` has one use, ``select(c, v, b)`` of some chain's ``c`` in the
same orientation, yielded at ``b``'s place; ``c`` feeds only its chain's selects; ``x``
and ``v`` do not depend on carried values. A chain may also be ``a = max(a, x)``
(``arith.max``/``min``: ``np.maximum(mx, x)``, NaN propagating), whose lanes merge with
the same op: the value is the loop's but for which zero or which NaN, so a result that
is a zero or a NaN is recomputed in order (as ``np.max``'s lanes). Float forms taking
``x`` when a compare is false (``mx = min(x, mx)``, ``if not x <= mx``) stay scalar.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.passes.invariance import inside
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.types import ScalarType

SWAPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
"""``a P b`` is ``b SWAPPED[P] a``."""
COMPLEMENT = {"gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}
"""``not (a P b)`` is ``a COMPLEMENT[P] b`` (integers only: no unordered values)."""
STRICT = {"gt": "gt", "ge": "gt", "lt": "lt", "le": "lt"}
"""The strict rule of a take rule: which of two lanes' values is better."""


@dataclass
class Chain:
    """A carried value updated by ``select(c, x, a)`` (module docstring)."""

    pos: int                 # its place among the loop's carried values
    cmp: Operation | None    # None: an ``arith.max``/``min`` chain (``np.maximum``)
    take: str = ""           # ``x take a`` replaces ``a``: gt / ge / lt / le
    on_true: bool = True     # the select takes ``x`` when ``cmp`` holds
    payloads: list[int] = field(default_factory=list)
    combine: type[Operation] | None = None  # ``arith.MaxOp``/``MinOp`` of such a chain

    @property
    def first_wins(self) -> bool:
        """Equal values: the earlier element stays (``gt``/``lt``)."""
        return self.take in ("gt", "lt")


def match(lp: loop.ForOp) -> list[Chain] | None:
    """The chains of ``lp`` (every carried value a chain or one of their payloads), or
    None when the rule of the module docstring does not apply."""
    if not lp.iter_args or "lanes" in lp.attributes or constant_of(lp.step) != 1:
        return None
    body = lp.body.block
    if not all(_plain(op) for op in body.ops[:-1]):
        return None
    yielded = body.ops[-1].operand_values
    chains: list[Chain] = []
    rest: list[int] = []
    for pos, a in enumerate(lp.iter_args):
        chain = _chain(lp, pos, a, yielded[pos])
        if chain is not None:
            chains.append(chain)
        else:
            rest.append(pos)
    by_cmp = {ch.cmp: ch for ch in chains}
    for pos in rest:
        owner = _payload_of(lp, lp.iter_args[pos], yielded[pos], by_cmp)
        if owner is None:
            return None
        owner.payloads.append(pos)
    for ch in chains:  # the compare decides nothing but its chain's selects
        if ch.cmp is None:
            continue
        selects = {yielded[p].op for p in [ch.pos, *ch.payloads]}  # type: ignore[union-attr]
        if any(user not in selects for user, _ in ch.cmp.result.uses):
            return None
    return chains or None


def _plain(op: Operation) -> bool:
    """Ops a lane may run in any order and a re-run repeats harmlessly."""
    return not op.region_list and (op.has_trait("pure") or isinstance(op, mem.LoadOp))


def _chain(lp: loop.ForOp, pos: int, a: Value, nxt: Value) -> Chain | None:
    """``a``'s chain when ``nxt`` (its yielded value) is ``select(x P a, x, a)``."""
    t = a.type
    if not isinstance(t, ScalarType) or not (t.is_float or t.is_int):
        return None
    sel = nxt.op if isinstance(nxt, OpResult) else None
    if isinstance(sel, arith.MaxOp | arith.MinOp):
        return _combine_chain(lp, pos, a, sel)
    if not isinstance(sel, arith.SelectOp) or sel.parent is not lp.body.block or \
            len(nxt.uses) != 1 or len(a.uses) != 2:
        return None
    cond, on_t, on_f = sel.operand_values
    c = cond.op if isinstance(cond, OpResult) else None
    if not isinstance(c, arith.CmpOp) or c.attributes["predicate"] not in SWAPPED:
        return None
    lhs, rhs = c.operand_values
    if (lhs is a) == (rhs is a):
        return None
    x = rhs if lhs is a else lhs
    pred = c.attributes["predicate"]
    take = SWAPPED[pred] if lhs is a else pred
    if on_f is a and same_value(on_t, x, lp):
        on_true = True
    elif on_t is a and same_value(on_f, x, lp) and not t.is_float:
        on_true, take = False, COMPLEMENT[take]
    else:
        return None
    if depends_on_carried(x, lp):
        return None
    return Chain(pos, c, take, on_true)


def _combine_chain(lp: loop.ForOp, pos: int, a: Value, op: Operation) -> Chain | None:
    """``a = np.maximum(a, x)`` (``arith.max``, NaN-propagating; either operand order)."""
    lhs, rhs = op.operand_values
    if op.parent is not lp.body.block or len(op.result.uses) != 1 or len(a.uses) != 1 or \
            (lhs is a) == (rhs is a) or depends_on_carried(rhs if lhs is a else lhs, lp):
        return None
    return Chain(pos, None, combine=type(op))


def _payload_of(lp: loop.ForOp, b: Value, nxt: Value,
                by_cmp: dict[Operation, Chain]) -> Chain | None:
    """The chain whose compare picks ``b``'s next value (``select(c, v, b)``)."""
    sel = nxt.op if isinstance(nxt, OpResult) else None
    if not isinstance(sel, arith.SelectOp) or sel.parent is not lp.body.block or \
            len(nxt.uses) != 1 or len(b.uses) != 1:
        return None
    cond, on_t, on_f = sel.operand_values
    owner = by_cmp.get(cond.op) if isinstance(cond, OpResult) else None
    if owner is None:
        return None
    v, kept = (on_t, on_f) if owner.on_true else (on_f, on_t)
    if kept is not b or depends_on_carried(v, lp):
        return None
    return owner


def same_value(a: Value, b: Value, lp: loop.ForOp, depth: int = 8) -> bool:
    """``a`` and ``b`` are computed the same way in one iteration of ``lp`` (whose body
    writes no memory, so two loads of the same element there read the same value)."""
    if a is b:
        return True
    if depth == 0 or not (isinstance(a, OpResult) and isinstance(b, OpResult)):
        return False
    x, y = a.op, b.op
    if type(x) is not type(y) or x.attributes != y.attributes or x.region_list or \
            len(x.operand_values) != len(y.operand_values) or len(x.results) != 1:
        return False
    if isinstance(x, mem.LoadOp):
        if not (inside(lp, a) and inside(lp, b)):
            return False
    elif not x.has_trait("pure"):
        return False
    return all(same_value(p, q, lp, depth - 1)
               for p, q in zip(x.operand_values, y.operand_values, strict=True))


def depends_on_carried(v: Value, lp: loop.ForOp, seen: set[Value] | None = None) -> bool:
    """``v`` is computed in ``lp`` from one of its carried values."""
    seen = set() if seen is None else seen
    if v in lp.iter_args:
        return True
    if v in seen or not isinstance(v, OpResult) or not inside(lp, v):
        return False
    seen.add(v)
    return any(depends_on_carried(o, lp, seen) for o in v.op.operand_values)


__all__ = ["COMPLEMENT", "STRICT", "SWAPPED", "Chain", "depends_on_carried",
           "match", "same_value"]
