"""Tiling for ``layout``: when no loop order gives every access of a band unit stride
(``x.T + y``, a transposing copy, an F-ordered input), the two innermost loops of the
band run tile by tile so the strided accesses reuse each cache line they bring in.
Rule and legality are in ``layout``'s module docstring."""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.passes.layout_access import Band, moving_stride, order_is_legal
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.types import DYN, index

TILE_OUTER = 64
TILE_INNER = 16
"""Tile size in iterations of the outer and inner loop of the pair.  The strided access
touches ``TILE_INNER`` cache lines (16 rows of an F-ordered or transposed array) that
stay in L1 while the outer loop walks 16 elements along each of them (one 64-byte line
of f32), even when the stride is a multiple of 4 KiB (all rows in one cache set); the
unit-stride accesses get 16-element runs, two AVX vectors.  Measured on 1024² to 2048²
f32 transposes: 64 x 16 beat 16 x 16, 32 x 32, 16 x 64 and 8 x 256."""


def _unit_in(band: Band, k: int) -> list[bool]:
    """Per access: is loop ``k`` its unit-stride loop (direct at a stride-1 axis)?"""
    return [any(band.steps(t, k) and _unit(moving_stride(band, acc, p))
                for p, t in enumerate(acc.indices)) for acc in band.accesses]


def _strided_in(band: Band, k: int) -> list[bool]:
    """Per access: does loop ``k`` step it over a non-unit or unknown stride?"""
    return [any(band.steps(t, k) and not _unit(moving_stride(band, acc, p))
                for p, t in enumerate(acc.indices)) for acc in band.accesses]


def _unit(stride: int) -> bool:
    return stride != DYN and abs(stride) == 1


def _long(lp: loop.ForOp, size: int) -> bool:
    """Unit step, and at least two tiles of iterations (or a run-time trip count)."""
    lo, hi = constant_of(lp.lower), constant_of(lp.upper)
    if constant_of(lp.step) != 1:
        return False
    return not (isinstance(lo, int) and isinstance(hi, int)) or hi - lo >= 2 * size


def wants_tiles(band: Band) -> bool:
    """True if the band's two innermost loops should be tiled."""
    a, b = len(band.loops) - 2, len(band.loops) - 1
    if not (_long(band.loops[a], TILE_OUTER) and _long(band.loops[b], TILE_INNER)):
        return False
    inner_unit, inner_strided = _unit_in(band, b), _strided_in(band, b)
    direct_a = [any(band.steps(v, a) for v in acc.indices) for acc in band.accesses]
    conflict = any(s and d for s, d in zip(inner_strided, direct_a, strict=True))
    swapped = list(range(len(band.loops) - 2)) + [b, a]
    return any(inner_unit) and conflict and order_is_legal(band, swapped)


def tile(band: Band) -> None:
    """Tile the band's two innermost loops (both must have unit steps)."""
    la, lb = band.loops[-2], band.loops[-1]
    b = Builder.before(la)
    size = b.insert(arith.ConstantOp.new(TILE_OUTER, index)).result
    size_b = b.insert(arith.ConstantOp.new(TILE_INNER, index)).result
    outer = loop.ForOp.empty(la.lower, la.upper, size, iv_name=_hint(la.induction_var))
    b.insert(outer)
    if la.attributes.pop("parallel", None):
        outer.attributes["parallel"] = True
    la.parent.detach(la)  # type: ignore[union-attr]
    with b.at(outer.body.blocks[0]):
        inner = b.insert(loop.ForOp.empty(lb.lower, lb.upper, size_b,
                                          iv_name=_hint(lb.induction_var)))
        b.insert(loop.YieldOp([]))
    with b.at(inner.body.blocks[0]):
        a_end = _tile_end(b, outer.induction_var, size, la.upper)
        b_end = _tile_end(b, inner.induction_var, size_b, lb.upper)
        b.insert(la)
        b.insert(loop.YieldOp([]))
    la.set_operand(0, outer.induction_var)
    la.set_operand(1, a_end)
    lb.set_operand(0, inner.induction_var)
    lb.set_operand(1, b_end)


def _tile_end(b: Builder, start: Value, size: Value, upper: Value) -> Value:
    end = b.insert(arith.AddOp.new(start, size)).result
    return b.insert(arith.MinOp.new(end, upper)).result


def _hint(iv: Value) -> str:
    return (iv.name_hint or "i") + "_t"
