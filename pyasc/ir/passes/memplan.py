"""``memplan``: memory planning on loop-level IR (run after ``lower-to-loops``).

Goal: every temporary that must exist is allocated once per call, outside hot loops,
and buffers whose lifetimes do not overlap share memory.  The pass only ever touches
*planable* buffers and keeps the loop-level contract (``lower_loops``): every
``mem.alloc`` is still freed exactly once, by a ``mem.dealloc`` of the allocation
itself in the allocation's block.

**Planable buffer.**  A ``mem.alloc`` result ``b`` in block ``B`` is planable when

* ``B`` holds exactly one ``mem.dealloc(b)``, after the alloc, and nothing else frees it;
* its *aliases* — ``b`` and, transitively, results of view ops (``mem.subview``,
  ``mem.transpose``, ``mem.reshape``) of an alias — are used only by ops of ``B`` placed
  between the alloc and the dealloc (or nested in them);
* no alias *escapes*: none is returned, yielded (``loop.yield``/``loop.condition``),
  passed as a loop init, or passed to a ``func.call``.

So a planable buffer lives exactly from its alloc to its dealloc, within one execution
of ``B``.  Returned buffers, loop-carried buffers and buffers given to calls are never
moved, shared or resized.

**Hoisting** (``memplan_hoist``).  Blocks are visited innermost first.  A planable
alloc in the body of a ``loop.for``/``loop.while``, or of a ``loop.if`` nested in a loop,
moves right before that op, and its dealloc right after it, when its dynamic sizes are
loop-invariant: defined outside the op, or computed inside it by a chain of
speculatable index ops (``mem.dim``, ``arith.constant``, ``add``, ``sub``, ``mul``,
``max``, ``min``, ``cmp``, ``select``, ``cast``) on invariant values, which then move
out with it.  Repeated level by level, an invariant buffer ends up outside every
loop: one allocation per call instead of one per iteration.  The buffer is
uninitialized at each iteration either way (``np.empty``), so no result changes.
Hoisting stops at a ``parallel`` loop, and at the loop the CPU backend will split over
threads when one of its iterations is costly (``splittable``, outermost, at least
``PRIVATE_MIN_COST`` units of ``loop_cost``, e.g. the bilateral filter's row loop):
its iterations may run on different threads at once and must not share a buffer
(sharing would also make a user loop dependent, hence sequential), so the allocation
stays in that loop's body, outside all its inner loops: one allocation per iteration
of the split loop.  A cheap splittable loop gets its buffers hoisted out (it then runs
on one thread, which is cheaper than an allocation per iteration).  A buffer whose
size changes from one iteration to the next is not hoisted.

**Reuse** (``memplan_reuse``): a linear scan over each block, after hoisting out of its
children.  At a planable ``mem.alloc`` ``x``, a planable buffer ``b`` of the same block
that is already dead (its dealloc came earlier) is reused instead of allocating:

* same element type;
* sizes compared statically: both static with ``n(x) <= n(b) <= 2 n(x)`` elements
  (bounded waste), or the same shape with the very same SSA values as dynamic sizes
  (no run-time size check, hence no fallback path);
* among candidates the smallest, then the most recently freed (deterministic).

``x`` then becomes ``b`` itself (same type), a ``mem.reshape`` of ``b`` (same element
count), or a reshape of a leading ``mem.subview`` of ``b`` flattened (larger ``b``);
``b``'s dealloc is dropped and ``x``'s dealloc frees ``b``.  Reused memory holds stale
values instead of fresh garbage, which is what ``np.empty`` promises anyway.

Not done: buffers of loop-varying size are not grown to a maximum; user buffers that
escape a region (``np.empty`` in a loop body yielded out of it) are not planable, so
their leak (see ``dealloc``) remains; reuse does not cross blocks (a buffer dead in a
loop's parent block is not lent to an allocation inside the loop unless that one is
hoisted out first).
"""

from __future__ import annotations

from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.memplan_buffers import blocks_postorder
from pyasc.ir.passes.memplan_hoist import hoist_out_of_parent
from pyasc.ir.passes.memplan_reuse import reuse_in_block


def plan_function(fn: FuncOp) -> None:
    """Hoist and share the planable buffers of ``fn`` (rules in the module docstring)."""
    for block in blocks_postorder(fn):
        reuse_in_block(block)
        hoist_out_of_parent(block)


@register_pass
class MemPlan(Pass):
    """Hoist loop-invariant temporaries out of loops and reuse dead buffers."""

    name = "memplan"
    description = "allocate temporaries once per call, outside loops, sharing dead buffers"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            plan_function(fn)
