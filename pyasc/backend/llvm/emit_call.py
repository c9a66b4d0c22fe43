"""``func.call``: the module's other functions as internal LLVM functions.

Internal calling convention (never seen outside the module, so LLVM may inline it)::

    i32 @pyasc.fn.<name>(<parts of each parameter>..., ptr %out, ptr %record, ptr %state)

The parts are a value's SSA parts (a scalar's compute value; a memref's data pointer,
dims and strides).  ``%out`` points to a struct of the parts of all results, which the
callee fills before returning 0; a non-zero return is an error code of the module's
table (or ``ERR_INTERRUPT``), which the caller propagates after freeing its own
temporaries.  ``%record`` is the caller's error record (``errrecord.py``; NULL when the
module has none).  Buffers a callee returns belong to the caller from then on.
``%state`` is the caller's poll state (``emit_poll``): the callee polls against the
epoch the call has seen and continues the caller's countdown.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm import emit_poll
from pyasc.backend.llvm.codegen import (
    FunctionEmitter,
    ModuleContext,
    flatten,
    n_parts,
    part_types,
    unflatten,
)
from pyasc.backend.llvm.lltypes import I32, PTR
from pyasc.backend.llvm.plan import root_of
from pyasc.errors import InternalCompilerError
from pyasc.ir.ops import func
from pyasc.ir.ops.func import FuncOp, ModuleOp


def _result_struct(f: FuncOp) -> ir.LiteralStructType:
    return ir.LiteralStructType([ty for t in f.function_type.results for ty in part_types(t)])


def declare_functions(mc: ModuleContext, module: ModuleOp, entry: str) -> list[FuncOp]:
    """Declare every function but ``entry``; returns them (bodies come later)."""
    others = [f for f in module.functions if f.sym_name != entry]
    for f in others:
        params = [ty for t in f.function_type.inputs for ty in part_types(t)]
        fn = ir.Function(mc.module, ir.FunctionType(I32, params + [PTR, PTR, PTR]),
                         name=f"pyasc.fn.{f.sym_name}")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        mc.callees[f.sym_name] = (fn, _result_struct(f))
    return others


def emit_function(mc: ModuleContext, f: FuncOp, emitters: dict) -> None:
    """The body of a declared internal function."""
    fn, struct = mc.callees[f.sym_name]
    fe = FunctionEmitter(mc, fn, emitters)
    fe.poll_state, fe.polling = fn.args[-1], emit_poll.has_loops(f)
    args = iter(fn.args)
    for param in f.entry.args:
        fe.set(param, unflatten(fe, param.type, [next(args) for _ in
                                                 range(n_parts(param.type))]))
    out = next(args)
    record = next(args)
    fe.error_record = record if mc.record_values else None
    term = fe.emit_block(f.entry)
    if not isinstance(term, func.ReturnOp):
        raise InternalCompilerError(f"function '{f.sym_name}' does not end in func.return")
    parts = [p for v in term.operand_values for p in flatten(fe, v)]
    for k, part in enumerate(parts):
        fe.b.store(part, fe.b.gep(out, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                  inbounds=True, source_etype=struct))
    for v in term.operand_values:
        fe.allocs.free(root_of(v))  # the caller owns returned buffers
    emit_poll.before_return(fe)
    fe.b.ret(ir.Constant(I32, 0))


def _emit_call(fe: FunctionEmitter, op: func.CallOp) -> None:
    callee = fe.mc.callees.get(op.attributes["callee"])
    if callee is None:
        raise InternalCompilerError(f"call of unknown function '{op.attributes['callee']}'")
    fn, struct = callee
    out = fe.entry_alloca(struct)
    args = [p for v in op.args for p in flatten(fe, v)]
    record = fe.error_record if fe.error_record is not None else ir.Constant(PTR, None)
    rc = fe.b.call(fn, [*args, out, record, emit_poll.before_call(fe)])
    emit_poll.after_call(fe)
    fe.propagate(rc)
    parts = [fe.b.load(fe.b.gep(out, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                inbounds=True, source_etype=struct), typ=ty)
             for k, ty in enumerate(struct.elements)]
    i = 0
    for r in op.outputs:
        n = n_parts(r.type)
        fe.set(r, unflatten(fe, r.type, parts[i:i + n]))
        i += n


CALL_EMITTERS = {func.CallOp: _emit_call}
"""``{op class: emit function}`` for calls between functions of a module."""
