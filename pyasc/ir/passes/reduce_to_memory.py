"""``reduce-to-memory``: a scalar accumulator stored once per iteration of a loop becomes
an accumulation in the stored element, so that ``layout`` can interchange the loops
(loop level, before ``layout``; only the CPU backend runs it).

A direct convolution written with a scalar accumulator::

    for xx in range(W):
        acc = 0.0
        for ci in range(C):
            for di in range(R):
                acc += x[ci, y + di, xx] * w[o, ci, di]
        out[o, y, xx] = acc

carries ``acc`` through the reduction loops, so the nest is no perfect band and the
inner loop is a chain of dependent scalar additions.  It is rewritten into::

    for xx in range(W):
        out[o, y, xx] = 0.0                      # the initial value, stored first
    for xx in range(W):
        for ci in range(C):
            for di in range(R):
                out[o, y, xx] = out[o, y, xx] + x[ci, y + di, xx] * w[o, ci, di]

a perfect band in which ``layout`` puts the unit-stride ``xx`` innermost (it keeps the
order of the loops that do not index the store, so each element still adds its terms in
the original order: the result is bit-identical) and LLVM vectorizes across outputs.

The rewrite applies to a ``loop.for`` ``L`` without carried values whose body holds,
besides pure region-free ops and loads, exactly a loop ``R`` carrying one value and the
``mem.store`` of ``R``'s result (its only use) at an index that contains ``L``'s
induction variable (so iterations of ``L`` write distinct elements: storing every
initial value first changes nothing), with indices defined before ``R``.  ``R`` must be
a chain of loops each carrying the value straight into the next, the innermost adding
one term to it (``acc + e`` or ``e + acc``, ``e`` not depending on ``acc``), their
bodies otherwise pure ops and loads.  The stored buffer is a ``mem.alloc`` of the
function (a parameter may alias an input), and nothing in ``L`` loads from it.

The loop ``L`` runs at most ``output_accumulators.CHUNK`` iterations, a static count:
a longer one (a FIR filter over 4M samples) would stream ``out`` through memory once
per window step, so ``output-accumulators`` takes it, in chunks.  A window LLVM
unrolls whole (static trip counts, little work: ``loop_cost.unrolled_whole``) is left
alone: unrolled, ``L`` is the innermost loop and
LLVM vectorizes it with the accumulator in a register, faster than in memory (a 15-tap
FIR over 1M outputs: 0.53 ms against 1.7 ms, the output streamed 15 times).
"""

from __future__ import annotations

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.dce import drop_unused_carried
from pyasc.ir.passes.loop_cost import unrolled_whole
from pyasc.ir.passes.loopgen import constant_of
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.output_accumulators import CHUNK


@register_pass
class ReduceToMemory(Pass):
    name = "reduce-to-memory"
    description = "scalar accumulators stored once per iteration -> accumulation in memory"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None:
                found = _match(op)
                if found is not None:
                    _rewrite(op, *found)


def _root(buf: Value) -> Value:
    while isinstance(buf, OpResult) and buf.op.has_trait("view"):
        buf = buf.op.operand_values[0]
    return buf


def _match(lp: loop.ForOp) -> tuple[loop.ForOp, mem.StoreOp, list[loop.ForOp],
                                     arith.AddOp] | None:
    """``(R, store, chain, add)`` if ``lp`` has the shape of the module docstring."""
    if lp.inits or not _short(lp):
        return None
    body = lp.body.block.ops[:-1]
    stores = [o for o in body if isinstance(o, mem.StoreOp)]
    reds = [o for o in body if isinstance(o, loop.ForOp)]
    if len(stores) != 1 or len(reds) != 1:
        return None
    store, red = stores[0], reds[0]
    root = _root(store.dest)
    if not (isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp)):
        return None
    if len(red.inits) != 1 or store.value is not red.outputs[0] or \
            len(red.outputs[0].uses) != 1 or lp.induction_var not in store.indices:
        return None
    pos = body.index(red)
    later = set(body[pos:])
    if any(_defined_by(v, later) for v in (store.dest, *store.indices)):
        return None
    if not all(o in (store, red) or _harmless(o, root) for o in body):
        return None
    found = _chain(red, root)
    if found is None or unrolled_whole(red):
        return None  # a small static window: LLVM keeps its accumulator in a register
    return red, store, found[0], found[1]


def _short(lp: loop.ForOp) -> bool:
    """At most ``output_accumulators.CHUNK`` iterations, a static count: a longer loop
    would stream its outputs through memory once per window step;
    ``output-accumulators`` takes it, in chunks whose accumulators stay in cache."""
    lo, hi = constant_of(lp.lower), constant_of(lp.upper)
    return isinstance(lo, int) and isinstance(hi, int) and hi - lo <= CHUNK


def _defined_by(v: Value, ops: set[Operation]) -> bool:
    return isinstance(v, OpResult) and v.op in ops


def _harmless(op: Operation, root: Value) -> bool:
    """A region-free op that writes nothing and reads nothing of ``root``."""
    if op.region_list:
        return False
    if isinstance(op, mem.LoadOp):
        return _root(op.source) is not root
    return op.has_trait("pure")


def _chain(red: loop.ForOp, root: Value) -> tuple[list[loop.ForOp], arith.AddOp] | None:
    """The loops carrying the accumulator into one another and the innermost addition."""
    chain = [red]
    while True:
        lp = chain[-1]
        acc, ops = lp.iter_args[0], lp.body.block.ops
        yielded = ops[-1].operand_values
        if len(acc.uses) != 1 or len(yielded) != 1:
            return None
        user = next(iter(acc.uses))[0]
        if isinstance(user, loop.ForOp) and user.parent is lp.body.block and \
                user.inits == [acc] and yielded[0] is user.outputs[0] and \
                len(user.outputs[0].uses) == 1:
            if not all(o is user or _harmless(o, root) for o in ops[:-1]):
                return None
            chain.append(user)
            continue
        if isinstance(user, arith.AddOp) and yielded[0] is user.result and \
                user.parent is lp.body.block and len(user.result.uses) == 1 and \
                all(o is user or _harmless(o, root) for o in ops[:-1]):
            return chain, user
        return None


def _rewrite(lp: loop.ForOp, red: loop.ForOp, store: mem.StoreOp, chain: list[loop.ForOp],
             add: arith.AddOp) -> None:
    block = lp.body.block
    dest, idx, init = store.dest, list(store.indices), red.inits[0]
    first = mem.StoreOp([init, dest, *idx], [], loc=store.loc)
    block.insert(block.index_of(red), first)
    inner = add.parent
    at = inner.index_of(add)
    old = inner.insert(at, mem.LoadOp([dest, *idx], [add.result.type], loc=store.loc))
    acc_pos = 0 if add.operand_values[0] is chain[-1].iter_args[0] else 1
    add.set_operand(acc_pos, old.result)
    inner.insert(at + 2, mem.StoreOp([add.result, dest, *idx], [], loc=store.loc))
    inner.terminator.set_operand(0, chain[-1].iter_args[0])
    store.erase()
    for lpk in chain:  # every carried value now only passes ``init`` through
        lpk.iter_args[0].replace_all_uses_with(init)
    for lpk in reversed(chain):
        lpk.outputs[0].replace_all_uses_with(init)
        drop_unused_carried(lpk)
    _split_first_stores(lp, first)


def _split_first_stores(lp: loop.ForOp, first: mem.StoreOp) -> None:
    """Move the initial stores into a loop of their own before ``lp`` (loop fission:
    iterations write distinct elements, and the accumulations read no other)."""
    pre = loop.ForOp.empty(lp.lower, lp.upper, lp.step, iv_name=lp.induction_var.name_hint,
                           loc=lp.loc)
    pre.attributes = {k: v for k, v in lp.attributes.items() if k == "parallel"}
    mapping: dict[Value, Value] = {lp.induction_var: pre.induction_var}
    target = pre.body.block
    for op in lp.body.block.ops:
        if op is first:
            target.append(op.clone(mapping))
            break
        if not op.region_list and (op.has_trait("pure") or isinstance(op, mem.LoadOp)):
            target.append(op.clone(mapping))
    target.append(loop.YieldOp([], loc=lp.loc))
    lp.parent.insert(lp.parent.index_of(lp), pre)
    first.erase()
