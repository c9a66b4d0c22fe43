"""``output-accumulators``: a window reduction computed per output element gets one
accumulator per output element in memory, so that ``layout`` runs the output loop
innermost and LLVM vectorizes across outputs (loop level, CPU only; after
``reduce-to-memory``, before ``layout``).

A bilateral filter written with scalar loops::

    for j in range(5, w - 5):
        c = img[i, j]
        num = 0.0; den = 0.0
        for di in range(11):
            for dj in range(11):
                ...                                   # ~50 ops: exp of (c - v)**2
                num += v * wgt
                den += wgt
        result[i, j] = num / den

carries ``num`` and ``den`` through the window loops: the only loop LLVM can vectorize
is ``dj`` (11 iterations: 8 lanes and 3 masked ones, then a chain of dependent adds).
``reduce-to-memory`` does not apply (the stored value is not the accumulator).  The loop
is split into three loops over a chunk of at most :data:`CHUNK` outputs::

    for j in chunk: nacc[j - j0] = 0.0; dacc[j - j0] = 0.0
    for j in chunk:
        for di in range(11):
            for dj in range(11):
                ...; nacc[j - j0] += v * wgt; dacc[j - j0] += wgt
    for j in chunk: result[i, j] = nacc[j - j0] / dacc[j - j0]

and ``layout`` puts ``j`` innermost in the middle one (the only loop indexing every
store), keeping ``di`` before ``dj``: each output adds its terms in the original order,
so the result is bit-identical.  The chunk keeps the accumulators in the L1 cache
however long the output loop is (they are a fixed-size buffer, on the stack).

The rule, for a ``loop.for`` ``L`` (step 1, no carried values):

* its body is region-free *pre* ops (pure ops, loads), one loop ``R`` carrying values,
  and region-free *post* ops (pure ops, loads, stores);
* ``R`` is a chain of loops each carrying the values straight into the next (between
  them only pure ops and loads), the innermost computing the values it yields with
  region-free pure ops and loads (``num += v * wgt``, ``hi = max(hi, v)``, any update):
  it then reads its carried values from the accumulators at the top of its body and
  writes what it yields back at the bottom, the same ops in the same order;
* nothing in ``pre`` or ``R`` reads a buffer ``post`` stores to (a parameter stored to
  may alias any other parameter), so running every ``pre``/``R`` before every ``post``
  reads the same values;
* some load of ``R`` indexes a unit-stride last axis with ``L``'s counter (``j + dj``)
  and none indexes another axis with it: vectorized across ``j``, the loads stay
  contiguous;
* ``R`` is no window LLVM unrolls whole (``loop_cost.unrolled_whole``): unrolled, the output
  loop is already innermost with its accumulators in registers, which is faster than
  in memory.

Pre ops are recomputed in each of the three loops where needed (pure ops and loads of
memory nothing in ``L`` writes).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.affine import affine_of
from pyasc.ir.passes.dce import drop_unused_carried
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.loop_cost import unrolled_whole
from pyasc.ir.passes.loopgen import constant_of, static_strides
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.types import MemRefType, i1, index

CHUNK = 256
"""Outputs per chunk: the accumulators of a chunk (a few KB) stay in the L1 cache."""

@dataclass
class Match:
    """What ``_match`` found in the output loop."""

    red: loop.ForOp
    chain: list[loop.ForOp]
    pre: list[Operation]
    post: list[Operation]


@register_pass
class OutputAccumulators(Pass):
    name = "output-accumulators"
    description = ("window reductions per output element accumulated in memory per output, "
                   "so the output loop goes innermost")

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for op in list(module.walk()):
            if isinstance(op, loop.ForOp) and op.parent is not None:
                found = _match(op)
                if found is not None and _profitable(op, found):
                    _rewrite(op, found)


def _match(lp: loop.ForOp) -> Match | None:
    if lp.inits or constant_of(lp.step) != 1:
        return None
    body = lp.body.block.ops[:-1]
    reds = [o for o in body if o.region_list]
    if len(reds) != 1 or not isinstance(reds[0], loop.ForOp) or not reds[0].inits:
        return None
    red = reds[0]
    if _static_trips(lp) == 0 or any(v.type in (index, i1) for v in red.outputs):
        return None  # no iteration; counters and flags: no buffer of them
    pos = body.index(red)
    pre, post = body[:pos], body[pos + 1:]
    if not all(_reads_only(o) for o in pre) or \
            not all(_reads_only(o) or isinstance(o, mem.StoreOp) for o in post):
        return None
    chain = _chain(red)
    if chain is None:
        return None
    stored = {base_buffer(o.dest) for o in post if isinstance(o, mem.StoreOp)}
    loads = [o for o in (*pre, *red.walk()) if isinstance(o, mem.LoadOp)]
    if any(_may_alias(base_buffer(o.source), stored) for o in loads):
        return None
    return Match(red, chain, pre, post)


def _reads_only(op: Operation) -> bool:
    return not op.region_list and (isinstance(op, mem.LoadOp) or op.has_trait("pure"))


def _may_alias(root: Value, stored: set[Value]) -> bool:
    if root in stored:
        return True
    param = not (isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp | mem.ConstantOp))
    return param and any(not (isinstance(s, OpResult) and isinstance(s.op, mem.AllocOp))
                         for s in stored)


def _chain(red: loop.ForOp) -> list[loop.ForOp] | None:
    """The loops carrying the values into one another, outermost first."""
    chain = [red]
    while True:
        lp = chain[-1]
        ops = lp.body.block.ops
        yielded = ops[-1].operand_values
        inner = [o for o in ops if o.region_list]
        if len(inner) == 1 and isinstance(inner[0], loop.ForOp):
            nxt = inner[0]
            if nxt.inits != list(lp.iter_args) or yielded != list(nxt.outputs) or \
                    any(len(a.uses) != 1 for a in lp.iter_args) or \
                    any(len(r.uses) != 1 for r in nxt.outputs) or \
                    not all(o is nxt or _reads_only(o) for o in ops[:-1]):
                return None
            chain.append(nxt)
            continue
        if inner or not all(_reads_only(o) for o in ops[:-1]):
            return None
        return chain


def _profitable(lp: loop.ForOp, m: Match) -> bool:
    """Loads of the window stay contiguous across the output loop, and LLVM would not
    keep the accumulators in registers anyway."""
    if unrolled_whole(m.red):
        return False
    iv, unit = lp.induction_var, False
    for op in m.red.walk():
        if isinstance(op, mem.LoadOp):
            step = _step_along(op, iv)
            if step is None:
                return False
            unit = unit or step == 1
    return unit


def _step_along(op: mem.LoadOp, iv: Value) -> int | None:
    """Elements ``op`` steps over per unit of ``iv`` (0: it does not move), or None when
    not a unit stride on the last axis or nothing."""
    src, idx = op.source, list(op.operand_values[1:])
    if not any(_reaches(v, iv) for v in op.operand_values):
        return 0
    if base_buffer(src) is not src or not isinstance(src.type, MemRefType) or not idx:
        return None
    forms = [affine_of(v) for v in idx]
    if any(_reaches(a, iv) for f in forms for a in f.terms if a is not iv) or \
            any(f.terms.get(iv, 0) for f in forms[:-1]):
        return None
    if forms[-1].terms.get(iv, 0) != 1 or static_strides(src.type)[-1] != 1:
        return None
    return 1


def _reaches(v: object, iv: Value) -> bool:
    if v is iv:
        return True
    return isinstance(v, OpResult) and not v.op.region_list and \
        any(_reaches(o, iv) for o in v.op.operand_values)


# ---------------------------------------------------------------------- the rewrite


def _rewrite(lp: loop.ForOp, m: Match) -> None:
    size = _static_trips(lp)
    if size is None or size > CHUNK or lp.attributes.get("parallel"):
        _strip_mine(lp)
        size = CHUNK if size is None else min(size, CHUNK)
    block, loc = lp.parent, lp.loc
    accs = []
    for out in m.red.outputs:
        alloc = mem.AllocOp([], [MemRefType((size,), out.type)], loc=loc)
        block.insert(block.index_of(lp), alloc)
        alloc.result.name_hint = "acc"
        accs.append(alloc.result)
    _post_loop(lp, m, accs)
    _init_loop(lp, m, accs)
    _accumulate(lp, m, accs)
    end = block.index_of(lp) + 2  # after the post loop
    for acc in accs:
        block.insert(end, mem.DeallocOp([acc], loc=loc))


def _static_trips(lp: loop.ForOp) -> int | None:
    lo, hi = constant_of(lp.lower), constant_of(lp.upper)
    if isinstance(lo, int) and isinstance(hi, int):
        return max(hi - lo, 0)
    return None


def _strip_mine(lp: loop.ForOp) -> None:
    """``lp`` runs chunks of :data:`CHUNK` iterations inside a new loop over chunks."""
    block, loc = lp.parent, lp.loc
    at = block.index_of(lp)
    chunk = block.insert(at, arith.ConstantOp.new(CHUNK, index, loc=loc)).result
    outer = loop.ForOp.empty(lp.lower, lp.upper, chunk,
                             iv_name=(lp.induction_var.name_hint or "j") + "_c", loc=loc)
    block.insert(at + 1, outer)
    if lp.attributes.pop("parallel", None):
        outer.attributes["parallel"] = True
    upper = lp.upper
    block.detach(lp)
    inner = outer.body.block
    start = outer.induction_var
    end = inner.append(arith.AddOp.new(start, chunk, loc=loc)).result
    end = inner.append(arith.MinOp.new(end, upper, loc=loc)).result
    inner.append(lp)
    inner.append(loop.YieldOp([], loc=loc))
    lp.set_operand(0, start)
    lp.set_operand(1, end)


def _sibling(lp: loop.ForOp, after: bool) -> tuple[loop.ForOp, dict[Value, Value], Value]:
    """A new empty loop of ``lp``'s bounds beside it, the mapping of ``lp``'s counter and
    the position ``iv - lower`` in the accumulators."""
    new = loop.ForOp.empty(lp.lower, lp.upper, lp.step,
                           iv_name=lp.induction_var.name_hint, loc=lp.loc)
    block = lp.parent
    block.insert(block.index_of(lp) + (1 if after else 0), new)
    iv = new.induction_var
    pos = new.body.block.append(arith.SubOp.new(iv, lp.lower, loc=lp.loc)).result
    return new, {lp.induction_var: iv}, pos


def _clone_cone(values: list[Value], pre: list[Operation], target: loop.ForOp,
                mapping: dict[Value, Value]) -> None:
    """Clone into ``target``'s body the ``pre`` ops computing ``values``, in order."""
    need: set[Operation] = set()
    stack = [v for v in values if isinstance(v, OpResult) and v.op in pre]
    while stack:
        op = stack.pop().op
        if op not in need:
            need.add(op)
            stack.extend(v for v in op.operand_values
                         if isinstance(v, OpResult) and v.op in pre)
    for op in pre:
        if op in need:
            target.body.block.append(op.clone(mapping))


def _post_loop(lp: loop.ForOp, m: Match, accs: list[Value]) -> None:
    """The post ops move to a loop after ``lp``, reading the accumulators."""
    new, mapping, pos = _sibling(lp, after=True)
    used = [v for o in m.post for v in o.operand_values]
    _clone_cone(used, m.pre, new, mapping)
    body = new.body.block
    for k, acc in enumerate(accs):
        out = m.red.outputs[k]
        load = body.append(mem.LoadOp([acc, pos], [out.type], loc=lp.loc))
        mapping[out] = load.result
    for op in m.post:
        body.append(op.clone(mapping))
    body.append(loop.YieldOp([], loc=lp.loc))
    for op in reversed(m.post):
        op.erase()


def _init_loop(lp: loop.ForOp, m: Match, accs: list[Value]) -> None:
    """The initial values stored in a loop before ``lp``."""
    new, mapping, pos = _sibling(lp, after=False)
    inits = list(m.red.inits)
    _clone_cone(inits, m.pre, new, mapping)
    body = new.body.block
    for init, acc in zip(inits, accs, strict=True):
        body.append(mem.StoreOp([mapping.get(init, init), acc, pos], [], loc=lp.loc))
    body.append(loop.YieldOp([], loc=lp.loc))


def _accumulate(lp: loop.ForOp, m: Match, accs: list[Value]) -> None:
    """The innermost loop of the chain reads its carried values from the accumulators
    and writes the values it yields back; then nothing is carried."""
    pos = lp.body.block.insert(0, arith.SubOp.new(lp.induction_var, lp.lower,
                                                  loc=lp.loc)).result
    inner = m.chain[-1]
    block, loc = inner.body.block, inner.loc
    carried = list(inner.iter_args)
    for k, (a, acc) in enumerate(zip(carried, accs, strict=True)):
        old = block.insert(k, mem.LoadOp([acc, pos], [a.type], loc=loc))
        a.replace_all_uses_with(old.result)
    end = block.terminator
    for k, (v, acc) in enumerate(zip(end.operand_values, accs, strict=True)):
        block.insert(block.index_of(end), mem.StoreOp([v, acc, pos], [], loc=loc))
        end.set_operand(k, carried[k])
    inits = list(m.red.inits)
    for lpk in m.chain[:-1]:
        for a, init in zip(lpk.iter_args, inits, strict=True):
            a.replace_all_uses_with(init)
    for lpk in reversed(m.chain):
        for out, init in zip(lpk.outputs, inits, strict=True):
            out.replace_all_uses_with(init)
        drop_unused_carried(lpk)
