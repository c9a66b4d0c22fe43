"""Buffers a loop owns while it runs, for the error exits inside it.

The allocation tracker (``codegen.AllocTracker``) forgets what a loop carries: a later
iteration may hold another buffer than the one it started with, and an error exit must
never free twice.  One common shape is safe and worth handling, because Ctrl-C can stop
a kernel anywhere in a long loop: memref slots that start as distinct allocations of
the function (not the runtime's preallocated result buffers) and only trade places from
one iteration to the next (``a, b = b, a`` double buffering), in a loop that frees no
buffer and calls no function.  The set of buffers in those slots is then the same at
every point of every iteration, so an error exit inside the loop frees them from the
loop header's values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter, n_parts
from pyasc.ir.core import Block, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.types import MemRefType


@contextmanager
def owning(fe: FunctionEmitter, inits: Sequence[Value], args: Sequence[Value],
           body: Block, carried: Sequence[ir.Value]) -> Iterator[None]:
    """While emitting a loop's body: the loop owns the buffers in its memref slots when
    they start as distinct allocations of this function (not the runtime's result
    buffers) that only trade places (``a, b = b, a``) and nothing in the loop frees a
    buffer (module docstring): an error exit inside (Ctrl-C, an assert) frees them from
    ``carried`` (the loop header's parts).  ``args``: the block arguments the ``loop.yield``
    of ``body`` refers to, slot by slot with ``inits``."""
    owned = _owned_slots(fe, inits, args, body)
    offsets = [sum(n_parts(v.type) for v in inits[:i]) for i in range(len(inits))]
    fe.carried_buffers.append([carried[offsets[i]] for i in owned])
    try:
        yield
    finally:
        fe.carried_buffers.pop()


def _owned_slots(fe: FunctionEmitter, inits: Sequence[Value], args: Sequence[Value],
                 body: Block) -> list[int]:
    slots = [i for i, v in enumerate(inits) if isinstance(v.type, MemRefType)]
    term, whole = body.terminator, body.parent_op
    if not slots or not isinstance(term, loop.YieldOp) or whole is None or any(
            isinstance(o, (mem.DeallocOp, func.CallOp)) for o in whole.walk()):
        return []  # (a callee is not looked into)
    roots = [inits[i] for i in slots]
    if len({id(v) for v in roots}) < len(roots) or not all(
            isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp)
            and v.op not in fe.prealloc and v.op not in fe.tracked for v in roots):
        return []
    moved = [term.operand_values[i] for i in slots]
    return slots if sorted(id(v) for v in moved) == sorted(id(args[i]) for i in slots) else []
