"""``channel-interchange``: a reduction loop of a run-time trip count inside a nest over
output elements moves outside the nest, its accumulator one element per output in memory.

A direct convolution with a run-time channel count (``C = x.shape[0]``)::

    for o in range(O):
        for i in range(H):
            for j in range(W):
                acc = 0.0
                for c in range(C):                       # run-time: nothing unrolls it
                    for di in range(3):
                        for dj in range(3):
                            acc += x[c, i + di, j + dj] * w[o, c, di, dj]
                out[o, i, j] = acc

is rewritten into::

    tmp = empty((O, H, W), acc's dtype); tmp[...] = 0.0
    for c in range(C):
        for o in range(O):
            for i in range(H):
                for j in range(W):
                    acc = tmp[o, i, j]
                    for di in range(3):
                        for dj in range(3):
                            acc += x[c, i + di, j + dj] * w[o, c, di, dj]
                    tmp[o, i, j] = acc
    for o in range(O):
        for i in range(H):
            for j in range(W):
                out[o, i, j] = tmp[o, i, j]

so that the nest inside ``for c`` is a perfect nest with static windows (what
``batch-loops`` batches: per channel, 9 shifted windows of one plane of ``x``) and
the channel loop a loop over whole-output arrays.  Each output element still adds its
terms in the original order, starting from the same initial value, in the
accumulator's own dtype (``tmp`` is of that dtype, not ``out``'s: a float16 output
keeps a float32 running sum): the results are bit-identical.

An initial value computed per output (``acc = bias[o]``: a load of the nest's indices)
is written by a nest of its own instead of the fill, before the channel loop::

    for o in range(O):
        for i in range(H):
            for j in range(W):
                tmp[o, i, j] = bias[o]

The rule, for a top-level ``loop.for`` ``T`` and its perfect nest (``batch_nest.nest``):
every loop of the nest counts from 0 by 1, its bounds defined before ``T``; the innermost
body is region-free *pre* ops (pure ops, loads), one loop ``R`` carrying one value whose
trip count is not static (a static one is unrolled by ``batch-loops`` already) and whose
bounds are defined before ``T``, its initial value before ``T`` or by the pre ops, and
region-free *post* ops (pure ops, loads, stores) that alone use ``R``'s result (a
load: of an element, or the snapshot of a 0-d array, ``acc * s`` with ``s`` one).
``R``'s body (inner loops included) only computes and loads: no store, no check
(moving a failing check across outputs would change which error is raised first), no
call.  Every buffer the post ops store to is a ``mem.alloc`` of the function (a
parameter may alias an input) that nothing in ``R`` or the pre ops loads from, so
computing every ``R`` before every post op reads the same values.

The channel loop is marked ``channels``: ``batch-loops`` batches the nest inside it as
it batches a top-level nest (per channel, whole-output array work).  The AscendC
backend runs the pass before ``batch-loops`` (``backend/ascendc/lower_channels.py``),
for the nests whose channel loop then becomes one stencil kernel walking the channels
(a trial on a copy of the module decides: ``interchange_function``'s ``accept``); the
CPU backend does not run it (its nests are native loops already).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.batch_nest import constant_int, nest, trip_count
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import DYN, MemRefType, ScalarType, index


@dataclass
class Interchange:
    """A nest the pass rewrites: its loops (outermost first) and the reduction loop."""

    loops: list[loop.ForOp]
    red: loop.ForOp
    per_output: bool = False  # the initial value is computed per output (an init nest)


def _root(buf: Value) -> Value:
    while isinstance(buf, OpResult) and buf.op.has_trait("view"):
        buf = buf.op.operand_values[0]
    return buf


def _before(v: Value, top: Operation) -> bool:
    """``v`` is defined outside ``top`` (not by an op of ``top``, not an argument of one
    of its blocks)."""
    if isinstance(v, OpResult):
        return v.op is not top and not top.is_ancestor_of(v.op)
    parent = v.block.parent_op if isinstance(v, BlockArgument) else None
    return parent is None or (parent is not top and not top.is_ancestor_of(parent))


def _invariant(v: Value, top: Operation) -> bool:
    """``v`` is defined before ``top`` or computed inside it by pure ops from such
    values alone (a constant the frontend left in the innermost body)."""
    if _before(v, top):
        return True
    return isinstance(v, OpResult) and not v.op.region_list and v.op.has_trait("pure") \
        and all(_invariant(u, top) for u in v.op.operand_values)


def _hoisted(v: Value, top: Operation, block, at: int) -> tuple[Value, int]:  # noqa: ANN001
    """``v`` (:func:`_invariant`) as a value defined before ``top``: its ops are copied
    to ``block`` at ``at``; returns it and the position after the copies."""
    if _before(v, top):
        return v, at
    assert isinstance(v, OpResult)
    mapping: dict[Value, Value] = {}
    for u in v.op.operand_values:
        mapping[u], at = _hoisted(u, top, block, at)
    op = block.insert(at, v.op.clone(mapping))
    return op.result_values[v.op.result_values.index(v)], at + 1


def _computes_only(op: Operation) -> bool:
    """A region-free op that writes nothing: pure, or a load (an element's, or a 0-d
    array's snapshot: ``acc * s`` with ``s`` a 0-d array reads ``extract(to_tensor(s))``)."""
    return not op.region_list and (op.has_trait("pure") or isinstance(op, mem.LoadOp) or
                                   _scalar_snapshot(op))


def _scalar_snapshot(op: Operation) -> bool:
    return isinstance(op, mem.ToTensorOp) and op.result.type.rank == 0  # type: ignore[attr-defined]


def _reduction_body_ok(red: loop.ForOp) -> bool:
    """``red``'s body only computes and loads (inner loops of such bodies allowed)."""
    for op in red.walk():
        if op is red or isinstance(op, loop.YieldOp):
            continue
        if isinstance(op, loop.ForOp):
            continue
        if not _computes_only(op):
            return False
    return True


def match(top: loop.ForOp) -> Interchange | None:
    """The nest of ``top`` with a run-time reduction loop to move out, else None."""
    if top.inits:
        return None
    loops = nest(top)
    for lp in loops:
        if constant_int(lp.lower) != 0 or constant_int(lp.step) != 1 or \
                not _before(lp.upper, top):
            return None
    body = loops[-1].body.blocks[0].ops[:-1]
    reds = [op for op in body if op.region_list]
    if len(reds) != 1 or not isinstance(reds[0], loop.ForOp):
        return None
    red = reds[0]
    if len(red.inits) != 1 or trip_count(red) is not None or \
            not all(_before(v, top) for v in (red.lower, red.upper, red.step)):
        return None
    pos = body.index(red)
    pre, post = body[:pos], body[pos + 1:]
    if not all(_computes_only(op) for op in pre) or not _reduction_body_ok(red):
        return None
    init = red.inits[0]
    # (not invariant: computed by the pre ops, which only compute and load)
    per_output = not _invariant(init, top)
    if not all(not op.region_list and (_computes_only(op) or isinstance(op, mem.StoreOp))
               for op in post):
        return None
    if any(user not in post for user, _ in red.outputs[0].uses):
        return None
    return Interchange(loops, red, per_output) if _buffers_ok(pre, red, post) else None


def _buffers_ok(pre: list[Operation], red: loop.ForOp, post: list[Operation]) -> bool:
    written = {_root(op.dest) for op in post if isinstance(op, mem.StoreOp)}
    if not all(isinstance(b, OpResult) and isinstance(b.op, mem.AllocOp) for b in written):
        return False
    loads = [op for op in [*pre, *red.walk()] if isinstance(op, mem.LoadOp)]
    loads += [op for op in [*pre, *red.walk()] if _scalar_snapshot(op)]
    return not any(_root(op.operand_values[0]) in written for op in loads)


def rewrite(m: Interchange) -> None:
    """Replace the nest of ``m`` by the initial fill, the channel loop and the final nest
    (the module docstring)."""
    top, red = m.loops[0], m.red
    block = top.parent
    assert block is not None
    at = block.index_of(top)
    loc = top.loc
    acc_type = red.inits[0].type
    assert isinstance(acc_type, ScalarType)
    tmp, at = _alloc(block, at, m.loops, acc_type, loc)
    if m.per_output:
        first = top.clone({})
        assert isinstance(first, loop.ForOp)
        block.insert(at, first)
        _initialize(first, tmp)
    else:
        init, at = _hoisted(red.inits[0], top, block, at)
        block.insert(at, mem.FillOp([init, tmp], [], loc=loc))
    chan = loop.ForOp.empty(red.lower, red.upper, red.step, iv_name="c", loc=red.loc)
    chan.attributes["channels"] = True  # batch-loops batches the nest inside it
    block.insert(at + 1, chan)
    acc_nest = top.clone({})
    assert isinstance(acc_nest, loop.ForOp)
    chan.body.blocks[0].append(acc_nest)
    chan.body.blocks[0].append(loop.YieldOp([], loc=loc))
    _accumulate(acc_nest, tmp, chan.induction_var)
    final = top.clone({})
    assert isinstance(final, loop.ForOp)
    block.insert(at + 2, final)
    _finish(final, tmp)
    top.erase()


def _alloc(block, at: int, loops: list[loop.ForOp], dtype: ScalarType,  # noqa: ANN001
           loc) -> tuple[Value, int]:  # noqa: ANN001
    """``mem.alloc`` of one element per iteration of the nest (a trip count below 0
    runs no iteration: its extent is 0)."""
    shape: list[int] = []
    dims: list[Value] = []
    zero: Value | None = None
    for lp in loops:
        n = constant_int(lp.upper)
        if n is not None:
            shape.append(max(n, 0))
            continue
        if zero is None:
            zero = block.insert(at, arith.ConstantOp.new(0, index, loc=loc)).result
            at += 1
        size = block.insert(at, arith.MaxOp([lp.upper, zero], [index], loc=loc)).result
        at += 1
        shape.append(DYN)
        dims.append(size)
    t = MemRefType(tuple(shape), dtype)
    op = block.insert(at, mem.AllocOp(dims, [t], loc=loc))
    return op.result, at + 1


def _innermost(top: loop.ForOp) -> tuple[list[loop.ForOp], loop.ForOp]:
    loops = nest(top)
    red = next(op for op in loops[-1].body.blocks[0].ops if op.region_list)
    assert isinstance(red, loop.ForOp)
    return loops, red


def _accumulate(nest_top: loop.ForOp, tmp: Value, chan_iv: Value) -> None:
    """In a copy of the nest: the reduction's body for channel ``chan_iv``, from and
    back into ``tmp``; the post ops go (they run in the final nest)."""
    loops, red = _innermost(nest_top)
    inner = loops[-1].body.blocks[0]
    ivs = [lp.induction_var for lp in loops]
    at = inner.index_of(red)
    acc = inner.insert(at, mem.LoadOp([tmp, *ivs], [red.outputs[0].type], loc=red.loc))
    at += 1
    mapping: dict[Value, Value] = {red.induction_var: chan_iv, red.iter_args[0]: acc.result}
    body = red.body.blocks[0]
    for op in body.ops:
        if isinstance(op, loop.YieldOp):
            value = mapping.get(op.operand_values[0], op.operand_values[0])
            break
        inner.insert(at, op.clone(mapping))
        at += 1
    inner.insert(at, mem.StoreOp([value, tmp, *ivs], [], loc=red.loc))
    post = inner.ops[at + 2:-1]  # after the store and the reduction loop
    red.outputs[0].replace_all_uses_with(value)
    for op in reversed(post):
        op.erase()
    red.erase()
    _drop_unused(inner)


def _initialize(nest_top: loop.ForOp, tmp: Value) -> None:
    """In a copy of the nest: the reduction's initial value stored to ``tmp`` (the
    reduction and the post ops go)."""
    loops, red = _innermost(nest_top)
    inner = loops[-1].body.blocks[0]
    ivs = [lp.induction_var for lp in loops]
    at = inner.index_of(red)
    inner.insert(at, mem.StoreOp([red.inits[0], tmp, *ivs], [], loc=red.loc))
    for op in reversed(inner.ops[at + 2:-1]):  # the post ops
        op.erase()
    red.erase()
    _drop_unused(inner)


def _finish(nest_top: loop.ForOp, tmp: Value) -> None:
    """In a copy of the nest: the reduction's result is read from ``tmp``."""
    loops, red = _innermost(nest_top)
    inner = loops[-1].body.blocks[0]
    ivs = [lp.induction_var for lp in loops]
    load = inner.insert(inner.index_of(red),
                        mem.LoadOp([tmp, *ivs], [red.outputs[0].type], loc=red.loc))
    red.outputs[0].replace_all_uses_with(load.result)
    red.erase()
    _drop_unused(inner)


def _drop_unused(block) -> None:  # noqa: ANN001
    """Erase the ops of ``block`` that only compute values nothing uses (the initial
    value's pre ops, in the nests that no longer read it)."""
    for op in reversed(block.ops):
        if _computes_only(op) and op.result_values and \
                not any(r.uses for r in op.result_values):
            op.erase()


def candidates(fn: FuncOp) -> int:
    """How many top-level nests of ``fn`` the pass would rewrite (nothing changes)."""
    return sum(isinstance(op, loop.ForOp) and match(op) is not None
               for block in top_blocks(fn.entry) for op in block.ops)


def interchange_function(fn: FuncOp, accept: Callable[[int], bool] | None = None) -> int:
    """Rewrite the matching top-level nests of ``fn`` (and of the branches of its
    top-level versioned ``loop.if``); returns how many.  ``accept(k)``: whether to
    rewrite the ``k``-th matching nest (in that order; the AscendC backend rewrites
    only those a trial on a copy showed become one channel kernel)."""
    done = seen = 0
    for op in [op for block in top_blocks(fn.entry) for op in block.ops]:
        if isinstance(op, loop.ForOp):
            found = match(op)
            if found is not None:
                seen += 1
                if accept is None or accept(seen - 1):
                    rewrite(found)
                    done += 1
    return done


@register_pass
class ChannelInterchange(Pass):
    """A run-time reduction loop inside a nest over outputs -> a loop around the nest."""

    name = "channel-interchange"
    description = __doc__ or ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in module.functions:
            interchange_function(fn)
