"""Access analysis for ``layout``: loop bands, how loads/stores index memory, aliasing,
the stride cost of a loop order and when a reordering is exact.

A *band* is a perfect nest of ``loop.for`` ops ``L0 > L1 > ... > Lk-1`` without carried
values: each ``Li`` (``i < k-1``) holds only pure ops, loads of memory the band never
writes (``w[o, ci, dy, dx]`` in a convolution's user loops) and ``Li+1`` (then its
yield).  An
index operand is *direct* in band loop ``l`` when it is ``iv_l``, ``iv_l + c``, ``c +
iv_l`` or ``iv_l - c`` with ``c`` a constant or defined outside the band; it *depends*
on ``l`` when ``iv_l`` reaches it otherwise.  The legality and cost rules are stated in
``layout``'s module docstring.

Accesses are analysed on the buffer a view shows: a load or store through a
``mem.subview`` of a buffer that is not itself a view (``out[:, :, i, j]`` made inside
the band, ``x[:, c, dy:dy + h]``) indexes that buffer on each axis at ``offset + step *
index`` (a :class:`Term`; a dropped axis at ``offset``), so a view made per iteration
still counts as indexed by the loops its offsets come from.  Buffers allocated inside
the innermost band loop are private to one point of the band: their allocation, uses
and release do not constrain the order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.loopgen import constant_of, static_strides
from pyasc.ir.types import DYN, MemRefType

LINE_BYTES = 64
"""A step of a cache line or more costs one line, however long: a new line per
iteration either way.  Unknown strides (and indices depending on the loop in an
unknown way) count as a line too."""

# Ops allowed inside a band besides its loops: their effects are loads and stores only.
BAND_OPS = frozenset({
    "mem.load", "mem.store", "mem.dim", "mem.subview", "mem.transpose", "mem.reshape",
    "mem.constant", "loop.for", "loop.while", "loop.if", "loop.yield", "loop.condition",
})


@dataclass(frozen=True)
class Term:
    """The index of one axis of the accessed buffer: ``offset + step * index`` (``index``
    None: a dropped axis, at ``offset``; ``offset`` None: zero; ``step`` None: not a
    constant)."""

    index: Value | None
    offset: Value | None = None
    step: int | None = 1


@dataclass
class Access:
    """One ``mem.load``/``mem.store``: the buffer, its index terms, and the kind."""

    op: Operation
    memref: Value
    indices: list[Term]
    store: bool

    def stride(self, pos: int) -> int:
        """Elements stepped over along axis ``pos`` per unit of its index, as a
        magnitude (``DYN``, which is -1, when not known statically)."""
        t = self.memref.type
        assert isinstance(t, MemRefType)
        stride, step = static_strides(t)[pos], self.indices[pos].step
        return DYN if stride == DYN or step is None else abs(stride * step)


def access(op: Operation, memref: Value, indices: Sequence[Value], store: bool) -> Access:
    """The access of ``op``, seen on the buffer under one ``mem.subview`` (see above)."""
    view = memref.op if isinstance(memref, OpResult) else None
    if not isinstance(view, mem.SubviewOp) or base_buffer(view.source) is not view.source:
        return Access(op, memref, [Term(v) for v in indices], store)
    offsets, _, steps = view.parts()
    drop = view.attributes.get("drop") or ()
    it = iter(indices)
    terms = [Term(None, off) if a in drop else Term(next(it), off, constant_of(st))
             for a, (off, st) in enumerate(zip(offsets, steps, strict=True))]
    return Access(op, view.source, terms, store)


@dataclass
class Band:
    """A perfect loop band (outermost first) and what its body does."""

    loops: list[loop.ForOp]
    accesses: list[Access] = field(default_factory=list)
    legal: bool = True
    _deps: dict[object, frozenset[int]] = field(default_factory=dict)

    @property
    def ivs(self) -> list[Value]:
        return [lp.induction_var for lp in self.loops]

    def outside(self, v: Value) -> bool:
        """True if ``v`` is defined outside the band."""
        outer = self.loops[0]
        if isinstance(v, OpResult):
            return not outer.is_ancestor_of(v.op)
        assert isinstance(v, BlockArgument)
        owner = v.block.parent_op
        return owner is None or not outer.is_ancestor_of(owner)

    def deps(self, v: Value) -> frozenset[int]:
        """The band loops (positions) whose induction variable reaches ``v``."""
        if v in self.ivs:
            return frozenset({self.ivs.index(v)})
        if self.outside(v):
            return frozenset()
        owner = v.op if isinstance(v, OpResult) else v.block.parent_op  # type: ignore
        assert owner is not None
        if isinstance(owner, loop.ForOp) and v is owner.induction_var:
            # an inner loop's counter moves with its bounds only (not with its body)
            return frozenset().union(*(self.deps(b) for b in (owner.lower, owner.upper,
                                                             owner.step)))
        return self._op_deps(owner)

    def _op_deps(self, op: Operation) -> frozenset[int]:
        if op not in self._deps:
            self._deps[op] = frozenset()  # cycles through the op's own block arguments
            found: set[int] = set()
            for inner in op.walk():
                for v in inner.operand_values:
                    found |= self.deps(v)
            self._deps[op] = frozenset(found)
        return self._deps[op]

    def invariant(self, v: Value) -> bool:
        return constant_of(v) is not None or self.outside(v)

    def term_deps(self, t: Term) -> frozenset[int]:
        """The band loops reaching the index or the offset of ``t``."""
        found = frozenset()
        for v in (t.index, t.offset):
            if v is not None:
                found |= self.deps(v)
        return found

    def direct(self, t: Term, k: int) -> bool:
        """True if the buffer index ``t`` is ``iv_k`` (times a non-zero constant step)
        plus or minus a band-invariant value: different iterations of ``k`` at the
        same other indices touch different elements."""
        return self._moves(t, k, self._direct)

    def steps(self, t: Term, k: int) -> bool:
        """Like :meth:`direct`, and also a broadcast ``select(c, iv_k + d, 0)`` with an
        invariant condition (for costs only: a select is not injective)."""
        return self._moves(t, k, self._steps)

    def _moves(self, t: Term, k: int, rule) -> bool:  # noqa: ANN001 - a bound method
        offset_fixed = t.offset is None or self.invariant(t.offset)
        if t.index is not None and not self.invariant(t.index):
            return bool(t.step) and offset_fixed and rule(t.index, k)
        return t.offset is not None and self._direct(t.offset, k)

    def _direct(self, v: Value, k: int) -> bool:
        iv = self.ivs[k]
        if v is iv:
            return True
        if not isinstance(v, OpResult) or not isinstance(v.op, arith.AddOp | arith.SubOp):
            return False
        a, b = v.op.operand_values
        if isinstance(v.op, arith.AddOp) and b is iv:
            a, b = b, a
        return a is iv and self.invariant(b)

    def _steps(self, v: Value, k: int) -> bool:
        if self._direct(v, k):
            return True
        if not isinstance(v, OpResult) or not isinstance(v.op, arith.SelectOp):
            return False
        c, a, b = v.op.operand_values
        sides = [self._direct(a, k), self._direct(b, k)]
        return (self.invariant(c) and any(sides)
                and all(d or self.invariant(x) for d, x in zip(sides, (a, b), strict=True)))

    def direct_loops(self, acc: Access) -> set[int]:
        """The band loops some index of ``acc`` is direct in."""
        return {k for k in range(len(self.loops)) for t in acc.indices if self.direct(t, k)}


def may_alias(a: Value, b: Value) -> bool:
    """Conservative: distinct allocations, and constants, never alias anything else;
    parameters and other buffers of unknown origin may alias each other."""
    ba, bb = base_buffer(a), base_buffer(b)
    if ba is bb:
        return True
    fresh = ("mem.alloc", "mem.constant")
    return not any(isinstance(x, OpResult) and x.op.name in fresh for x in (ba, bb))


def _band_chain(top: loop.ForOp) -> list[loop.ForOp]:
    chain = [top]
    while True:
        ops = chain[-1].body.blocks[0].ops[:-1]
        inner = [o for o in ops if isinstance(o, loop.ForOp)]
        rest = [o for o in ops if not isinstance(o, loop.ForOp)]
        if len(inner) != 1 or any(o.region_list or not _movable(o) for o in rest):
            return chain
        if ops[-1] is not inner[0]:
            return chain  # pure ops after the inner loop: keep it simple
        chain.append(inner[0])


def _movable(op: Operation) -> bool:
    """Ops allowed between a band's loops (sunk into the innermost body when the band is
    reordered): pure ops, and loads (of memory the band never writes: ``find_band``)."""
    return "pure" in op.traits or isinstance(op, mem.LoadOp)


def find_band(top: loop.ForOp) -> Band | None:
    """The band rooted at ``top`` (``None`` if it has fewer than two loops), analysed."""
    loops = _band_chain(top)
    if len(loops) < 2:
        return None
    band = Band(loops)
    band.legal = _loops_ok(band)
    for op in top.walk():
        if op in loops or (op.has_trait("terminator") and op.parent_op in loops):
            continue
        if isinstance(op, mem.AllocOp):
            band.legal &= _private(band, op.result)
        elif isinstance(op, mem.DeallocOp):
            band.legal &= _private(band, op.operand_values[0])
        elif op.name not in BAND_OPS and "pure" not in op.traits:
            band.legal = False
        if isinstance(op, mem.LoadOp) and not _private(band, op.source):
            band.accesses.append(access(op, op.source, op.indices, False))
        elif isinstance(op, mem.StoreOp) and not _private(band, op.dest):
            band.accesses.append(access(op, op.dest, op.indices, True))
    between = [a for a in band.accesses if not a.store and a.op.parent_op in loops[:-1]]
    band.legal &= not any(s.store and may_alias(a.memref, s.memref)
                          for a in between for s in band.accesses)
    return band


def _private(band: Band, v: Value) -> bool:
    """``v`` views a buffer allocated inside the innermost band loop."""
    root = base_buffer(v)
    return isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp) and \
        band.loops[-1].is_ancestor_of(root.op) and band.loops[-1] is not root.op


def _loops_ok(band: Band) -> bool:
    """No carried values, rectangular bounds, constant non-zero steps."""
    for lp in band.loops:
        step = constant_of(lp.step)
        if lp.inits or not isinstance(step, int) or step == 0:
            return False
        if not all(band.invariant(v) for v in (lp.lower, lp.upper, lp.step)):
            return False  # (a constant made inside the band is remade by ``permute``)
    return True


def order_is_legal(band: Band, order: Sequence[int]) -> bool:
    """True if running the band's loops in ``order`` (outermost first, by original
    position) gives exactly the same memory effects (see ``layout``)."""
    if not band.legal:
        return False
    rank = {k: i for i, k in enumerate(order)}
    for s in (a for a in band.accesses if a.store):
        if not band.outside(s.memref):
            return False
        for other in band.accesses:
            if other is not s and may_alias(other.memref, s.memref) and (
                    other.memref is not s.memref or other.indices != s.indices):
                return False
        free = [k for k in range(len(band.loops)) if k not in band.direct_loops(s)]
        if [rank[k] for k in free] != sorted(rank[k] for k in free):
            return False  # points writing one element would run in another order
    return True


def independent(band: Band, k: int) -> bool:
    """True if different iterations of band loop ``k`` never write the same element."""
    return all(k in band.direct_loops(a) for a in band.accesses if a.store)


def moving_stride(band: Band, acc: Access, pos: int) -> int:
    """Elements stepped over along axis ``pos`` of ``acc``'s buffer per unit of the loop
    moving its term: the view's step times the stride when the view's index moves, the
    buffer's stride when the view's offset does (``DYN`` when not static)."""
    term = acc.indices[pos]
    if term.index is not None and not band.invariant(term.index):
        return acc.stride(pos)
    return static_strides(acc.memref.type)[pos]  # type: ignore[arg-type]


def stride_cost(band: Band, k: int) -> int:
    """Bytes stepped over per iteration of loop ``k``, each access's step capped at
    :data:`LINE_BYTES`, summed over the band's accesses."""
    total = 0
    for acc in band.accesses:
        t = acc.memref.type
        assert isinstance(t, MemRefType)
        for pos, term in enumerate(acc.indices):
            stride = moving_stride(band, acc, pos)
            if band.steps(term, k) and stride != DYN:
                total += min(abs(stride) * t.element.itemsize, LINE_BYTES)
            elif k in band.term_deps(term):
                total += LINE_BYTES
    return total
