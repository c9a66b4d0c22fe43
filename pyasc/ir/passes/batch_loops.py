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
  (``break``/``continue`` and accumulators carry values) whose innermost body, once its
  static loops are unrolled and fused groups inlined, is straight-line code (no
  branches, allocations or checks) and whose outer levels hold invariant ops only;
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
"""

from __future__ import annotations

from pyasc.ir.ops import loop
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.batch_analysis import Refuse, analyze, has_float64_batch
from pyasc.ir.passes.batch_build import build
from pyasc.ir.passes.batch_nest import trip_count
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.versioning import top_blocks


def batch_function(fn: FuncOp, float64_arrays: bool = True) -> int:
    """Rewrite the batchable top-level loops of ``fn`` (those of the branches of a
    top-level versioned ``loop.if`` too: ``versioning.top_blocks``); returns how many.  Without
    ``float64_arrays`` a nest whose batched values hold float64 is left alone (no
    vector unit computes float64: batched, it would only be scalar code over whole
    arrays; the AscendC backend allows it when it demotes them to float32)."""
    done = 0
    # a nest hoist-checks versioned is top-level in its branch (the fast copy batches)
    for op in [op for block in top_blocks(fn.entry) for op in block.ops]:
        if not isinstance(op, loop.ForOp) or trip_count(op) == 0:
            continue
        try:
            b = analyze(op)
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


@register_pass
class BatchLoops(Pass):
    """Loops over rows with independent iterations -> whole-batch tensor ops."""

    name = "batch-loops"
    description = __doc__ or ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        wide = bool(ctx.options.get("float64_arrays", True))
        for fn in module.functions:
            batch_function(fn, wide)
