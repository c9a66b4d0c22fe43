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
  static loops are unrolled, fused groups inlined, branches on the unrolled indices
  decided (``if p + q > 0`` over a window's taps: ``batch_nest.fold_static_ifs``) and
  views of views folded into one access (``batch_views``), is straight-line code (no
  branches, allocations or checks)
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
``w[c]`` of a run-time ``w``, or times a whole run-time ``k``:
``batch_analysis.NeedSizes``) is versioned on them: ``if sizes hold: <copy with the
sizes constants, batched> else: <the nest>`` (a versioned ``loop.if``, whose branches
the backend treats as top-level code).  A whole buffer's sizes are its ``mem.dim``s,
computed before the ``if``; the fast copy reads it through a view of the constant
sizes, made inside the fast branch only (where those sizes are its own: before the
``if`` the view could be out of bounds).
"""

from __future__ import annotations

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem
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
from pyasc.ir.types import MemRefType, index


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
            found = _versioned(op, need, float64_arrays)
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


def _versioned(op: loop.ForOp, need: NeedSizes,
               float64_arrays: bool) -> tuple[Batch, loop.ForOp] | None:
    """``if sizes hold: <copy of op, the sizes constants> else: op`` when the copy is
    batchable (``batch_windows.WindowSizes``: ``w[c]`` of a run-time ``w`` times a 3x3
    window, batched where ``w.shape[1:] == (3, 3)``; a whole run-time ``k`` times a 5x5
    window, where ``k.shape == (5, 5)``; the unchanged nest runs otherwise, with
    numpy's broadcasting and errors); returns the analysis and the copy, or None
    (nothing changed)."""
    sized = _Sized(op)
    sizes, dims = need.sizes, need.dims
    for _ in range(MAX_SIZE_ROUNDS):
        if not all(_available(v, op) for v in [*sizes, *(buf for buf, _ in dims)]):
            break  # the condition is computed before the nest
        sized.assume(sizes, dims)
        fast = op.clone(sized.mapping())
        assert isinstance(fast, loop.ForOp)
        try:
            batch = analyze(fast)
            if float64_arrays or not has_float64_batch(batch):
                return _branch(sized, fast, batch)
            batch.loops[0].erase()  # not batched: no branch (batch_function's rule)
            fast.erase()
            break
        except NeedSizes as more:
            fast.erase()
            if any(sizes.get(v, n) != n for v, n in more.sizes.items()) or \
                    any(dims.get(d, n) != n for d, n in more.dims.items()):
                break
            sizes, dims = {**sizes, **more.sizes}, {**dims, **more.dims}
        except Refuse:
            fast.erase()
            break
    sized.erase()
    return None


def _available(v: Value, op: Operation) -> bool:
    """Whether ``v`` is defined before ``op`` in a block enclosing it (a condition
    computed before ``op`` may read it; a value of a detached copy may not)."""
    home = v.op.parent if isinstance(v, OpResult) else v.owner
    cur: Operation | None = op
    while cur is not None and cur.parent is not None:
        if cur.parent is home:
            return not isinstance(v, OpResult) or home.index_of(v.op) < home.index_of(cur)
        cur = cur.parent_op
    return False


class _Sized:
    """What the fast copy of a versioned nest assumes: run-time size values equal to
    constants, and whole buffers of constant dimensions, each read through a view of
    those sizes (placed in the fast branch, where its sizes are in bounds)."""

    def __init__(self, op: loop.ForOp) -> None:
        self.op, self.b = op, Builder.before(op)
        self.consts: dict[Value, Value] = {}      # size value -> its assumed constant
        self.dims: dict[tuple[Value, int], Value] = {}  # (buffer, axis) -> its mem.dim
        self.views: dict[Value, Operation] = {}   # buffer -> its static view (detached)
        self.emitted: list[Operation] = []        # before the nest, in order

    def emit(self, op: Operation) -> Value:
        self.emitted.append(self.b.insert(op))
        return op.result_values[0]

    def const(self, n: int) -> Value:
        return self.emit(arith.ConstantOp.new(n, index, loc=self.op.loc))

    def assume(self, sizes: dict[Value, int], dims: dict[tuple[Value, int], int]) -> None:
        """Emit the constants (and the ``mem.dim`` of each assumed dimension) not yet
        emitted, and a view of each whole buffer of assumed dimensions."""
        for (buf, axis), n in dims.items():
            if (buf, axis) not in self.dims:
                self.dims[buf, axis] = self.emit(mem.DimOp([buf], [index], {"axis": axis},
                                                           loc=self.op.loc))
            sizes = {**sizes, self.dims[buf, axis]: n}
        for v, n in sizes.items():
            if v not in self.consts:
                self.consts[v] = self.const(n)
        for buf in dict.fromkeys(buf for buf, _ in dims if buf not in self.views):
            t = buf.type
            assert isinstance(t, MemRefType)
            extent = [self.consts[self.dims[buf, a]] if (buf, a) in self.dims else
                      self.const(d) for a, d in enumerate(t.shape)]
            zero, one = self.const(0), self.const(1)
            self.views[buf] = mem.SubviewOp([buf, *[zero] * t.rank, *extent, *[one] * t.rank],
                                            [t], loc=self.op.loc)

    def mapping(self) -> dict[Value, Value]:
        """The values the fast copy reads instead: constants for sizes, views for
        buffers."""
        return {**self.consts, **{buf: v.result for buf, v in self.views.items()}}

    def erase(self) -> None:
        """Remove everything :meth:`assume` emitted (the nest stays as it was)."""
        for view in self.views.values():
            view.erase()
        for op in reversed(self.emitted):
            op.erase()


def _branch(sized: _Sized, fast: loop.ForOp, batch: Batch) -> tuple[Batch, loop.ForOp]:
    """Place ``fast`` (after the static views it reads) and the nest in the two
    branches of a versioned ``loop.if`` on ``size == constant`` for every assumed
    size."""
    b, op = sized.b, sized.op
    cond: Value | None = None
    for v, c in sized.consts.items():
        test = b.insert(arith.CmpOp.new("eq", v, c, loc=op.loc)).result
        cond = test if cond is None else \
            b.insert(arith.AndOp([cond, test], [test.type], loc=op.loc)).result
    assert cond is not None
    branch = b.insert(loop.IfOp.empty(cond, [], op.loc))
    branch.attributes["versioned"] = True
    assert op.parent is not None
    op.parent.detach(op)
    then, other = branch.then_region.blocks[0], branch.else_region.blocks[0]
    for view in sized.views.values():
        then.append(view)
    for block, nest in ((then, fast), (other, op)):
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
