"""Incremental schedules for the fusion pass: the facts of a cluster, kept per cluster.

``fusion_schedule.analyze`` classifies a set of ops from scratch, in time linear in the
set.  The fusion pass asks about every merge it considers and clusters grow one op at a
time, so asking ``analyze`` made a chain of n statements cost O(n^2).  A :class:`Part`
keeps what ``analyze`` derives for one cluster: its outputs and inputs, reductions and
their signature, the values computed from a member reduction (``dep``, with their forms)
or from a member gather, and the loop order its members passed the broadcast rule
under.  :class:`Union` derives the same facts for a union of parts from theirs: it
starts from the largest part and looks only at the others' inputs and outputs, at the
edges between parts, and at the members whose facts change (newly reduction-dependent
values; every member of a part whose loop order changes).  Its schedule equals
``analyze``'s on the union (``fusion_clusters.CHECK_FULL`` compares them in the tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import tensor
from pyasc.ir.passes.fusion_rules import is_unit_reshape, role_of
from pyasc.ir.passes.fusion_schedule import (
    MAX_CHAINED_REDUCTIONS,
    REMAPS,
    Schedule,
    broadcast_ok,
    dropped_consistent,
    form_of,
    remaps_remapped,
)
from pyasc.ir.passes.fusion_shapes import ShapeSyms
from pyasc.ir.types import TensorType

Use = tuple[Value, Operation, Operation, int]
"""One use between parts: (value, member of the block, user op, operand index)."""


class Part:
    """One cluster and the facts its schedule is derived from (module docstring).

    ``outputs`` counts, per member result, its uses outside the part; ``inputs`` counts,
    per value defined outside, the reads of the members (nested ops included)."""

    def __init__(self, cid: int, op: Operation, block: Block, syms: ShapeSyms) -> None:
        self.cid = cid
        self.members: dict[Operation, None] = {op: None}
        role = role_of(op)
        self.work = int(role not in (None, "scalar"))
        self.heavy = int(role not in ("scalar", "access") or isinstance(op, tensor.GatherOp))
        self.reds = [op] if role == "reduce" else []
        self.sig = _signature(op, syms) if self.reds else None
        self.reshapes = [op] if _general_reshape(op) else []
        self.gathers = int(isinstance(op, tensor.GatherOp))
        self.remaps = int(isinstance(op, REMAPS))
        self.outputs: dict[Value, int] = {}
        for r in op.result_values:
            n = sum(block.ancestor_of(u) is not op for u, _ in r.uses)
            if n:
                self.outputs[r] = n
        self.out_shapes = Counter(syms.of(v) for v in self.outputs if _is_tensor(v))
        self.inputs: dict[Value, int] = Counter(v for v, _, _ in reads(op))
        self.dep: set[Value] = set(op.result_values) if self.reds else set()
        self.gathered: set[Value] = set(op.result_values) if self.gathers else set()
        self.remapped: set[Value] = set(op.result_values) if self.remaps else set()
        self.forms: dict[Value, str] = {}
        self.ok = True  # facts between members hold (remaps, forms)
        if self.reds:
            self.ok = bool(self.sig[1])
            for r in op.result_values:
                form = form_of(r, self.sig[2], self.sig[1], syms) if self.ok else None
                self.ok = self.ok and form is not None
                if form is not None:
                    self.forms[r] = form
        self.n_element = sum(f == "element" for f in self.forms.values())
        self.consumed = False  # a member reads a member reduction's result directly
        self.chained: set[Operation] = set()  # reductions of values needing a reduction
        self.first = self.last = op
        self.checked: tuple | None = None  # (domain, loop order) the broadcast rule held for
        self.sched: Schedule | None = None
        self.stale = True  # ``sched`` must be derived again

    def __len__(self) -> int:
        return len(self.members)

    def count_outputs(self, v: Value, k: int, syms: ShapeSyms) -> None:
        """``k`` more (or fewer) uses of member result ``v`` outside the part."""
        n = self.outputs.get(v, 0) + k
        if (n > 0) != (v in self.outputs) and _is_tensor(v):
            _count(self.out_shapes, syms.of(v), 1 if n > 0 else -1)
        _count(self.outputs, v, k)
        self.stale = True

    def count_inputs(self, v: Value, k: int) -> None:
        """``k`` more (or fewer) reads of ``v`` (defined outside) by members."""
        _count(self.inputs, v, k)
        self.stale = True

    def remove(self, op: Operation, syms: ShapeSyms, owner: Callable[[Value], Part | None]
               ) -> None:
        """Take out ``op``, whose results are unused by now (a redundant copy)."""
        del self.members[op]
        role = role_of(op)
        self.work -= int(role not in (None, "scalar"))
        self.heavy -= int(role not in ("scalar", "access") or isinstance(op, tensor.GatherOp))
        if op in self.reshapes:
            self.reshapes.remove(op)
        self.gathers -= int(isinstance(op, tensor.GatherOp))
        self.remaps -= int(isinstance(op, REMAPS))
        for r in op.result_values:
            if r in self.outputs:
                self.count_outputs(r, -self.outputs[r], syms)
            self.dep.discard(r)
            self.gathered.discard(r)
            self.remapped.discard(r)
            self.n_element -= int(self.forms.pop(r, None) == "element")
        for v, _, _ in reads(op):
            if owner(v) is not self:
                self.count_inputs(v, -1)
        if op is self.first or op is self.last:
            self.first = min(self.members, key=_key)
            self.last = max(self.members, key=_key)
        self.stale = True


def _count(counts: dict, key: object, k: int) -> None:
    n = counts.get(key, 0) + k
    if n > 0:
        counts[key] = n
    else:
        counts.pop(key, None)


def _key(op: Operation) -> int:
    return op.order_key


def _is_tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def _general_reshape(op: Operation) -> bool:
    return isinstance(op, tensor.ReshapeOp) and not is_unit_reshape(op)


def _signature(op: Operation, syms: ShapeSyms) -> tuple:
    axes = op.attributes["axes"]
    return (type(axes), tuple(axes), syms.of(op.operand_values[0]))


def reads(op: Operation) -> Iterator[tuple[Value, Operation, int]]:
    """(value, user, operand index) of every read by ``op`` or an op nested in it of a
    value defined outside ``op``."""
    for inner in op.walk():
        for idx, v in enumerate(inner.operand_values):
            owner = v.op if isinstance(v, OpResult) else v.block.parent_op
            if owner is None or not op.is_ancestor_of(owner):
                yield v, inner, idx


class _Forms:
    """Forms of reduction-dependent values: the new ones, else their part's."""

    def __init__(self, new: dict[Value, str], part_of: Callable[[Value], Part | None]) -> None:
        self.new, self.part_of = new, part_of

    def get(self, v: Value) -> str | None:
        form = self.new.get(v)
        if form is None:
            part = self.part_of(v)
            form = part.forms.get(v) if part is not None else None
        return form


class Union:
    """The facts and schedule of a union of parts, computed from the parts' facts;
    :meth:`commit` turns the largest part into the union."""

    def __init__(self, parts: list[Part], block: Block, syms: ShapeSyms,
                 part_of: Callable[[Operation | None], Part | None]) -> None:
        self.parts, self.block, self.syms, self._part_of = parts, block, syms, part_of
        self.inside = set(map(id, parts))
        self.base = max(parts, key=len)
        self.others = [p for p in parts if p is not self.base]
        self.edges = list(dict.fromkeys(self._edges()))
        self.crossing = Counter(v for v, _, _, _ in self.edges)  # uses that become inside
        self.lost_outputs = [v for v, k in self.crossing.items()
                             if self.owner(v).outputs[v] == k]  # type: ignore[union-attr]
        self.new_dep: dict[Value, str] = {}
        self.new_gathered: set[Value] = set()
        self.new_remapped: set[Value] = set()
        self.consumed = any(p.consumed for p in parts)
        self.chained: set[Operation] = set().union(*(p.chained for p in parts))
        self.key: tuple | None = None
        self.sched = self._schedule()

    # -- membership
    def owner(self, v: Value) -> Part | None:
        """The part of the union defining ``v`` (``None`` outside the union)."""
        if not isinstance(v, OpResult) or v.op.parent is not self.block:
            return None
        part = self._part_of(v.op)
        return part if part is not None and id(part) in self.inside else None

    def member_part(self, op: Operation | None) -> Part | None:
        part = self._part_of(op) if op is not None else None
        return part if part is not None and id(part) in self.inside else None

    def _edges(self) -> Iterator[Use]:
        """Uses between different parts, found from the smaller parts' sides: the uses
        of their outputs and their members' reads."""
        anc = self.block.ancestor_of
        for p in self.others:
            for v in p.outputs:
                for u, idx in v.uses:
                    a = anc(u)
                    q = self.member_part(a)
                    if q is not None and q is not p:
                        yield v, a, u, idx  # type: ignore[misc]
            for a in p.members:
                for v, u, idx in reads(a):
                    q = self.owner(v)
                    if q is not None and q is not p:
                        yield v, a, u, idx

    # -- the schedule (the steps of ``fusion_schedule.analyze``)
    def _schedule(self) -> Schedule | None:
        if not all(p.ok for p in self.parts):
            return None
        if not sum(p.work for p in self.parts):
            return Schedule("scalar", ())
        if not self._remaps_ok():
            return None
        sigs = {p.sig for p in self.parts if p.sig is not None}
        if not sigs:
            return self._elementwise()
        if len(sigs) > 1:
            return None
        _, axes, domain = sigs.pop()
        return self._reduction(axes, domain) if axes else None

    def out_shapes(self) -> Counter:
        shapes: Counter = Counter()
        for p in self.parts:
            shapes.update(p.out_shapes)
        shapes.subtract(self.syms.of(v) for v in self.lost_outputs if _is_tensor(v))
        return +shapes

    def _remaps_ok(self) -> bool:
        for _v, a, u, _i in self.edges:
            if u is a and _general_reshape(a):
                return False
        bad = False

        def visit(v: Value, a: Operation) -> None:
            nonlocal bad
            bad = bad or (isinstance(a, tensor.SliceOp) and a.source is v)

        def visit_remap(v: Value, a: Operation) -> None:
            nonlocal bad
            bad = bad or remaps_remapped(a, v, {v})

        if any(p.gathers for p in self.parts):
            self.new_gathered = self._grow(lambda p: p.gathered, direct=True, visit=visit)
        if any(p.remaps for p in self.parts):
            self.new_remapped = self._grow(lambda p: p.remapped, direct=True,
                                           visit=visit_remap)
        return not bad

    def _elementwise(self) -> Schedule | None:
        shapes = self.out_shapes()
        if len(shapes) != 1:
            return None
        sched = Schedule("elementwise", next(iter(shapes)))
        return sched if self._broadcasts_ok(sched) else None

    def _reduction(self, axes: tuple, domain: tuple) -> Schedule | None:
        n = len(domain)
        recheck: dict[Operation, None] = {}

        def visit(v: Value, a: Operation) -> None:
            recheck.setdefault(a)
            if role_of(a) == "reduce" and a.operand_values[0] is v:
                self.chained.add(a)  # its source needs a member reduction

        grown = self._grow(lambda p: p.dep, direct=False, visit=visit)
        if len(self.chained) > MAX_CHAINED_REDUCTIONS:
            return None
        for v in grown:
            form = form_of(v, domain, axes, self.syms)  # type: ignore[arg-type]
            if form is None:
                return None
            self.new_dep[v] = form
        recheck.update((v.op, None) for v in grown)  # type: ignore[union-attr]
        forms = _Forms(self.new_dep, self.owner)
        if not all(dropped_consistent(a, forms) for a in recheck):  # type: ignore[arg-type]
            return None
        self.consumed = self.consumed or any(
            u is a and role_of(v.op) == "reduce" for v, a, u, _ in self.edges)  # type: ignore
        rowwise = sum(p.n_element for p in self.parts) + sum(
            f == "element" for f in self.new_dep.values()) > 0
        column = (n - 1) not in axes
        if column and (rowwise or self.consumed):
            return None
        if rowwise and axes != tuple(range(n - len(axes), n)):
            return None
        kept = tuple(1 if a in axes else d for a, d in enumerate(domain))
        dropped = tuple(d for a, d in enumerate(domain) if a not in axes)
        if any(s not in (domain, kept, dropped) for s in self.out_shapes()):
            return None
        sched = Schedule("rowwise" if rowwise else "reduction", domain, axes, column)
        return sched if self._broadcasts_ok(sched) else None

    def _dep(self, v: Value) -> bool:
        part = self.owner(v)
        return part is not None and v in part.dep

    def _broadcasts_ok(self, sched: Schedule) -> bool:
        self.key = (sched.domain, tuple(sched.loop_order))
        order = self.key[1]
        for p in self.parts:
            if p.checked == self.key:
                continue  # its members passed under this loop order already
            for op in p.members:
                r = op.result_values[0] if op.result_values else None
                if role_of(op) in (None, "scalar", "reduce") or r in p.dep or \
                        r in self.new_dep:
                    continue
                if not broadcast_ok(op, sched.domain, order, self.syms):
                    return False
        return True

    def _grow(self, closure: Callable[[Part], set[Value]], direct: bool,
              visit: Callable[[Value, Operation], None]) -> set[Value]:
        """Values the union adds to a closure (``dep``: computed from a member
        reduction, nested reads included; ``gathered``: from a member gather, direct
        operands only); ``visit(v, member)`` sees every use of a closure value by a
        member of another part or by a member newly in the closure."""
        anc = self.block.ancestor_of
        grown: set[Value] = set()

        def inside(v: Value) -> bool:
            part = self.owner(v)
            return v in grown or (part is not None and v in closure(part))

        def follows(u: Operation, a: Operation) -> bool:
            # the reads ``fusion_schedule`` follows: operands, and for ``dep`` also
            # the operands of the ops directly inside the member's regions
            return u is a or (not direct and u.parent_op is a)

        work: list[Operation] = []
        for v, a, u, _ in self.edges:
            if follows(u, a) and inside(v):
                visit(v, a)
                work.append(a)
        while work:
            a = work.pop()
            if all(inside(r) for r in a.result_values):
                continue
            grown.update(a.result_values)
            for r in a.result_values:
                for u, _ in r.uses:
                    b = anc(u)
                    if b is not None and follows(u, b) and self.member_part(b) is not None:
                        visit(r, b)
                        work.append(b)
        return grown

    # -- commit
    def commit(self, cid: int, of: dict[Operation, Part]) -> Part:
        """Make the largest part the union (named ``cid``) and return it."""
        base = self.base
        base.out_shapes = self.out_shapes()
        for p in self.others:
            for op in p.members:
                of[op] = base
            base.members.update(p.members)
            base.work += p.work
            base.heavy += p.heavy
            base.reds += p.reds
            base.sig = base.sig or p.sig
            base.reshapes += p.reshapes
            base.gathers += p.gathers
            base.remaps += p.remaps
            base.outputs.update(p.outputs)
            for v, k in p.inputs.items():
                _count(base.inputs, v, k)
            base.dep |= p.dep
            base.gathered |= p.gathered
            base.remapped |= p.remapped
            base.forms.update(p.forms)
            base.n_element += p.n_element
            base.first = min(base.first, p.first, key=_key)
            base.last = max(base.last, p.last, key=_key)
        for v, k in self.crossing.items():
            _count(base.outputs, v, -k)
            base.inputs.pop(v, None)  # every read of it is inside now
        base.dep |= set(self.new_dep)
        base.forms.update(self.new_dep)
        base.n_element += sum(f == "element" for f in self.new_dep.values())
        base.gathered |= self.new_gathered
        base.remapped |= self.new_remapped
        base.consumed = self.consumed
        base.chained = self.chained
        base.checked, base.sched, base.stale = self.key, self.sched, False
        base.cid = cid
        return base
