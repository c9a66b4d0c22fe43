"""``sum-lanes``: the float accumulators of a user loop (``s += e``) summed in the order
``np.sum`` uses, so that a sequential sum written as a loop runs as fast as the whole-array
sum and gives the same result (loop level, CPU only; after ``select-chains``).

A loop such as::

    s = np.float32(0.0)
    for i in range(n):
        d = a[i] - b[i]
        s += d * d

carries ``s`` from each iteration to the next: one dependent addition per element, which
no compiler may reorder without fast-math (numpy's own ``np.sum`` is not sequential
either: it sums pairwise).  This pass gives such an accumulator the accumulator scheme of
``lower_group_reduce`` (the fused ``np.sum``): blocks of 128 iterations, 16 lanes per block
(lane ``k`` takes iterations ``16 i + k``), the lanes combined pairwise, the block sums
absorbed into a compensated (Kahan-Babuska-Neumaier) running sum started at ``s``'s
initial value; a loop at the top of the function whose body only computes (no stores, no
checks), whose length is bounded by array sizes and not statically below ``SPLIT`` is cut
in the same chunks as a long ``np.sum`` and summed over threads, the chunks absorbed in
order.  So for an initial value ``+0.0`` the loop's result has the bits of ``np.sum`` of
the same terms, for any thread count (the lanes start at ``-0.0``, the exact identity of
addition, so a loop from ``s = -0.0`` over negative zeros only keeps ``-0.0`` as Python's
does); its error bound is ``lower_group_reduce``'s, far below the sequential sum's
(docs/math-accuracy.md, "Sums written as loops").  The iterations still run in their
order (the body is cloned into the lane loops, not reordered), so stores, loads and
checks in the body see what they saw before; only the additions into ``s`` regroup.

What is matched: an innermost ``loop.for`` of step 1 (no loop inside; ``loop.if``
allowed) whose every carried value is a float32/float64 scalar ``s`` with exactly one use,
``s + e``, ``e + s`` or ``s - e`` in the body, that addition yielded as ``s``'s next value and used
nowhere else, ``e`` not computed from any carried value.  Loops with a static trip count
below 16 are left alone (too short to pay).  The ``@hybrid`` option ``sum_lanes=False``
(or ``PYASC_DISABLE_PASSES=sum-lanes``) keeps the loop's order, bit-identical to
``target="interpret"``.  float16 accumulators are left alone: each of their steps rounds
to float16, and lanes would change that rounding much more than the order.
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.interrupt_poll import Bounded
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.lower_group_acc import LANES, Acc, compensated_result
from pyasc.ir.passes.lower_group_reduce import SPLIT, Row
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.select_chains_match import depends_on_carried
from pyasc.ir.types import ScalarType, f32, f64

OPTION = "sum_lanes"
"""The ``@hybrid`` option (``Program.options``) that turns the pass off when False."""

SKIP_ATTRIBUTES = ("lanes", "parallel", "register_tile")
"""Loops made by other passes (lane loops, split loops, matmul tiles): not user sums."""


@register_pass
class SumLanes(Pass):
    name = "sum-lanes"
    description = "float accumulators of user loops (s += e) summed in np.sum's lanes and blocks"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        if not ctx.options.get(OPTION, True):
            return
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None:
                adds = match(op)
                if adds is not None:
                    rewrite(op, adds)


def match(lp: loop.ForOp) -> list[Operation] | None:
    """The additions of ``lp``'s carried values (in carried order), or None when the rule
    of the module docstring does not apply."""
    if not lp.iter_args or constant_of(lp.step) != 1 or \
            any(a in lp.attributes for a in SKIP_ATTRIBUTES):
        return None
    count = _static_count(lp)
    if count is not None and count < LANES:
        return None
    body = lp.body.block
    if any(isinstance(inner, loop.ForOp | loop.WhileOp)
           for op in body.ops for inner in op.walk()):
        return None
    yielded = body.ops[-1].operand_values
    adds = [_addition(lp, a, yielded[pos]) for pos, a in enumerate(lp.iter_args)]
    return None if any(add is None for add in adds) else adds  # type: ignore[return-value]


def _static_count(lp: loop.ForOp) -> int | None:
    lo, hi = constant_of(lp.lower), constant_of(lp.upper)
    return hi - lo if isinstance(lo, int) and isinstance(hi, int) else None


def _addition(lp: loop.ForOp, s: Value, nxt: Value) -> Operation | None:
    """The ``s + e`` (or ``s - e``) yielded as ``s``'s next value, when the rule holds
    for ``s``."""
    t = s.type
    if not isinstance(t, ScalarType) or t not in (f32, f64) or len(s.uses) != 1:
        return None
    add = nxt.op if isinstance(nxt, OpResult) else None
    if not isinstance(add, arith.AddOp | arith.SubOp) or add.parent is not lp.body.block or \
            len(nxt.uses) != 1 or add.attributes.get("strict"):
        return None
    lhs, rhs = add.operand_values
    if (lhs is s) == (rhs is s) or (isinstance(add, arith.SubOp) and lhs is not s):
        return None
    e = rhs if lhs is s else lhs
    return None if e.type != t or depends_on_carried(e, lp) else add


def rewrite(lp: loop.ForOp, adds: list[Operation]) -> None:
    """Replace ``lp`` by its iterations in lanes and blocks (module docstring)."""
    block = lp.parent
    first = block.index_of(lp)  # type: ignore[union-attr]
    gen = LoopGen(Builder.before(lp))
    accs = [Acc.float_sum(gen, a.type) for a in lp.iter_args]  # type: ignore[arg-type]
    span = gen.sub(lp.upper, lp.lower)
    static = constant_of(span)
    count = gen.const(max(static, 0)) if isinstance(static, int) else \
        gen.emit(arith.MaxOp.new(span, gen.const(0)))
    state = [v for init in lp.inits for v in (init, gen.const(0.0, init.type))]  # type: ignore[arg-type]

    def terms(idx: list[Value]) -> list[Value]:
        return _terms_at(gen, lp, adds, gen.add(lp.lower, idx[-1]))
    if _splittable(lp, static):
        state = Row(gen, accs, count, terms, shared=False).run_split(state)
    else:
        row = Row(gen, accs, count, terms)
        state = row.run([], state)
        row.release()
    for k, out in enumerate(lp.result_values):
        out.replace_all_uses_with(_result(gen, state[2 * k], state[2 * k + 1]))
    _locate(block.ops[first:block.index_of(lp)], lp)  # type: ignore[union-attr]
    gen.flush_constants_for(lp)
    lp.erase()


def _result(gen: LoopGen, s: Value, c: Value) -> Value:
    """The compensated state's value; ``s`` itself when the compensation ``c`` is zero
    (``s + c`` is then ``s`` but for ``-0.0 + +0.0 = +0.0``: a loop from ``s = -0.0``
    over negative zeros only, or over no terms, is ``-0.0`` in Python, while Neumaier's
    ``(s - t) + b`` leaves ``c = +0.0``)."""
    exact = gen.cmp("eq", c, gen.const(0.0, c.type))  # type: ignore[arg-type]
    return gen.select(exact, s, compensated_result(gen, s, c))


def _locate(ops: list[Operation], lp: loop.ForOp) -> None:
    """The new ops without a location take the loop's (errors, dumps and the Ctrl-C
    polling of ``interrupt-poll`` point at the user's loop); cloned ops keep theirs."""
    for top in ops:
        for op in top.walk():
            if not op.loc.known:
                op.loc = lp.loc


def _terms_at(gen: LoopGen, lp: loop.ForOp, adds: list[Operation], iv: Value) -> list[Value]:
    """``lp``'s body at ``iv`` (every op but the carried additions, in order); the terms
    ``e`` of the additions (``-e`` of ``s - e``: ``s - e`` is ``s + (-e)``, exactly)."""
    mapping: dict[Value, Value] = {lp.induction_var: iv}
    skip = set(adds)
    for op in lp.body.block.ops[:-1]:
        if op not in skip:
            gen.b.insert(op.clone(mapping))
    terms = []
    for s, add in zip(lp.iter_args, adds, strict=True):
        lhs, rhs = add.operand_values
        e = mapping.get(rhs if lhs is s else lhs, rhs if lhs is s else lhs)
        terms.append(gen.emit(arith.NegOp.new(e)) if isinstance(add, arith.SubOp) else e)
    return terms


def _splittable(lp: loop.ForOp, count: int | float | bool | None) -> bool:
    """Summed over threads in ``SPLIT`` chunks, as a long ``np.sum``: a loop not inside
    another loop, whose body only computes (pure ops and loads: any order of its
    iterations does the same), not statically shorter than a chunk, whose trip count is
    bounded by array sizes (``interrupt_poll.Bounded``: the partials buffer, two values
    per chunk, is then small beside the arrays; ``range(n)`` of a scalar ``n`` runs its
    blocks in order, in O(1) memory)."""
    if isinstance(count, int) and count < SPLIT:
        return False
    owner = lp.parent.parent_op if lp.parent is not None else None
    if not isinstance(owner, FuncOp) or not Bounded().trips(lp):
        return False  # a trip count from a scalar (range(n)) could ask any partials buffer
    return all(_plain(op) for op in lp.body.block.ops[:-1])


def _plain(op: Operation) -> bool:
    return not op.region_list and (op.has_trait("pure") or isinstance(op, mem.LoadOp))


__all__ = ["OPTION", "SumLanes", "match", "rewrite"]
