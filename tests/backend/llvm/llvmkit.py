"""Helpers for the CPU backend tests: compile loop-level IR and build elementwise kernels."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from pyasc.backend.base import Program
from pyasc.backend.llvm import LLVMBackend, LLVMKernel
from pyasc.ir import Builder, Value, parse_module
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import DYN, MemRefType, ScalarType, index
from pyasc.runtime.cpu import CPUKernel


def compile_ir(module: ModuleOp | str, entry: str = "f", **options: object) -> LLVMKernel:
    """Compile a loop-level module (or its text) without the disk cache."""
    if isinstance(module, str):
        module = parse_module(module)
    key = hashlib.sha256(str(module).encode()).hexdigest()
    program = Program(module, entry, f"test:{key}", {"cache": False, **options})
    return LLVMBackend().compile(program)


def descriptor_twin(kernel: LLVMKernel) -> CPUKernel:
    """The same machine code called through the descriptor entry."""
    code = kernel._keepalive
    return CPUKernel(kernel.abi, code.addresses, keepalive=code, fast=False)


def both(kernel: LLVMKernel, args: Sequence[object]) -> list:
    """Call through the fast and the descriptor entry; check they agree; return one."""
    fast = kernel(list(args))
    slow = descriptor_twin(kernel)(list(args))
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return fast


Body = Callable[[Builder, list[Value]], list[Value]]


def elementwise(in_types: Sequence[ScalarType], body: Body, name: str = "f") -> ModuleOp:
    """``f(memref<?xT0>, ...) -> (memref<?xR0>, ...)`` with ``out_j[i] = body(x[i]..)[j]``.

    The module goes through print + parse, so it is also a text round-trip test.
    """
    mod = ModuleOp.empty()
    fn = FuncOp.empty(name, [MemRefType((DYN,), t) for t in in_types], [],
                      [f"x{i}" for i in range(len(in_types))])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    c0 = b.insert(arith.ConstantOp.new(0, index)).result
    c1 = b.insert(arith.ConstantOp.new(1, index)).result
    n = b.insert(mem.DimOp([fn.entry.args[0]], [index], {"axis": 0})).result
    for_op = b.insert(loop.ForOp.empty(c0, n, c1, iv_name="i"))
    body_block = for_op.body.blocks[0]
    with b.at(body_block):
        xs = [b.insert(mem.LoadOp([a, for_op.induction_var], [a.type.element])).result
              for a in fn.entry.args]
        outs = body(b, xs)
    pre = Builder.before(for_op)
    bufs = [pre.insert(mem.AllocOp([n], [MemRefType((DYN,), v.type)])).result for v in outs]
    with b.at(body_block):
        for v, buf in zip(outs, bufs, strict=True):
            b.insert(mem.StoreOp([v, buf, for_op.induction_var]))
        b.insert(loop.YieldOp([]))
    Builder.at_end(fn.entry).insert(func.ReturnOp(bufs))
    fn.set_result_types([buf.type for buf in bufs])
    return parse_module(str(mod))


def outer_pairs(values: Sequence[object], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of ``values`` (all representable in ``dtype``) as two arrays."""
    v = np.array(values, dtype=dtype)
    return np.repeat(v, len(v)), np.tile(v, len(v))
