"""``hoist-checks``: run-time checks out of hot loops, without changing what happens.

Bounds checks are on by default (``boundscheck=True``), so loop bodies are full of
``func.assert``\\ s like ``-n <= i + 1 < n``.  This pass removes them from the loops
where that is provably the same program, in three steps per function:

1. **Range facts** — a conjunct of a check (``affine.conjuncts``: signed comparisons of
   ``index`` values, read as ``e >= 0``) whose lower bound over the iterations of its
   enclosing loops (``affine.minimize``; array sizes count as ``>= 0``) is a constant
   ``>= 0`` always holds: it is dropped (``for i in range(n): a[i]`` with
   ``n = a.shape[0]``).
2. **Implied checks** (a scoped walk in dominance order) — a conjunct implied by one
   an earlier check established (same terms, a constant at least as large) is dropped
   (``a[i]`` after ``a[i]``; ``b[i]`` after ``a[i]`` when both have size ``n``).
3. **Loop versioning** (``versioning.py``) — a check whose conjuncts are affine in the
   counters of enclosing loops (``loop.for``, or a ``loop.while`` that counts), with the
   other terms invariant in the outermost such loop ``L``, is evaluated once before
   ``L`` at the first and last iterations (the minimum of an affine form over a box);
   ``L`` becomes::

       loop.if(all hoisted checks hold, atoms in safe range) { L without them }
       else { L unchanged }

   When the test fails, the unchanged loop runs and raises exactly where, and with
   exactly the values, it always did (or not at all: a zero-trip loop, a ``break``
   before the bad iteration, a check inside an ``if`` that is never taken).  Only the
   fast copy is versioned further (inner loops with checks that could not leave them),
   so a nest has at most one extra copy per level.

Checks whose index comes from data (``a[idx[j]]``) stay where they are.  The pass only
removes, rewrites (fewer conjuncts) or moves ``func.assert``\\ s and copies loops.  It
runs twice: on tensor-level IR before fusion (a check between two ops keeps them apart)
and after ``lower-to-loops`` (the checks of gathers and scatters); the unchanged copy
of a versioned loop is never versioned again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import arith, func, loop
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.affine import Affine, conjuncts, enclosing_scopes, lower_bound, minimize
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.versioning import version_loops


def always_holds(form: Affine, ranges: list) -> bool:
    """``form >= 0`` whenever the enclosing loops' counters are in their ``ranges``."""
    low = minimize(form, ranges)
    bound = None if low is None else lower_bound(low)
    return bound is not None and bound >= 0


@dataclass
class _Facts:
    """What the checks executed so far established: ``terms + c >= 0`` for the smallest
    ``c`` per terms key, and the ``i1`` values known true."""

    bounds: dict[tuple, int] = field(default_factory=dict)
    true: set[Value] = field(default_factory=set)

    def copy(self) -> _Facts:
        return _Facts(dict(self.bounds), set(self.true))

    def implies(self, form: Affine) -> bool:
        known = self.bounds.get(form.key())
        return known is not None and form.const >= known

    def add(self, form: Affine) -> None:
        key = form.key()
        self.bounds[key] = min(form.const, self.bounds.get(key, form.const))


def simplify_checks(fn: FuncOp) -> None:
    """Steps 1 and 2 of the module docstring, in place."""
    _walk(fn.entry, _Facts())


def _walk(block: Block, facts: _Facts) -> None:
    for op in list(block.ops):
        if isinstance(op, func.AssertOp):
            _simplify(op, facts)
            continue
        for region in op.region_list:
            for inner in region.blocks:
                _walk(inner, facts.copy())


def _simplify(op: func.AssertOp, facts: _Facts) -> None:
    cond = op.cond
    if cond in facts.true:
        op.erase()
        return
    parts = conjuncts(cond)
    if parts is None:
        facts.true.add(cond)
        return
    ranges = [r for _, rs in enclosing_scopes(op) for r in rs]
    kept = [(c, f) for c, f in parts if not facts.implies(f) and not always_holds(f, ranges)]
    for _, f in parts:
        facts.add(f)
    facts.true.add(cond)
    if not kept:
        op.erase()
    elif len(kept) < len(parts):
        b = Builder.before(op)
        new = kept[0][0]
        for c, _ in kept[1:]:
            new = b.insert(arith.AndOp.new(new, c)).result
        op.set_operand(0, new)


def all_asserts(op: Operation) -> Iterator[func.AssertOp]:
    """The ``func.assert`` ops in ``op``, pre-order."""
    for inner in op.walk():
        if isinstance(inner, func.AssertOp):
            yield inner


def hot_checks(op: Operation) -> list[func.AssertOp]:
    """The checks in ``op`` that run in loop iterations on the fast path: inside a
    ``loop.for``/``loop.while``, not in the unchanged copy of a versioned loop."""
    out: list[func.AssertOp] = []
    _hot(op, False, out)
    return out


def _hot(op: Operation, in_loop: bool, out: list[func.AssertOp]) -> None:
    if isinstance(op, func.AssertOp) and in_loop:
        out.append(op)
    regions = op.region_list
    if isinstance(op, loop.IfOp) and op.attributes.get("versioned"):
        regions = regions[:1]
    looping = in_loop or isinstance(op, loop.ForOp | loop.WhileOp)
    for region in regions:
        for block in region.blocks:
            for inner in block.ops:
                _hot(inner, looping, out)


@register_pass
class HoistChecks(Pass):
    """Drop proven and repeated checks; version loops on their affine checks."""

    name = "hoist-checks"
    description = "remove provable run-time checks and hoist affine ones out of loops"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            if next(all_asserts(fn), None) is None:
                continue
            simplify_checks(fn)
            version_loops(fn)


__all__ = ["HoistChecks", "all_asserts", "always_holds", "hot_checks", "simplify_checks"]
