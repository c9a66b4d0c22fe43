"""Emitters for ``mem`` ops: allocation, constants, element access and views.

``mem.alloc`` calls ``aligned_alloc(64, size)`` (size rounded up to 64 bytes; a failure or
a negative/overflowing size returns the "memory" error) unless the allocation is a
preallocated result buffer, whose pointer the runtime stores in the result slots (see
``plan.py``); a *tracked* allocation (a result's memory chosen at run time) is linked
into the call's list of them (``tracking.py``).  A small buffer of static shape (at most
``STACK_BYTES``) freed in the block that allocates it, and used only by element
accesses, views and that ``mem.dealloc``, is a 64-byte aligned stack slot of the
function instead (one slot per op, allocated on entry: each execution's lifetime ends
before the next begins; an outlined parallel loop body is a function of its own, so
threads never share one): the 16-lane buffers of reductions inside a parallel row loop
cost an ``aligned_alloc``/``free`` pair per row otherwise.  Views only recompute the data
pointer, dims and strides.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from pyasc.backend.llvm import tracking
from pyasc.backend.llvm.codegen import FunctionEmitter, where
from pyasc.backend.llvm.lltypes import (
    I1,
    I64,
    PTR,
    from_storage,
    i64,
    natural_align,
    opaque,
    storage_type,
    to_storage,
)
from pyasc.backend.llvm.memref import MemRef, imul
from pyasc.ir.ops import mem
from pyasc.ir.types import DYN, MemRefType

ALIGNMENT = 64
_MAX_BYTES = 1 << 62  # larger requests fail as "out of memory" without calling malloc
STACK_BYTES = 4096
"""Largest private buffer given a stack slot (the pool's threads have 8 MiB stacks)."""
_STACK_USES = (mem.LoadOp, mem.StoreOp, mem.DimOp, mem.ToTensorOp, mem.WriteOp,
               mem.FillOp, mem.CopyOp)


def _emit_alloc(fe: FunctionEmitter, op: mem.AllocOp) -> None:
    t: MemRefType = op.result.type
    dyn = iter(fe.get(v) for v in op.dims)
    shape = [i64(d) if d != DYN else next(dyn) for d in t.shape]
    data = fe.prealloc.get(op)
    if data is None and _on_stack(fe, op):
        slot = fe.entry_builder().alloca(ir.ArrayType(ir.IntType(8), _static_bytes(t)))
        slot.align = ALIGNMENT
        data = opaque(slot)
        fe.on_stack.add(op.result)
    elif op in fe.tracked:  # the call's list frees it unless a result lies in it
        base, size = _malloc(fe, op, t, shape, tracking.HEADER)
        data = tracking.link(fe, base, size)
    elif data is None:
        data, _ = _malloc(fe, op, t, shape)
        fe.allocs.add(op.result, data)
    fe.set(op.result, MemRef.build(fe.b, t, data, shape, None))


def _static_bytes(t: MemRefType) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * t.element.itemsize


def _on_stack(fe: FunctionEmitter, op: mem.AllocOp) -> bool:
    """Whether ``op``'s buffer takes a stack slot (module docstring)."""
    t: MemRefType = op.result.type
    if DYN in t.shape or _static_bytes(t) > STACK_BYTES or op in fe.tracked:
        return False
    block = op.parent
    if not any(isinstance(o, mem.DeallocOp) and o.buffer is op.result for o in block.ops):
        return False
    stack = [op.result]
    while stack:
        for user, idx in stack.pop().uses:
            if user.has_trait("view") and idx == 0:
                stack.extend(user.result_values)
            elif not (isinstance(user, _STACK_USES) or isinstance(user, mem.DeallocOp)
                      and user.parent is block):
                return False
    return True


def _malloc(fe: FunctionEmitter, op: mem.AllocOp, t: MemRefType, shape: list[ir.Value],
            header: int = 0) -> tuple[ir.Value, ir.Value]:
    """``aligned_alloc`` of ``header`` bytes plus ``t``'s (rounded up to the alignment):
    (the pointer, the rounded data size)."""
    b = fe.b
    code = fe.mc.error_code("memory", f"{where(op)}: cannot allocate a buffer of type {t}")
    size, ok = _byte_size(fe, t, shape)
    if ok is not None:  # negative or overflowing dims
        fe.exit_unless(ok, ir.Constant(ir.IntType(32), code))
    # round up to a multiple of the alignment (aligned_alloc's contract), at least one block
    padded = b.and_(b.add(size, i64(ALIGNMENT - 1)), i64(-ALIGNMENT))
    padded = b.select(b.icmp_signed(">", padded, i64(0)), padded, i64(ALIGNMENT))
    alloc = fe.mc.function("aligned_alloc", PTR, [I64, I64], ("nounwind",))
    alloc.return_value.add_attribute("noalias")
    data = b.call(alloc, [i64(ALIGNMENT), b.add(padded, i64(header)) if header else padded])
    fe.exit_unless(b.icmp_unsigned("!=", data, ir.Constant(PTR, None)),
                   ir.Constant(ir.IntType(32), code))
    return data, padded


def _byte_size(fe: FunctionEmitter, t: MemRefType,
               shape: list[ir.Value]) -> tuple[ir.Value, ir.Value | None]:
    """(size in bytes, i1 "size is valid" or None when statically valid)."""
    b = fe.b
    static = t.element.itemsize
    for d in shape:
        if isinstance(d, ir.Constant):
            static *= d.constant
    if static >= _MAX_BYTES:
        return i64(0), ir.Constant(I1, 0)
    size: ir.Value = i64(static)
    ok: ir.Value | None = None
    mul = fe.mc.function("llvm.smul.with.overflow.i64", ir.LiteralStructType([I64, I1]),
                         [I64, I64])
    for d in shape:
        if isinstance(d, ir.Constant):
            continue
        res = b.call(mul, [size, d])
        valid = b.and_(b.not_(b.extract_value(res, 1)), b.icmp_signed(">=", d, i64(0)))
        size = b.extract_value(res, 0)
        ok = valid if ok is None else b.and_(ok, valid)
    if ok is not None:
        ok = b.and_(ok, b.icmp_signed("<", size, i64(_MAX_BYTES)))
    return size, ok


def _emit_dealloc(fe: FunctionEmitter, op: mem.DeallocOp) -> None:
    if op.buffer in fe.on_stack:
        return
    free = fe.mc.function("free", ir.VoidType(), [PTR], ("nounwind",))
    fe.b.call(free, [fe.memref(op.buffer).data])
    fe.allocs.free(op.buffer)


def _emit_constant(fe: FunctionEmitter, op: mem.ConstantOp) -> None:
    t: MemRefType = op.result.type
    arr = np.ascontiguousarray(op.attributes["value"].array, dtype=t.element.to_numpy()
                               if t.element.name != "bf16" else np.float32)
    raw = _bf16_bytes(arr) if t.element.name == "bf16" else arr.tobytes()
    g = fe.mc.global_bytes(raw)
    fe.set(op.result, MemRef.build(fe.b, t, g, [None] * t.rank, None))


def _bf16_bytes(arr: np.ndarray) -> bytes:
    bits = arr.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(arr.astype(np.float32))
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded.tobytes()


def _emit_dim(fe: FunctionEmitter, op: mem.DimOp) -> None:
    fe.set(op.result, fe.memref(op.source).shape[op.attributes["axis"]])


def _emit_load(fe: FunctionEmitter, op: mem.LoadOp) -> None:
    m = fe.memref(op.source)
    t = m.type.element
    ptr = m.address(fe.b, [fe.get(i) for i in op.indices])
    raw = fe.b.load(ptr, typ=storage_type(t), align=natural_align(t))
    fe.set(op.result, from_storage(fe.b, raw, t))


def _emit_store(fe: FunctionEmitter, op: mem.StoreOp) -> None:
    m = fe.memref(op.dest)
    t = m.type.element
    ptr = m.address(fe.b, [fe.get(i) for i in op.indices])
    fe.b.store(to_storage(fe.b, fe.get(op.value), t), ptr, align=natural_align(t))


def _emit_subview(fe: FunctionEmitter, op: mem.SubviewOp) -> None:
    src = fe.memref(op.source)
    offsets, sizes, steps = op.parts()
    b = fe.b
    data = src.address(b, [fe.get(v) for v in offsets])
    drop = set(op.attributes.get("drop", ()))
    shape, strides = [], []
    for axis, (size, step) in enumerate(zip(sizes, steps, strict=True)):
        if axis not in drop:
            shape.append(fe.get(size))
            strides.append(imul(b, src.strides[axis], fe.get(step)))
    fe.set(op.result, MemRef.build(b, op.result.type, data, shape, strides))


def _emit_transpose(fe: FunctionEmitter, op: mem.TransposeOp) -> None:
    src = fe.memref(op.source)
    perm = op.attributes["perm"]
    fe.set(op.result, MemRef.build(fe.b, op.result.type, src.data,
                                   [src.shape[p] for p in perm],
                                   [src.strides[p] for p in perm]))


def _emit_reshape(fe: FunctionEmitter, op: mem.ReshapeOp) -> None:
    src = fe.memref(op.source)
    t: MemRefType = op.result.type
    dyn = iter(fe.get(v) for v in op.dims)
    shape = [i64(d) if d != DYN else next(dyn) for d in t.shape]
    fe.set(op.result, MemRef.build(fe.b, t, src.data, shape, None))


MEM_EMITTERS = {
    mem.AllocOp: _emit_alloc,
    mem.DeallocOp: _emit_dealloc,
    mem.ConstantOp: _emit_constant,
    mem.DimOp: _emit_dim,
    mem.LoadOp: _emit_load,
    mem.StoreOp: _emit_store,
    mem.SubviewOp: _emit_subview,
    mem.TransposeOp: _emit_transpose,
    mem.ReshapeOp: _emit_reshape,
}
"""``{op class: emit function}`` for the ``mem`` family."""
