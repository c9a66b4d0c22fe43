"""``distribute-reductions``: an innermost loop that computes an expensive term and adds
it to a scalar accumulator is split in two, the term computed for every iteration first
(a loop with no carried value, which LLVM vectorizes) and the accumulation after it, in
the same order (loop level, CPU only; after ``layout``, before ``memplan``).

A softmax written with scalar loops::

    for j in range(m):
        e = np.exp(x[i, j] - mx)     # ~25 ops once expand-math has run
        out[i, j] = e
        s += e

is one loop whose additions form a dependent chain: LLVM cannot vectorize it without
reordering the sum, so the whole exponential runs one element at a time (5x slower
than the same loop without ``s``).  It becomes::

    for j in range(m):
        out[i, j] = np.exp(x[i, j] - mx)      # vectorized
    for j in range(m):
        s += out[i, j]                         # the same chain, same order

The rule, for a ``loop.for`` ``L`` with no loop inside and carried values: each carried
value ``a`` has one use, a region-free pure op ``r = a op e`` (or ``e op a``) whose
result is only yielded back at ``a``'s position; ``e`` does not depend on any carried
value.  Then moving all the other ops' iterations before all the ``r``\\ s' changes
nothing (the ``r``\\ s touch no memory and nothing else reads them), so the result is
bit-identical.  It pays only when the terms cost more than storing and re-reading them
(a store and a load per term): at least :data:`MIN_TERM_OPS` ops per carried value
compute them (a squared difference, 4 ops, is left alone: its chain, not its
arithmetic, is the bound).  The bound is per term, not over all of them: a loop of many
cheap terms already runs its chains side by side, as the ``MR x NR`` accumulators of
the matmul's micro-kernel stepping ``acc + a * b`` (integers, ``matmul_fma=False``) do;
counted together, their 256 products passed the bound, and the split (256 buffers of
products, then 256 sums) made a 65 x 65 int32 product 12x the LLVM IR and 46 s of
compile time, and no faster.  Each term is re-read where ``L``
already stores it (``out[i, j] = e``: the only write in ``L`` to a fresh buffer, at an
index that is ``L``'s counter on one axis and invariant on the others), else from a
fresh buffer of the trip count (``step`` 1), freed after the second loop.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.dce import drop_unused_carried
from pyasc.ir.passes.invariance import inside
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.types import DYN, MemRefType, index

MIN_TERM_OPS = 12
"""Ops computing the terms (loads and pure ops of the loop body), per carried value,
for the split to pay."""


@register_pass
class DistributeReductions(Pass):
    name = "distribute-reductions"
    description = "expensive terms of a sequential scalar reduction computed in a loop of their own"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None:
                found = match(op)
                if found is not None:
                    distribute(op, found)


def match(lp: loop.ForOp) -> list[Operation] | None:
    """The reduction ops ``r`` of ``lp`` (one per carried value), or None when the rule
    of the module docstring does not apply."""
    if not lp.iter_args or "lanes" in lp.attributes or \
            any(isinstance(o, loop.ForOp | loop.WhileOp) for o in lp.walk() if o is not lp):
        return None
    body = lp.body.block
    yielded = body.ops[-1].operand_values
    reds = []
    for k, acc in enumerate(lp.iter_args):
        uses = list(acc.uses)
        if len(uses) != 1:
            return None
        red = uses[0][0]
        if red.parent is not body or red.region_list or not red.has_trait("pure") or \
                len(red.operand_values) != 2 or yielded[k] is not red.result or \
                len(red.result.uses) != 1:
            return None
        reds.append(red)
    if any(_depends_on_carried(_term(r, lp), lp, set()) for r in reds):
        return None
    if constant_of(lp.step) != 1 and any(_stored_at(_term(r, lp), lp) is None for r in reds):
        return None  # a fresh buffer of the terms is indexed by iv - lower
    cone: set[Operation] = set()
    for r in reds:
        _collect(_term(r, lp), lp, cone)
    return reds if len(cone) >= MIN_TERM_OPS * len(reds) else None


def _term(red: Operation, lp: loop.ForOp) -> Value:
    a, b = red.operand_values
    return b if a in lp.iter_args else a


def _depends_on_carried(v: Value, lp: loop.ForOp, seen: set[Value]) -> bool:
    if v in lp.iter_args:
        return True
    if v in seen or not isinstance(v, OpResult) or not inside(lp, v):
        return False
    seen.add(v)
    return any(_depends_on_carried(o, lp, seen) for inner in v.op.walk()
               for o in inner.operand_values)


def _collect(v: Value, lp: loop.ForOp, cone: set[Operation]) -> None:
    """The ops of ``lp`` computing ``v``."""
    if not isinstance(v, OpResult) or not inside(lp, v) or v.op in cone:
        return
    cone.add(v.op)
    for inner in v.op.walk():
        for o in inner.operand_values:
            _collect(o, lp, cone)


def distribute(lp: loop.ForOp, reds: list[Operation]) -> None:
    """Split ``lp`` (``match`` found ``reds``) into the terms loop and the sums loop."""
    block = lp.parent
    sources = [_stored_at(_term(r, lp), lp) or _temp(lp, _term(r, lp)) for r in reds]
    sums = loop.ForOp.empty(lp.lower, lp.upper, lp.step, list(lp.inits),
                            iv_name=lp.induction_var.name_hint, loc=lp.loc)
    iv = sums.induction_var
    mapping: dict[Value, Value] = {lp.induction_var: iv}
    out = []
    for k, (red, (buf, idx, offset)) in enumerate(zip(reds, sources, strict=True)):
        inner = sums.body.block
        where = idx
        if offset is not None:
            pos = inner.append(arith.SubOp.new(iv, offset, loc=lp.loc)).result
            where = [pos]
        where = [mapping.get(v, v) for v in where]
        term = inner.append(mem.LoadOp([buf, *where], [_term(red, lp).type], loc=red.loc))
        acc = sums.iter_args[k]
        operands = [acc if v in lp.iter_args else term.result for v in red.operand_values]
        new = red.clone({})
        for i, v in enumerate(operands):
            new.set_operand(i, v)
        out.append(inner.append(new).result)
    sums.body.block.append(loop.YieldOp(out, loc=lp.loc))
    block.insert(block.index_of(lp) + 1, sums)
    yield_op = lp.body.block.ops[-1]
    for k, red in enumerate(reds):
        yield_op.set_operand(k, lp.iter_args[k])
        red.erase()
        lp.outputs[k].replace_all_uses_with(sums.outputs[k])
    drop_unused_carried(lp)


def _stored_at(term: Value, lp: loop.ForOp) -> tuple[Value, list[Value], None] | None:
    """``(buf, indices, None)`` where ``lp`` already stores ``term`` once per iteration,
    at an element no other iteration writes, in a fresh buffer nothing else in ``lp``
    writes."""
    body = lp.body.block
    for user, _ in term.uses:
        if not isinstance(user, mem.StoreOp) or user.parent is not body or \
                user.operand_values[0] is not term:
            continue
        buf, idx = user.dest, list(user.operand_values[2:])
        if not (isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp)):
            continue
        writers = [o for o in lp.walk() if o is not lp and o.has_trait("writes")]
        if writers != [user]:
            continue
        if sum(v is lp.induction_var for v in idx) == 1 and \
                all(v is lp.induction_var or not inside(lp, v) for v in idx):
            return buf, idx, None
    return None


def _temp(lp: loop.ForOp, term: Value) -> tuple[Value, list[Value], Value]:
    """A fresh buffer of ``lp``'s trip count (step 1), the term stored at ``iv - lower``
    in ``lp``; freed after the sums loop."""
    block, at = lp.parent, lp.parent.index_of(lp)
    loc = lp.loc
    zero = block.insert(at, arith.ConstantOp.new(0, index, loc=loc)).result
    span = block.insert(at + 1, arith.SubOp.new(lp.upper, lp.lower, loc=loc)).result
    size = block.insert(at + 2, arith.MaxOp.new(span, zero, loc=loc)).result
    buf = block.insert(at + 3, mem.AllocOp([size], [MemRefType((DYN,), term.type)],
                                           loc=loc)).result
    buf.name_hint = "terms"
    body = lp.body.block
    end = len(body.ops) - 1
    pos = body.insert(end, arith.SubOp.new(lp.induction_var, lp.lower, loc=loc)).result
    body.insert(end + 1, mem.StoreOp([term, buf, pos], [], loc=loc))
    block.insert(block.index_of(lp) + 1, mem.DeallocOp([buf], loc=loc))
    return buf, [pos], lp.lower


__all__ = ["MIN_TERM_OPS", "DistributeReductions", "distribute", "match"]
