"""``batch-loops``: a loop over rows with independent iterations becomes whole-batch
tensor work.

::

    for i in range(lo, hi):             rows = x[lo:hi]
        row = x[i]                      m = rows.max(axis=1, keepdims=True)
        m = row.max()            ==>    e = np.exp(rows - m)
        e = np.exp(row - m)             out[lo:hi] = e / e.sum(axis=1, keepdims=True)
        out[i] = e / e.sum()

This is vectorization by adding a batch axis (``vmap``): every value of the body that
depends on the row becomes an array with a leading axis of ``hi - lo`` rows; values that
do not (constants, ``gamma``, ``eps``) are computed once, before.  A per-row scalar
becomes a column ``(n, 1, ..., 1)`` (reductions keep their dims), so it broadcasts
against the rows exactly as the scalar did against one row.  The AscendC backend runs
this pass before grouping: the batched ops are what its ``rows`` (or ``flat``) vector
schedule plans, so a Python loop over rows runs on the vector unit instead of the
scalar unit.  The CPU backend does not run it (its loops are native loops already;
batching would only add whole-batch temporaries).

Loop nests over pixels batch the same way, one batch axis per loop: in ``for i: for
j: out[i, j] = ...`` (a perfect nest) the body's small static loops (a stencil's
window, ``for di in range(-1, 2)``) are unrolled, and each element access
``img[i + di, j + dj]`` becomes the shifted view ``img[lo_i + di : ..., lo_j + dj :
...]``: a 3x3 blur is the sum of nine shifted images, all in one vector kernel.

A nest is rewritten only when every iteration provably touches its own elements alone
(anything else leaves it unchanged, to run as before):

* a top-level perfect nest of ``loop.for`` with step 1 and no carried values
  (``break``/``continue`` and accumulators carry values; a counted ``while i < n: ...;
  i += 1`` is its ``for`` loop first, ``batch_while``) whose innermost body, once its
  static loops are unrolled, fused groups inlined and views of views folded into one
  access (``batch_views``), is straight-line code (no branches, allocations or checks)
  and whose outer levels hold invariant ops only;
* the loop indices appear only as indices ``i_k + c`` (``c`` a constant) of accesses,
  batch axes in nest order: ``x[i + c]`` row views (one-loop nests: axis 0, dropped),
  ``x[i + c, j + d, ...]`` loads, ``out[i] = ...`` / ``out[i, j] = ...`` writes, every
  other index loop-invariant;
* every buffer written is reached, for reading and writing, only through one source
  at the iteration's own element or row (``out[i - 1]`` or ``out.sum()`` inside the
  loop refuse), and a written function argument is the only argument the loop touches
  (two arguments may be one numpy array);
* the batched values line up: every iteration-dependent array has the same rank
  ``R``, an invariant array operand has rank at most ``R``, and reductions either
  reduce to a scalar or keep their dims (``R`` is kept).

The analysis is ``batch_analysis``; the rewritten form is built by ``batch_build``.
A nest that would batch if some run-time sizes had static values (a window slice times
``w[c]`` of a run-time ``w``: ``batch_analysis.NeedSizes``) is versioned on them: ``if
sizes hold: <copy with the sizes constants, batched> else: <the nest>`` (a versioned
``loop.if``, whose branches the backend treats as top-level code).
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.batch_analysis import (
    Batch,
    NeedSizes,
    Refuse,
    analyze,
    has_float64_batch,
)
from pyasc.ir.passes.batch_build import build
from pyasc.ir.passes.batch_nest import trip_count
from pyasc.ir.passes.batch_while import as_for
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.versioning import top_blocks


def batch_function(fn: FuncOp, float64_arrays: bool = True) -> int:
    """Rewrite the batchable top-level loops of ``fn`` (those of the branches of a
    top-level versioned ``loop.if`` too: ``versioning.top_blocks``); returns how many.  Without
    ``float64_arrays`` a nest whose batched values hold float64 is left alone (no
    vector unit computes float64: batched, it would only be scalar code over whole
    arrays; the AscendC backend allows it when it demotes them to float32)."""
    done = 0
    # a nest hoist-checks versioned is top-level in its branch (the fast copy batches);
    # so is the nest inside a loop channel-interchange made (its body, once per channel)
    for op in [op for block in top_blocks(fn.entry) for op in _with_channel_nests(block)]:
        if isinstance(op, loop.WhileOp):  # ``while i < n: ...; i += 1``: a for loop
            op = as_for(op) or op
        if not isinstance(op, loop.ForOp) or trip_count(op) == 0 or \
                op.attributes.get("channels"):
            continue  # (a channel loop's nest is batched, the loop itself stays)
        try:
            b = analyze(op)
        except NeedSizes as need:
            if _in_channel_loop(op):  # (a versioned ``if`` is top-level code only)
                continue
            found = _versioned(op, need.sizes, float64_arrays)
            if found is None:
                continue
            b, op = found
        except Refuse:
            continue
        if not float64_arrays and has_float64_batch(b):
            b.loops[0].erase()
            continue
        build(b, op)
        b.loops[0].erase()
        op.erase()
        done += 1
    return done


def _with_channel_nests(block: Block) -> list[Operation]:
    """The ops of ``block``, each loop ``channel-interchange`` made followed by the ops
    of its body (the nest over outputs it runs once per channel)."""
    ops: list[Operation] = []
    for op in block.ops:
        ops.append(op)
        if isinstance(op, loop.ForOp) and op.attributes.get("channels"):
            ops.extend(op.body.blocks[0].ops)
    return ops


def _in_channel_loop(op: Operation) -> bool:
    parent = op.parent_op
    return isinstance(parent, loop.ForOp) and bool(parent.attributes.get("channels"))


MAX_SIZE_ROUNDS = 4  # size assumptions gathered one window op at a time


def _versioned(op: loop.ForOp, sizes: dict[Value, int],
               float64_arrays: bool) -> tuple[Batch, loop.ForOp] | None:
    """``if sizes hold: <copy of op, the sizes constants> else: op`` when the copy is
    batchable (``batch_windows.WindowSizes``: ``w[c]`` of a run-time ``w`` times a 3x3
    window, batched where ``w.shape[1:] == (3, 3)``; the unchanged nest runs
    otherwise, with numpy's broadcasting and errors); returns the analysis and the
    copy, or None (nothing changed)."""
    b = Builder.before(op)
    consts: dict[Value, Value] = {}
    for _ in range(MAX_SIZE_ROUNDS):
        if any(isinstance(v, OpResult) and op.is_ancestor_of(v.op) for v in sizes):
            break  # the condition is computed before the nest
        for v, n in sizes.items():
            if v not in consts:
                consts[v] = b.insert(arith.ConstantOp.new(n, v.type, loc=op.loc)).result
        fast = op.clone(dict(consts))
        assert isinstance(fast, loop.ForOp)
        try:
            batch = analyze(fast)
            if float64_arrays or not has_float64_batch(batch):
                return _branch(b, op, fast, batch, consts)
            batch.loops[0].erase()  # not batched: no branch (batch_function's rule)
            fast.erase()
            break
        except NeedSizes as need:
            fast.erase()
            if any(sizes.get(v, n) != n for v, n in need.sizes.items()):
                break
            sizes = {**sizes, **need.sizes}
        except Refuse:
            fast.erase()
            break
    for c in consts.values():
        c.op.erase()  # type: ignore[union-attr]
    return None


def _branch(b: Builder, op: loop.ForOp, fast: loop.ForOp, batch: Batch,
            consts: dict[Value, Value]) -> tuple[Batch, loop.ForOp]:
    """Place ``fast`` and ``op`` in the two branches of a versioned ``loop.if`` on
    ``size == constant`` for every assumed size."""
    cond: Value | None = None
    for v, c in consts.items():
        test = b.insert(arith.CmpOp.new("eq", v, c, loc=op.loc)).result
        cond = test if cond is None else \
            b.insert(arith.AndOp([cond, test], [test.type], loc=op.loc)).result
    assert cond is not None
    branch = b.insert(loop.IfOp.empty(cond, [], op.loc))
    branch.attributes["versioned"] = True
    assert op.parent is not None
    op.parent.detach(op)
    for block, nest in ((branch.then_region.blocks[0], fast), (branch.else_region.blocks[0], op)):
        block.append(nest)
        block.append(loop.YieldOp([], loc=op.loc))
    return batch, fast


@register_pass
class BatchLoops(Pass):
    """Loops over rows with independent iterations -> whole-batch tensor ops."""

    name = "batch-loops"
    description = __doc__ or ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        wide = bool(ctx.options.get("float64_arrays", True))
        for fn in module.functions:
            batch_function(fn, wide)
