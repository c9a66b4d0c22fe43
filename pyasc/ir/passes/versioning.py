"""Loop versioning on affine checks (step 3 of ``hoist_checks``).

For each ``func.assert`` whose conjuncts are all affine (``affine.conjuncts``), the
*target* is the outermost enclosing ``loop.for`` ``L`` such that each conjunct's lower
bound over the loops from the check up to ``L`` (``affine.minimize``) is a form of
values *invariant* in ``L``: defined outside it, or computed inside it by pure ops from
invariant values (cloned before ``L``), or the last counter value of an inner loop with
invariant bounds.  Targets are versioned outermost first::

    %ok = <every hoisted form >= 0> and <every atom within +-2**40>
    loop.if(%ok) { <clone of L without the hoisted checks> } else { L }

The range test on atoms keeps the hoisted arithmetic exact: with at most
:data:`MAX_TERMS` terms, coefficients up to :data:`MAX_COEFF` and atoms within
``+-2**40`` (``mem.dim`` values are sizes of real arrays and need no test), a form
cannot wrap around int64, so a positive test really means every iteration passes.
Checks targeting a loop inside ``L`` are versioned in the fast copy only, and the
unchanged copy of a loop versioned before (the pass runs at the tensor level and again
on loop-level IR) is never versioned again.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, loop
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.affine import (
    Affine,
    Atom,
    Last,
    Range,
    conjuncts,
    counter_of,
    enclosing_scopes,
    is_size,
    lower_bound,
    minimize,
)
from pyasc.ir.passes.invariance import hoist_invariants, inside, invariant
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.types import index

MAX_TERMS = 16
MAX_COEFF = 1 << 12
ATOM_LIMIT = 1 << 40
"""See the module docstring: together they keep every hoisted form below 2**57."""


def _fits(form: Affine) -> bool:
    return (len(form.terms) <= MAX_TERMS and abs(form.const) <= ATOM_LIMIT
            and all(abs(c) <= MAX_COEFF for c in form.terms.values()))


Hoist = tuple[list[Affine], set[Atom]]
"""The forms to test before a loop, and more atoms whose range to test with them."""


def hoisted_forms(op: func.AssertOp, lp: Operation,
                  scopes: Sequence[tuple[Operation, list]]) -> Hoist | None:
    """The forms to test before loop ``lp`` for ``op`` (``scopes``: the enclosing loops
    with their counters, innermost first, ending with ``lp``), or ``None`` when ``op``
    cannot be hoisted out of ``lp``."""
    parts = conjuncts(op.cond)
    if parts is None:
        return None
    ranges = [r for _, rs in scopes for r in rs]
    counters = {a for a, _ in ranges}
    forms: list[Affine] = []
    extra: set[Atom] = set()
    for _, form in parts:
        used: list[tuple[Atom, Range]] = []
        low = minimize(form, ranges, used)
        if low is None or not _fits(low):
            return None
        if not all(a not in counters and invariant(a, lp) for a in low.terms):
            return None
        if low.is_const and low.const < 0:
            return None  # fails whenever it runs: leave it where it reports
        known = lower_bound(low)
        if known is not None and known >= 0:
            continue  # holds (simplify_checks drops such checks before)
        forms.append(low)
        # a while counter's bound must be in range too (see affine.while_counters)
        bounds = [a for x, span in used if counter_of(x) is None for a in span[1].terms]
        if not all(invariant(a, lp) for a in bounds):
            return None
        extra.update(bounds)
    return forms, extra


def in_slow_copy(op: Operation) -> bool:
    """``op`` is in the unchanged (``else``) copy of a versioned loop."""
    while op.parent is not None:
        parent = op.parent_op
        if isinstance(parent, loop.IfOp) and parent.attributes.get("versioned") and \
                parent.else_region.blocks[0] is op.parent:
            return True
        if parent is None:
            return False
        op = parent
    return False


def is_versioned(op: Operation) -> bool:
    """``op`` is a branch this pass made (``loop.if`` marked ``versioned``)."""
    return isinstance(op, loop.IfOp) and bool(op.attributes.get("versioned"))


def top_blocks(block: Block) -> list[Block]:
    """``block`` and the branches of the versioned ``loop.if``\\ s among its ops (their
    branches' too): a versioned loop at the top level of a function is, in either
    branch, a top-level loop whose branch the caller of the function picks.  The
    AscendC backend lowers both branches like the entry block (the host evaluates the
    condition and launches the kernels of one branch), so a nest versioned on checks it
    could not prove is still batched in its fast copy."""
    out = [block]
    for op in block.ops:
        if is_versioned(op):
            for region in op.region_list:
                out += top_blocks(region.blocks[0])
    return out


def target_of(op: func.AssertOp) -> tuple[Operation, Hoist] | None:
    """The outermost loop ``op`` can be hoisted out of, with the forms to test."""
    best = None
    scopes = enclosing_scopes(op)
    for k, (lp, _) in enumerate(scopes):
        found = hoisted_forms(op, lp, scopes[:k + 1])
        if found is not None:
            best = (lp, found)
    return best


def version_loops(fn: FuncOp) -> None:
    """Version the loops of ``fn`` on the checks hoistable out of them."""
    groups: dict[Operation, list[func.AssertOp]] = {}
    for op in [x for x in fn.walk() if isinstance(x, func.AssertOp)]:
        if in_slow_copy(op):
            continue  # the unchanged loop of an earlier versioning stays unchanged
        found = target_of(op)
        if found is not None:
            groups.setdefault(found[0], []).append(op)
    if not groups:
        return
    order = [x for x in fn.walk() if x in groups]  # pre-order: outermost first
    moved: dict[Operation, Operation] = {}  # op -> its copy in the fast loop made next

    def follow(op: Operation) -> Operation:
        while op in moved:
            op = moved[op]
        return op

    for lp in order:
        target = follow(lp)
        checks = [(a, _forms_up_to(a, target))  # the copies' forms: their own values
                  for a in map(follow, groups[lp])]
        moved.update(_version(target, checks))  # type: ignore[arg-type]


def _forms_up_to(op: Operation, lp: Operation) -> Hoist:
    scopes = enclosing_scopes(op)
    k = next(i for i, (s, _) in enumerate(scopes) if s is lp)
    found = hoisted_forms(op, lp, scopes[:k + 1])  # type: ignore[arg-type]
    assert found is not None, "a copy hoists as its original did"
    return found


def _version(lp: Operation, checks: list[tuple[Operation, Hoist]]
             ) -> dict[Operation, Operation]:
    """Version ``lp`` on ``checks``; returns the map from ops inside ``lp`` to their
    copies in the fast loop."""
    b = Builder.before(lp)
    forms = [f for _, (fs, _) in checks for f in fs]
    extra = {a: None for _, (_, more) in checks for a in more}
    cond = _Materializer(b, lp).condition(forms, list(extra))
    branch = b.insert(loop.IfOp.empty(cond, [r.type for r in lp.outputs], lp.loc))
    branch.attributes["versioned"] = True
    for old, new in zip(lp.outputs, branch.outputs, strict=True):
        old.replace_all_uses_with(new)
    fast = lp.clone({})
    copies = dict(zip(lp.walk(), fast.walk(), strict=True))
    assert lp.parent is not None
    lp.parent.detach(lp)
    slow_block = branch.else_region.blocks[0]
    slow_block.append(lp)
    slow_block.append(loop.YieldOp(list(lp.outputs), loc=lp.loc))
    fast_block = branch.then_region.blocks[0]
    fast_block.append(fast)
    fast_block.append(loop.YieldOp(list(fast.outputs), loc=lp.loc))
    for op, _ in checks:
        copies.pop(op).erase()
    hoist_invariants(fast)
    return copies


class _Materializer:
    """Emits forms, cloned invariant values and last counter values before a loop."""

    def __init__(self, b: Builder, lp: Operation) -> None:
        self.b, self.lp = b, lp
        self.values: dict[object, Value] = {}

    def condition(self, forms: list[Affine], extra: list[Atom]) -> Value:
        """``and`` of ``form >= 0`` for every form and of the range tests of their
        atoms and of the ``extra`` ones."""
        tests: list[Value] = []
        atoms: dict[Atom, None] = {}
        for form in forms:
            atoms.update(dict.fromkeys(form.terms))
            tests.append(self.cmp("ge", self.form(form), 0))
        atoms.update(dict.fromkeys(extra))
        for a in atoms:
            if not is_size(a):
                v = self.atom(a)
                tests += [self.cmp("le", v, ATOM_LIMIT), self.cmp("ge", v, -ATOM_LIMIT)]
        out = tests[0]
        for t in tests[1:]:
            out = self.emit(arith.AndOp.new(out, t))
        return out

    def emit(self, op: Operation) -> Value:
        return self.b.insert(op).result

    def const(self, k: int) -> Value:
        if k not in self.values:
            self.values[k] = self.emit(arith.ConstantOp.new(k, index))
        return self.values[k]

    def cmp(self, pred: str, v: Value, k: int) -> Value:
        return self.emit(arith.CmpOp.new(pred, v, self.const(k)))

    def form(self, f: Affine) -> Value:
        """``f`` as a value: positive terms added, negative ones subtracted."""
        out: Value | None = None
        for a, c in sorted(f.terms.items(), key=lambda t: t[1] < 0):
            term = self.term(a, abs(c))
            if out is None:
                out = term if c > 0 else self.emit(arith.NegOp.new(term))
            else:
                out = self.emit((arith.AddOp if c > 0 else arith.SubOp).new(out, term))
        if out is None or f.const:
            k = self.const(f.const)
            out = k if out is None else self.emit(arith.AddOp.new(out, k))
        return out

    def term(self, a: Atom, c: int) -> Value:
        """``c * a`` for ``c > 0`` (made once per form set)."""
        if ("term", a, c) not in self.values:
            v = self.atom(a)
            self.values[("term", a, c)] = v if c == 1 else \
                self.emit(arith.MulOp.new(v, self.const(c)))
        return self.values[("term", a, c)]

    def atom(self, a: Atom) -> Value:
        """``a`` as a value available before the loop."""
        if isinstance(a, Last):
            return self._last(a.loop)
        if not inside(self.lp, a):
            return a
        if a not in self.values:
            assert isinstance(a, OpResult)
            mapping = {v: self.atom(v) for v in a.op.operand_values}
            clone = a.op.clone(mapping)  # type: ignore[arg-type]
            self.b.insert(clone)
            self.values[a] = clone.result_values[a.index]
        return self.values[a]

    def _last(self, lp: loop.ForOp) -> Value:
        """``lower + ((upper - lower - 1) // step) * step`` (the mirror image for a
        negative step): the counter in the last iteration, when there is one."""
        if ("last", lp) not in self.values:
            lo, hi = self.atom(lp.lower), self.atom(lp.upper)
            step = self.atom(lp.step)
            up = (constant_of(lp.step) or 0) > 0  # a constant (affine.counter_range)
            span = self.emit(arith.SubOp.new(hi, lo) if up else arith.SubOp.new(lo, hi))
            span = self.emit(arith.SubOp.new(span, self.const(1)))
            mag = step if up else self.emit(arith.NegOp.new(step))
            n = self.emit(arith.FloorDivOp.new(span, mag))
            off = self.emit(arith.MulOp.new(n, step))
            self.values[("last", lp)] = self.emit(arith.AddOp.new(lo, off))
        return self.values[("last", lp)]


__all__ = ["ATOM_LIMIT", "MAX_COEFF", "MAX_TERMS", "hoisted_forms", "in_slow_copy",
           "invariant", "is_versioned", "target_of", "top_blocks", "version_loops"]
