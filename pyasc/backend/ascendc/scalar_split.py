"""Which top-level loop of a scalar kernel runs split across blocks (see ``scalar_plan``).

A loop is split when it is the only code writing GM and ``parallel_safe.independent``
proves its iterations independent; :func:`split_rows` names the GM rows it writes, at
whose 64-byte line starts the blocks' chunks begin (``emit_control``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.backend.ascendc.scalar_kernel import ScalarKernel
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.parallel_safe import independent, partial_writes_visible
from pyasc.ir.types import MemRefType, TensorType


def find_parallel_loop(k: ScalarKernel, distinct: Callable[[int, int], bool]) -> loop.ForOp | None:
    """The top-level loop to split across blocks, or ``None`` (see the module docstring)."""
    gm = {a.value for a in k.arrays if a.value is not None and not a.per_block}
    writers = [op for op in k.fn.entry.ops if _stores_into(op, gm)]
    if len(writers) != 1:
        return None
    top, lp = writers[0], _fast_loop(writers[0])
    if lp is None:
        return None
    shared = _may_share(k, distinct)
    touched = _roots_used([lp])
    written = {base_buffer(x.dest) for x in lp.walk() if isinstance(x, mem.StoreOp)}
    around = _roots_used([op for op in k.fn.entry.ops if op is not top])

    def owned(buf: Value) -> bool:  # not GM: a block-local array, one copy per block
        return buf in gm and not any(t is not buf and shared(buf, t) for t in touched)

    if not independent(lp, owned) or partial_writes_visible(lp, _hidden(k)):
        return None
    return None if any(shared(w, r) for w in written for r in around) else lp


def split_rows(k: ScalarKernel, lp: loop.ForOp) -> list[tuple[Value, int]]:
    """The (GM array, axis) pairs the split loop stores into with its variable as the
    index of that axis (``independent`` proved every shared GM store is one)."""
    gm = {a.value for a in k.arrays if a.value is not None and not a.per_block}
    iv = lp.induction_var
    rows: list[tuple[Value, int]] = []
    for op in lp.walk():
        if isinstance(op, mem.StoreOp) and op.dest in gm:
            axis = next((i for i, v in enumerate(op.indices) if v is iv), None)
            if axis is not None and (op.dest, axis) not in rows:
                rows.append((op.dest, axis))
    return rows


def _fast_loop(op: Operation) -> loop.ForOp | None:
    """``op`` when it is a ``loop.for``; the checked-free copy of a loop versioned by
    ``hoist-checks`` (the unchanged copy then runs in block 0 only, when the hoisted
    checks fail: both copies never run in one launch); else ``None``."""
    if isinstance(op, loop.ForOp):
        return op
    if isinstance(op, loop.IfOp) and op.attributes.get("versioned") and not op.outputs:
        then = [x for x in op.then_region.blocks[0].ops if not isinstance(x, loop.YieldOp)]
        if len(then) == 1 and isinstance(then[0], loop.ForOp):
            return then[0]
    return None


def _stores_into(op: Operation, roots: set[Value]) -> bool:
    return any(isinstance(x, mem.StoreOp) and base_buffer(x.dest) in roots for x in op.walk())


def _roots_used(ops: Sequence[Operation]) -> set[Value]:
    """The buffers ``ops`` load, store or view (``mem.dim`` reads only the shape)."""
    return {base_buffer(v) for op in ops for inner in op.walk()
            if not isinstance(inner, mem.DimOp | func.ReturnOp)
            for v in inner.operand_values if isinstance(v.type, MemRefType)}


def _may_share(k: ScalarKernel,
               distinct: Callable[[int, int], bool]) -> Callable[[Value, Value], bool]:
    """Whether two root buffers of ``k`` may be the same memory: the same buffer, or two
    inputs ``distinct`` cannot tell apart (results, temporaries, constants are fresh)."""
    inputs = {a.value: a.index for a in k.arrays if a.source == "input"}

    def shared(a: Value, b: Value) -> bool:
        return a is b or a in inputs and b in inputs and not distinct(inputs[a], inputs[b])
    return shared


def _hidden(k: ScalarKernel) -> Callable[[Value], bool]:
    """Whether the caller never sees a root buffer of ``k`` once the kernel failed: the
    kernel's own allocations, and inputs that are copies or arrays the function
    allocated (it raises before returning them)."""
    def hidden(buf: Value) -> bool:
        if isinstance(buf, BlockArgument) and buf.block is k.fn.entry:
            outer = k.inputs[buf.index]
            if isinstance(outer.type, TensorType):
                return True
            buf = base_buffer(outer)
        return isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp)
    return hidden


__all__ = ["find_parallel_loop", "split_rows"]
