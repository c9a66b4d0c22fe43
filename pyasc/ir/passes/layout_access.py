"""Access analysis for ``layout``: loop bands, how loads/stores index memory, aliasing,
the stride cost of a loop order and when a reordering is exact.

A *band* is a perfect nest of ``loop.for`` ops ``L0 > L1 > ... > Lk-1`` without carried
values: each ``Li`` (``i < k-1``) holds only pure ops and ``Li+1`` (then its yield).  An
index operand is *direct* in band loop ``l`` when it is ``iv_l``, ``iv_l + c``, ``c +
iv_l`` or ``iv_l - c`` with ``c`` a constant or defined outside the band; it *depends*
on ``l`` when ``iv_l`` reaches it otherwise.  The legality and cost rules are stated in
``layout``'s module docstring.
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


@dataclass
class Access:
    """One ``mem.load``/``mem.store``: the memref, its index operands, and the kind."""

    op: Operation
    memref: Value
    indices: list[Value]
    store: bool


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

    def direct(self, v: Value, k: int) -> bool:
        """True if index ``v`` is ``iv_k`` plus or minus a band-invariant value."""
        iv = self.ivs[k]
        if v is iv:
            return True
        if not isinstance(v, OpResult) or not isinstance(v.op, arith.AddOp | arith.SubOp):
            return False
        a, b = v.op.operand_values
        if isinstance(v.op, arith.AddOp) and b is iv:
            a, b = b, a
        return a is iv and self.invariant(b)

    def steps(self, v: Value, k: int) -> bool:
        """True if index ``v`` moves with ``iv_k`` one for one: direct, or a broadcast
        ``select(c, iv_k + d, 0)`` with an invariant condition (for costs only: a select
        is not injective)."""
        if self.direct(v, k):
            return True
        if not isinstance(v, OpResult) or not isinstance(v.op, arith.SelectOp):
            return False
        c, a, b = v.op.operand_values
        sides = [self.direct(a, k), self.direct(b, k)]
        return (self.invariant(c) and any(sides)
                and all(d or self.invariant(x) for d, x in zip(sides, (a, b), strict=True)))

    def direct_loops(self, acc: Access) -> set[int]:
        """The band loops some index of ``acc`` is direct in."""
        return {k for k in range(len(self.loops)) for v in acc.indices if self.direct(v, k)}


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
        if len(inner) != 1 or any(o.region_list or "pure" not in o.traits for o in rest):
            return chain
        if ops[-1] is not inner[0]:
            return chain  # pure ops after the inner loop: keep it simple
        chain.append(inner[0])


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
        if op.name not in BAND_OPS and "pure" not in op.traits:
            band.legal = False
        if isinstance(op, mem.LoadOp):
            band.accesses.append(Access(op, op.source, op.indices, False))
        elif isinstance(op, mem.StoreOp):
            band.accesses.append(Access(op, op.dest, op.indices, True))
    return band


def _loops_ok(band: Band) -> bool:
    """No carried values, rectangular bounds, constant non-zero steps."""
    for lp in band.loops:
        step = constant_of(lp.step)
        if lp.inits or not isinstance(step, int) or step == 0:
            return False
        if not all(band.outside(v) for v in (lp.lower, lp.upper, lp.step)):
            return False
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


def stride_cost(band: Band, k: int) -> int:
    """Bytes stepped over per iteration of loop ``k``, each access's step capped at
    :data:`LINE_BYTES`, summed over the band's accesses."""
    total = 0
    for acc in band.accesses:
        t = acc.memref.type
        assert isinstance(t, MemRefType)
        strides = static_strides(t)
        for pos, v in enumerate(acc.indices):
            if band.steps(v, k) and strides[pos] != DYN:
                total += min(abs(strides[pos]) * t.element.itemsize, LINE_BYTES)
            elif k in band.deps(v):
                total += LINE_BYTES
    return total
