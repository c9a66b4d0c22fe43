"""A kernel's native functions (the calling convention is in ``pyasc.runtime.abi``).

* ``<symbol>.core`` (internal): the body of the IR function, reading descriptors;
  preallocated result buffers arrive as ``noalias`` pointer parameters;
* ``<symbol>``: the portable descriptor entry, a thin wrapper around the core;
* ``<symbol>.py``: the fast entry used from Python.  It reads numpy's public
  ``PyArrayObject_fields`` at fixed offsets: ``data`` (16), ``nd`` (24), ``dimensions``
  (32), ``strides`` (40, bytes) and ``flags`` (64), checks rank, static dims, layout
  class, alignment and writeability, builds the descriptors on its stack and calls the
  core.  The runtime confirms these offsets once per process against real arrays and
  uses the descriptor entry if they ever differ.

Aliasing: array parameters are NOT marked ``noalias`` (numpy views may overlap); LLVM's
loop vectorizer then adds run-time overlap checks and keeps a scalar fallback loop.
Result buffers made for the call cannot overlap anything, so they are ``noalias``.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm import emit_poll, tracking
from pyasc.backend.llvm.codegen import FunctionEmitter, ModuleContext
from pyasc.backend.llvm.errrecord import init_record
from pyasc.backend.llvm.lltypes import (
    F16,
    F32,
    F64,
    I1,
    I32,
    I64,
    PTR,
    from_storage,
    i64,
    opaque,
    storage_type,
    to_storage,
)
from pyasc.backend.llvm.memref import MemRef
from pyasc.backend.llvm.plan import EntryPlan
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import DYN, MemRefType, ScalarType
from pyasc.runtime.abi import ERR_ARGS, PYARRAY_OFFSETS

NPY_ALIGNED = 0x0100
NPY_WRITEABLE = 0x0400


def mark_wrapper(fn: ir.Function) -> None:
    """Attributes of an entry wrapper: straight-line argument handling around one call
    of the core, run once per kernel call.  ``optnone`` keeps LLVM's O3 pipeline and
    code generator from spending a third of a small kernel's compile time on it; the
    unoptimized wrapper costs a few nanoseconds per call."""
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")


def slot_ptr(b: ir.IRBuilder, base: ir.Value, index: int) -> ir.Value:
    """The address of 8-byte slot ``index`` of the slot array at ``base``."""
    return b.gep(base, [i64(index)], inbounds=True, source_etype=I64) if index else base


def emit_core(mc: ModuleContext, func: FuncOp, plan: EntryPlan, emitters: dict,
              symbol: str) -> ir.Function:
    """``int32 <symbol>.core(u64 *args, u64 *res, ptr noalias buf...)``: the body of
    ``func``.  Preallocated result buffers come in as ``noalias`` parameters (the runtime
    made them for this call: nothing else points into them), which lets LLVM vectorize
    writes into them without overlap checks against the parameters."""
    n_pre = sum(b.prealloc for b in plan.buffers)
    fn = ir.Function(mc.module, ir.FunctionType(I32, [PTR, PTR] + [PTR] * n_pre),
                     name=symbol + ".core")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # both entries call it: one copy of the body
    args_ptr, res_ptr = fn.args[:2]
    args_ptr.name, res_ptr.name = "args", "res"
    fe = FunctionEmitter(mc, fn, emitters)
    fe.polling = emit_poll.polls_in(func)
    for alloc, ptr in zip(plan.buffer_of_alloc, fn.args[2:], strict=True):
        ptr.add_attribute("noalias")
        fe.prealloc[alloc] = ptr
    fe.tracked = set(plan.tracked)
    tracking.start(fe)
    if plan.error_slot >= 0:
        fe.error_record = slot_ptr(fe.b, res_ptr, plan.error_slot)
        init_record(fe.b, fe.error_record)
    for arg, spec in zip(func.entry.args, plan.params, strict=True):
        fe.set(arg, _load_param(fe.b, args_ptr, spec.slot, arg.type))
    term = fe.emit_block(func.entry)
    assert term is not None
    _store_results(fe, plan, term.operand_values, res_ptr)
    fe.b.ret(ir.Constant(I32, 0))
    return fn


def emit_descriptor_entry(mc: ModuleContext, plan: EntryPlan, core: ir.Function,
                          symbol: str) -> ir.Function:
    """``int32 <symbol>(u64 *args, u64 *res)``: the portable entry (see ``abi.py``)."""
    fn = ir.Function(mc.module, ir.FunctionType(I32, [PTR, PTR]), name=symbol)
    mark_wrapper(fn)
    args_ptr, res_ptr = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bufs = [b.load(slot_ptr(b, res_ptr, buf.slot), typ=PTR, align=8)
            for buf in plan.buffers if buf.prealloc]
    b.ret(b.call(core, [args_ptr, res_ptr, *bufs]))
    return fn


def _load_param(b: ir.IRBuilder, args: ir.Value, slot: int, t: object) -> object:
    if isinstance(t, ScalarType):
        raw = b.load(slot_ptr(b, args, slot), typ=storage_type(t), align=8)
        return from_storage(b, raw, t)
    assert isinstance(t, MemRefType)
    data = b.load(slot_ptr(b, args, slot), typ=PTR, align=8)
    shape = [b.load(slot_ptr(b, args, slot + 1 + k), typ=I64, align=8) if d == DYN else None
             for k, d in enumerate(t.shape)]
    strides = None
    if t.strides is not None:
        strides = [b.load(slot_ptr(b, args, slot + 1 + t.rank + k), typ=I64, align=8)
                   if s == DYN else None for k, s in enumerate(t.strides)]
    return MemRef.build(b, t, data, shape, strides)


def _store_results(fe: FunctionEmitter, plan: EntryPlan, values: list,
                   res: ir.Value) -> None:
    b = fe.b
    for v, spec in zip(values, plan.results, strict=True):
        if spec.slot < 0:  # the caller knows the object without a descriptor
            continue
        if spec.kind == "scalar":
            t = v.type
            b.store(to_storage(b, fe.get(v), t), slot_ptr(b, res, spec.slot), align=8)
            continue
        m = fe.memref(v)
        for k, part in enumerate(m.components()):
            b.store(part, slot_ptr(b, res, spec.slot + k), align=8)
    settled = {k for _, k in plan.settle}  # the list of tracked allocations tells
    for k, (buf, base) in enumerate(zip(plan.buffers, plan.buffer_base, strict=True)):
        if not buf.prealloc and k not in settled:
            b.store(fe.memref(base).data, slot_ptr(b, res, buf.slot), align=8)
    tracking.settle(fe, [(fe.memref(v).data, slot_ptr(b, res, plan.buffers[k].slot))
                         for v, k in plan.settle])


def fast_param_types(plan: EntryPlan) -> list[ir.Type]:
    """LLVM parameter types of the fast entry (see ``pyasc.runtime.abi``)."""
    types: list[ir.Type] = []
    for spec in plan.params:
        if spec.kind == "array":
            types.append(PTR)
        else:
            types.append(F64 if ScalarType(spec.dtype).is_float else I64)
    return types + [PTR] * sum(b.prealloc for b in plan.buffers) + [PTR]


def emit_fast_entry(mc: ModuleContext, plan: EntryPlan, core: ir.Function,
                    symbol: str) -> ir.Function:
    """``int32 <symbol>.py(params..., prealloc buffers..., u64 *res)``: validate numpy
    arrays, build the descriptors on the stack and call ``core``."""
    fnty = ir.FunctionType(I32, fast_param_types(plan))
    fn = ir.Function(mc.module, fnty, name=symbol + ".py")
    mark_wrapper(fn)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    desc = opaque(b.alloca(I64, size=i64(max(1, plan.arg_slots)), name="desc"))
    local = opaque(b.alloca(I64, size=i64(max(1, plan.result_slots)), name="res"))
    ok: ir.Value = ir.Constant(I1, 1)
    for spec, arg in zip(plan.params, fn.args, strict=False):
        if spec.kind == "scalar":
            value = _scalar_to_storage(b, arg, ScalarType(spec.dtype))
            b.store(value, slot_ptr(b, desc, spec.slot), align=8)
        else:
            ok = b.and_(ok, unpack_array(b, arg, spec, desc))
    extra = iter(fn.args[len(plan.params):])
    bufs = [_field(b, next(extra), "data", PTR) for buf in plan.buffers if buf.prealloc]
    res = next(extra)
    good, bad = fn.append_basic_block("call"), fn.append_basic_block("bad_args")
    b.cbranch(ok, good, bad)
    b.position_at_end(bad)
    b.ret(ir.Constant(I32, ERR_ARGS))
    b.position_at_end(good)
    rc = b.call(core, [desc, local, *bufs])
    for slot in _caller_slots(plan):
        b.store(b.load(slot_ptr(b, local, slot), typ=I64, align=8), slot_ptr(b, res, slot), align=8)
    b.ret(rc)
    return fn


def _caller_slots(plan: EntryPlan) -> list[int]:
    """Result slots the caller reads (all but the preallocated buffers' pointers)."""
    pre = {buf.slot for buf in plan.buffers if buf.prealloc}
    return [s for s in range(plan.result_slots) if s not in pre]


def _scalar_to_storage(b: ir.IRBuilder, arg: ir.Value, t: ScalarType) -> ir.Value:
    """A fast-entry scalar (int64 or double) as the storage value of type ``t``."""
    if t.is_float:
        if t.name == "f64":
            return arg
        if t.name == "f16":
            return b.fptrunc(arg, F16)  # one rounding, straight from double
        return to_storage(b, b.fptrunc(arg, F32), t)
    width = storage_type(t).width
    return arg if width == 64 else b.trunc(arg, ir.IntType(width))


def _field(b: ir.IRBuilder, obj: ir.Value, name: str, ty: ir.Type) -> ir.Value:
    ptr = b.gep(obj, [i64(PYARRAY_OFFSETS[name])], inbounds=True, source_etype=ir.IntType(8))
    return b.load(ptr, typ=ty, align=4 if ty == I32 else 8)


def unpack_array(b: ir.IRBuilder, obj: ir.Value, spec, desc: ir.Value) -> ir.Value:
    """Copy one array's data/dims/strides into the descriptor; i1 "it fits the spec"."""
    rank = len(spec.shape)
    itemsize = ScalarType(spec.dtype).itemsize
    ok = b.icmp_signed("==", _field(b, obj, "nd", I32), ir.Constant(I32, rank))
    flags = _field(b, obj, "flags", I32)
    need = NPY_ALIGNED | (NPY_WRITEABLE if spec.writes else 0)
    ok = b.and_(ok, b.icmp_unsigned("==", b.and_(flags, ir.Constant(I32, need)),
                                    ir.Constant(I32, need)))
    b.store(_field(b, obj, "data", PTR), slot_ptr(b, desc, spec.slot), align=8)
    if rank == 0:
        return ok
    # With a wrong rank the dims/strides arrays may be shorter: read them only if nd fits.
    fits, done = b.function.append_basic_block("fits"), b.function.append_basic_block("done")
    before = b.block
    b.cbranch(ok, fits, done)
    b.position_at_end(fits)
    dims_p, strides_p = _field(b, obj, "dims", PTR), _field(b, obj, "strides", PTR)
    dims = [b.load(slot_ptr(b, dims_p, k), typ=I64, align=8) for k in range(rank)]
    bstrides = [b.load(slot_ptr(b, strides_p, k), typ=I64, align=8) for k in range(rank)]
    layout_ok = _check_layout(b, spec, itemsize, dims, bstrides)
    shift = i64(itemsize.bit_length() - 1)
    for k in range(rank):
        b.store(dims[k], slot_ptr(b, desc, spec.slot + 1 + k), align=8)
        b.store(b.ashr(bstrides[k], shift), slot_ptr(b, desc, spec.slot + 1 + rank + k), align=8)
    fits_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(I1)
    phi.add_incoming(ir.Constant(I1, 0), before)
    phi.add_incoming(layout_ok, fits_end)
    return phi


def _check_layout(b: ir.IRBuilder, spec, itemsize: int, dims: list, bstrides: list) -> ir.Value:
    """Static dims, stride divisibility and the layout class (numpy's definitions)."""
    ok: ir.Value = ir.Constant(I1, 1)
    for k, d in enumerate(spec.shape):
        if d != DYN:
            ok = b.and_(ok, b.icmp_signed("==", dims[k], i64(d)))
        if itemsize > 1:
            low = b.and_(bstrides[k], i64(itemsize - 1))
            ok = b.and_(ok, b.icmp_signed("==", low, i64(0)))
    if spec.strides is None:
        return b.and_(ok, _c_contiguous(b, itemsize, dims, bstrides))
    for k, s in enumerate(spec.strides):
        if s != DYN:
            small = b.icmp_signed("<=", dims[k], i64(1))
            same = b.icmp_signed("==", bstrides[k], i64(s * itemsize))
            ok = b.and_(ok, b.or_(small, same))
    return ok


def _c_contiguous(b: ir.IRBuilder, itemsize: int, dims: list, bstrides: list) -> ir.Value:
    """numpy's C_CONTIGUOUS: size-1 axes are ignored, any empty axis makes it true."""
    ok: ir.Value = ir.Constant(I1, 1)
    empty: ir.Value = ir.Constant(I1, 0)
    expected: ir.Value = i64(itemsize)
    for d, s in zip(reversed(dims), reversed(bstrides), strict=True):
        empty = b.or_(empty, b.icmp_signed("==", d, i64(0)))
        unit = b.icmp_signed("==", d, i64(1))
        ok = b.and_(ok, b.or_(unit, b.icmp_signed("==", s, expected)))
        expected = b.mul(expected, d)
    return b.or_(ok, empty)
