"""Loop-level module -> LLVM IR text plus the kernel's calling-convention description."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyasc.backend.llvm.codegen import EmitFn, ModuleContext
from pyasc.backend.llvm.emit_alias import ALIAS_EMITTERS
from pyasc.backend.llvm.emit_arith import ARITH_EMITTERS
from pyasc.backend.llvm.emit_call import CALL_EMITTERS, declare_functions, emit_function
from pyasc.backend.llvm.emit_control import CONTROL_EMITTERS, prefer_vector_width
from pyasc.backend.llvm.emit_math import MATH_EMITTERS
from pyasc.backend.llvm.emit_mem import MEM_EMITTERS
from pyasc.backend.llvm.entry import emit_core, emit_descriptor_entry, emit_fast_entry
from pyasc.backend.llvm.errrecord import record_slots
from pyasc.backend.llvm.native import eligible, emit_native_entry
from pyasc.backend.llvm.plan import plan_entry
from pyasc.errors import InternalCompilerError
from pyasc.ir.ops.func import AssertOp, ModuleOp
from pyasc.runtime.abi import KernelABI

EMITTERS: dict[type, EmitFn] = {
    **ARITH_EMITTERS, **MATH_EMITTERS, **MEM_EMITTERS, **CONTROL_EMITTERS, **CALL_EMITTERS,
    **ALIAS_EMITTERS,
}
"""Every op the CPU backend lowers: ``{op class: emit function}``."""


def kernel_symbol(entry: str) -> str:
    """The native symbol of an entry function (prefixed: never clashes with libc/libm)."""
    return f"pyasc.kernel.{entry}"


def generate(module: ModuleOp, entry: str, result_params: Sequence[int | None] = (),
             fastmath: bool = False, native: dict[str, Any] | None = None,
             vector_bits: int = 256) -> tuple[str, KernelABI]:
    """LLVM IR text of ``entry`` (its entry points) and its :class:`KernelABI`; with a
    ``native`` request (``Program.call_data["native"]``) also the native Python entry,
    when the kernel's calling convention allows one.  ``vector_bits`` over 256 (an
    AVX-512 host) is asked of every function: LLVM's X86 tuning of such CPUs
    (Ice Lake, Sapphire Rapids) otherwise keeps 256-bit vectors, which measured 20-25%
    slower on exp/tanh/gelu over 4M floats (benchmarks/RESULTS.md)."""
    try:
        func = module.get(entry)
    except KeyError:
        raise InternalCompilerError(f"entry function '{entry}' not found in module") from None
    plan = plan_entry(func, result_params)
    mc = ModuleContext(entry, fastmath=fastmath)
    mc.record_values = max((len(op.values) for op in module.walk()
                            if isinstance(op, AssertOp)), default=0)
    if mc.record_values:
        plan.error_slot = plan.result_slots
        plan.result_slots += record_slots(mc.record_values)
    for callee in declare_functions(mc, module, entry):
        emit_function(mc, callee, EMITTERS)
    symbol = kernel_symbol(entry)
    core = emit_core(mc, func, plan, EMITTERS, symbol)
    emit_descriptor_entry(mc, plan, core, symbol)
    fast = emit_fast_entry(mc, plan, core, symbol)
    pycall = emit_native_entry(mc.module, plan, core, symbol, native) \
        if eligible(plan, native) else None
    abi = KernelABI(symbol=symbol, py_symbol=fast.name, params=tuple(plan.params),
                    results=tuple(plan.results), buffers=tuple(plan.buffers),
                    errors=tuple(mc.errors), arg_slots=plan.arg_slots,
                    result_slots=plan.result_slots, native=pycall,
                    error_slot=plan.error_slot)
    if vector_bits > 256:
        for fn in mc.module.functions:
            if not fn.is_declaration:
                prefer_vector_width(fn, vector_bits)
    return mc.text(), abi
