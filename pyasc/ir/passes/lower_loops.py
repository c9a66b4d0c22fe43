"""``lower-to-loops``: tensor-level IR to loop-level IR (bufferization + loop nests).

Loop-level IR — the contract the CPU backend consumes — is exactly:

* ``arith.*`` and ``math.*`` on scalars only; ``arith.constant`` with scalar values;
* ``mem.alloc``, ``mem.dealloc``, ``mem.constant``, ``mem.dim``, ``mem.load``,
  ``mem.store``, ``mem.subview``, ``mem.transpose``, ``mem.reshape``;
* ``loop.for`` (maybe ``parallel``), ``loop.while``, ``loop.if``, ``loop.yield``,
  ``loop.condition``; ``func.func``, ``func.return``, ``func.assert``, ``func.call``
  (only if the input had calls);
* no value of ``TensorType`` anywhere, function signatures included.

Memrefs: a memref value is (data pointer of element [0, ..., 0], sizes, strides).
``strides=None`` in the type promises C-contiguous strides for the run-time sizes
(views whose static strides prove it get it too, e.g. a row of a contiguous matrix);
otherwise the type's strides are the statically known ones and ``?`` is read from the
descriptor.  ``mem.subview`` offsets the pointer; ``mem.transpose`` permutes sizes and
strides; ``mem.reshape`` needs a contiguous source.  ``mem.constant`` is a read-only
contiguous global.  Indices and sizes are ``index``.

Results and buffers:

* a tensor result of the function becomes a contiguous memref result holding a fresh
  buffer that the caller owns (the kernel never frees it): never a parameter, a view, a
  constant or a buffer returned at another position (copies are inserted where
  needed).  Statically the returned value is a ``mem.alloc`` of the entry block *or* a
  result of a ``loop.for/while/if`` or ``func.call`` in the entry block; at run time it
  is always a buffer some ``mem.alloc`` made.  Memref results of the input (parameters,
  user buffers) are passed through unchanged;
* ``mem.dealloc(b)`` is applied only to the exact value of a ``mem.alloc`` (or to a loop
  result / iteration argument / call result that holds one), after its last use, in
  the block of its definition; buffers carried by loops are freed by the region that
  consumes them, and each is freed exactly once.  See ``bufferize`` (ownership) and
  ``dealloc`` (placement) for the rules;
* loops generated over a fresh result carry ``parallel = true`` on their outermost
  ``loop.for`` (iterations write disjoint elements);
* ``func.assert`` kinds emitted here: ``shape`` (broadcast, reshape, concat, matmul,
  empty max/min/argmax: numpy's ValueError), always outside loop nests and cheap —
  a failed one would otherwise mean out-of-bounds accesses; ``bounds`` (gather
  indices, inside the nest; compress mask sizes, outside: numpy's IndexError).

``mem.to_tensor`` reuses its buffer when nothing can write between the snapshot and
the last use of the value (rule in ``snapshots``), else copies it; a copied snapshot
whose only use is the ``mem.write`` right after it is one copy versioned on run-time
alias tests instead (``lower_copy_inplace``).  ``fusion.scope`` is
inlined; a ``fusion.group`` becomes one loop nest writing only its outputs
(``lower_group``; a ``generic`` group is inlined op by op).

Wasteful, left to memory planning: every tensor op outside a group gets its own buffer
and loop nest; values carried through ``loop.if`` branches, or yielded from a position
other than their own, are copied; allocations inside loops are not hoisted; user
buffers that escape a region (``np.empty`` in a loop body, yielded out) are not freed.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import (
    lower_argreduce,
    lower_copy_inplace,
    lower_elementwise,
    lower_group,
    lower_matmul,
    lower_matmul_gather,
    lower_reduce,
    lower_scatter,
    lower_shapes,
    lower_sort,
)
from pyasc.ir.passes.bufferize import CONTROL_RULES, Lowerer, LowerFn, buffer_type
from pyasc.ir.passes.dealloc import insert_deallocs
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.passes.lower_group_inplace import place_destinations
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.snapshots import inline_fusion_scopes, reusable_snapshots
from pyasc.ir.types import FunctionType

RULES: dict[type, LowerFn] = {
    **CONTROL_RULES,
    **lower_elementwise.RULES,
    **lower_shapes.RULES,
    **lower_reduce.RULES,
    **lower_argreduce.RULES,  # argmax, argmin
    **lower_matmul.RULES,
    **lower_sort.RULES,  # sort, argsort, cumsum, cumprod
    **lower_scatter.RULES,  # gather_nd, scatter
    **lower_group.RULES,  # fusion.group: one loop nest (replaces the inlining rule)
}


def lower_function(fn: FuncOp, boundscheck: bool = True,
                   options: Mapping[str, object] | None = None) -> None:
    """Lower one function in place to loop-level IR (``boundscheck``: check the indices
    of gathers and scatters; ``options``: the pass options, read by rules such as the
    matmul's)."""
    inline_fusion_scopes(fn)
    place_destinations(fn)
    reuse = reusable_snapshots(fn)
    old = fn.entry
    new = Block([buffer_type(a.type) for a in old.args], [a.name_hint for a in old.args])
    gen = LoopGen(Builder.at_end(new, fn.loc), boundscheck)
    cx = Lowerer(RULES, gen, reuse, options)
    lower_matmul_gather.plan(fn, cx)
    lower_copy_inplace.plan(fn, cx)
    cx.lower_into(old, new)
    gen.flush_constants(new)
    region = fn.body
    region.blocks = []
    region.add_block(new)
    term = new.terminator
    results = tuple(v.type for v in term.operand_values) if term is not None else ()
    fn.attributes["function_type"] = FunctionType(tuple(a.type for a in new.args), results)
    insert_deallocs(fn, cx.owned, cx.transferred)


@register_pass
class LowerToLoops(Pass):
    """Tensor-level IR -> loop-level IR (see the module docstring for the contract)."""

    name = "lower-to-loops"
    description = "bufferize tensors and lower tensor ops to loop nests over buffers"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in list(module.functions):
            lower_function(fn, bool(ctx.options.get("boundscheck", True)), ctx.options)
