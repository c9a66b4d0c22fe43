"""``layout``: loop order and input copies for strided memory (loop level, after
``lower-to-loops``, before ``memplan``).

Why loop level: strides are properties of memrefs and the order of loop nests, which
only exist after lowering; and user loops (``for i: for j: out[i, j] = ...``) get the
same treatment as lowered tensor ops.  Strided, transposed and negative-stride inputs
are always handled by indexing (``mem.load`` through the view's strides), except for
the copy rule below.  Every decision depends only on the IR (deterministic) and never
changes a result.

**Interchange.**  For each *band* (a perfect nest of ``loop.for`` without carried
values, with rectangular bounds and constant non-zero steps; see ``layout_access``)
whose body only loads, stores and computes (no calls or asserts; allocations only of
buffers private to one point of the band), with accesses through a ``mem.subview``
analysed on the buffer it views (``offset + step * index`` per axis):

* cost of loop ``l`` = the bytes stepped over per iteration of ``l``, summed over every
  load and store of the body: ``|stride| * itemsize`` of each axis indexed by ``iv_l``
  (statically known strides: contiguous types, ``strided<[...]>`` entries), capped at a
  64-byte cache line, which is also the cost of an unknown stride (``?``) or of an index
  depending on ``iv_l`` in another way (so unknown strides never decide an order);
* the innermost loop is the cheapest among the loops that index every store directly
  (when there is one: the inner loop then carries no value through memory, e.g. never
  ``out[j] += x[i, j]`` with ``i`` inside, which could not vectorize without
  reassociating), ties going to the later loop; the other loops follow by decreasing
  cost, ties going first to a loop marked ``parallel`` (the split loop of a generated
  nest), then keeping the original order; so the inner loop runs over the unit-stride
  axis whenever that is possible;
* it is applied only if *exact*: every store's memref is defined outside the band, and
  any other access to memory that may alias it (same base; parameters may alias each
  other; distinct allocations and constants never alias) is the same memref at the
  same index values; and, for each store, the band loops *not* indexing it directly
  keep their relative order (two iterations writing one element, e.g. ``out[j] +=
  x[i, j]``, still run in the original order, so float sums are not reassociated);
* ``parallel = true`` goes to the new outermost loop when some loop of the band had
  it (a generated nest inside user loops: ``for i: for j: out[:, :, i, j] = ...``) and
  the new outermost loop is independent (every store indexes it directly); if it is
  not, the reordering that only moves the chosen innermost loop is tried, then none.

Pure ops between the band's loops (index arithmetic) are moved into the innermost body
when the band is reordered.

**Tiling** (``layout_tile``), when no order suits every access: after interchange (and
after the copy rule), the two innermost loops ``a > b`` of a band are tiled by 64 x 16
(tile loops outside, ``min``-clamped point loops inside) when some access has unit
stride along ``b``, some access indexed directly by ``a`` steps a non-unit or unknown
stride along ``b`` (``x.T + y``, a transposing copy, an F-ordered input), both loops have
unit steps and run-time or at least two tiles of iterations, and exchanging ``a`` and ``b`` would
be exact by the rule above (then the tiled order is exact too: two iterations writing
one element differ in at most one of ``a``, ``b``, and tiles visit each of them in
increasing order).  ``parallel`` moves to the outer tile loop.

**Copy rule** (``layout_copy``): a read-only input (a parameter, or a view of one made
in the entry block) is copied ONCE into a fresh contiguous buffer, and every load of it
reads the copy, when all of the following hold — otherwise it is read in place:

1. the function writes no memory except buffers it allocates, and calls nothing (so
   the copy cannot go stale);
2. after interchange, some load of it runs its innermost loop over a non-unit or
   unknown stride;
3. it is read in two or more passes: loads of it sit in two or more different
   innermost loops, or a load sits in a loop none of whose iterations changes the
   loaded element (each such load counts twice);
4. it has at least :data:`~pyasc.ir.passes.layout_copy.COPY_MIN_ELEMENTS` elements, or
   a dynamic size.

The copy reads the input once with its strides; the passes then read unit strides.
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.layout_access import (
    Band,
    find_band,
    independent,
    order_is_legal,
    stride_cost,
)
from pyasc.ir.passes.layout_copy import copy_strided_inputs
from pyasc.ir.passes.layout_tile import tile, wants_tiles
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.passes.manager import Pass, PassContext, register_pass


def choose_order(band: Band) -> list[int] | None:
    """The new loop order of ``band`` (by original position, outermost first), or
    ``None`` to leave it alone."""
    n = len(band.loops)
    costs = [stride_cost(band, k) for k in range(n)]
    # the innermost loop indexes every store when one can: no chain through memory
    allowed = [k for k in range(n) if independent(band, k)] or list(range(n))
    inner = min(allowed, key=lambda k: (costs[k], -k))
    rest = [k for k in range(n) if k != inner]
    # ties: a loop marked parallel (the split loop of a generated nest) goes first,
    # then the original order (sorted is stable)
    by_cost = sorted(rest, key=lambda k: (-costs[k], not _parallel(band.loops[k]))) + [inner]
    keep_parallel = _any_parallel(band)
    for order in (by_cost, rest + [inner]):
        if order == list(range(n)):
            return None
        if keep_parallel and not independent(band, order[0]):
            continue
        if order_is_legal(band, order):
            return order
    return None


def _parallel(lp: loop.ForOp) -> bool:
    return bool(lp.attributes.get("parallel"))


def _any_parallel(band: Band) -> bool:
    return any(_parallel(lp) for lp in band.loops)


def _sink_pure_ops(band: Band) -> None:
    """Move the ops between the band's loops (pure ops, loads of memory the band does not
    write) to the top of the innermost body."""
    inner = band.loops[-1].body.blocks[0]
    at = 0
    for lp in band.loops[:-1]:
        block = lp.body.blocks[0]
        for op in list(block.ops):
            if op in band.loops or op.has_trait("terminator"):
                continue
            block.detach(op)
            inner.insert(at, op)
            at += 1


def _hoist_bounds(band: Band) -> None:
    """Loop bounds that are constants made inside the band, remade before it (bounds
    move between the loops, and the ops between them move to the innermost body)."""
    b = Builder.before(band.loops[0])
    for lp in band.loops:
        for pos, v in enumerate((lp.lower, lp.upper, lp.step)):
            if not band.outside(v):
                c = b.insert(arith.ConstantOp.new(constant_of(v), v.type)).result
                lp.set_operand(pos, c)


def permute(band: Band, order: list[int]) -> None:
    """Reorder the band's loops: structural loop ``j`` runs what loop ``order[j]`` ran."""
    _hoist_bounds(band)
    _sink_pure_ops(band)
    loops = band.loops
    parallel = _any_parallel(band) and independent(band, order[0])
    bounds = [(lp.lower, lp.upper, lp.step) for lp in loops]
    ivs = [lp.induction_var for lp in loops]
    uses = [list(iv.uses) for iv in ivs]
    names = [iv.name_hint for iv in ivs]
    for j, k in enumerate(order):
        lp = loops[j]
        for pos, v in enumerate(bounds[k]):
            lp.set_operand(pos, v)
        new_iv = lp.induction_var
        new_iv.name_hint = names[k]
        for user, idx in uses[k]:
            user.set_operand(idx, new_iv)
        lp.attributes.pop("parallel", None)
    if parallel:
        loops[0].attributes["parallel"] = True


def bands(fn: FuncOp) -> list[Band]:
    """The bands of ``fn``, outermost first (a loop belongs to at most one band)."""
    found: list[Band] = []
    seen: set[Value] = set()
    for op in fn.walk():
        if isinstance(op, loop.ForOp) and op.induction_var not in seen:
            band = find_band(op)
            if band is not None:
                seen.update(band.ivs)
                found.append(band)
    return found


def interchange_function(fn: FuncOp) -> int:
    """Reorder every band of ``fn`` that benefits; returns how many were reordered."""
    done = 0
    for band in bands(fn):
        order = choose_order(band)
        if order is not None:
            permute(band, order)
            done += 1
    return done


def tile_function(fn: FuncOp) -> int:
    """Tile every band of ``fn`` whose accesses conflict; returns how many were tiled."""
    chosen = [band for band in bands(fn) if wants_tiles(band)]
    for band in chosen:
        tile(band)
    return len(chosen)


@register_pass
class Layout(Pass):
    """Loop interchange towards unit strides, copies of re-read strided inputs, tiles
    where strides conflict."""

    name = "layout"
    description = ("run inner loops over unit-stride axes; copy re-read strided inputs "
                   "once; tile loops whose accesses need different orders")

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            interchange_function(fn)
            copy_strided_inputs(fn)
            tile_function(fn)
