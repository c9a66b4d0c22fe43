"""Values carried by structured control flow: phis of flattened parts, binding them back.

Memref values carried through loops and ifs are split into their SSA parts (data
pointer, dims, strides), one phi each (``codegen.flatten``); these helpers build the
phis, bind block arguments and results to parts, and read a region's terminator.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter, flatten, n_parts, part_types, unflatten
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import mem
from pyasc.ir.types import Type


def phis(fe: FunctionEmitter, types: Sequence[Type], inits: Sequence[Value],
         pred: ir.Block) -> list[ir.PhiInstr]:
    """One phi per flattened part of each of ``inits`` (of ``types``), entered from ``pred``."""
    phis = []
    for t, v in zip(types, inits, strict=True):
        for ty, part in zip(part_types(t), flatten(fe, v), strict=True):
            phi = fe.b.phi(ty)
            phi.add_incoming(part, pred)
            phis.append(phi)
    return phis


def part_phis(fe: FunctionEmitter, types: Sequence[ir.Type], parts: Sequence[ir.Value],
              pred: ir.Block) -> list[ir.PhiInstr]:
    """One phi per flattened part (types from ``part_types``), entered with ``parts``."""
    phis = []
    for ty, part in zip(types, parts, strict=True):
        phi = fe.b.phi(ty)
        phi.add_incoming(part, pred)
        phis.append(phi)
    return phis


def bind(fe: FunctionEmitter, targets: Sequence[Value], parts: Sequence[ir.Value]) -> None:
    """Bind ``targets`` (block args or op results) to flattened ``parts``."""
    i = 0
    for v in targets:
        n = n_parts(v.type)
        fe.set(v, unflatten(fe, v.type, parts[i:i + n]))
        i += n


def terminator_values(fe: FunctionEmitter, block: Block, name: str) -> list[Value]:
    """Emit ``block`` and return the operands of its terminator, which must be ``name``."""
    term = fe.emit_block(block)
    if term is None or term.name != name:
        raise InternalCompilerError(f"region must end in {name}, found "
                                    f"{term.name if term else 'nothing'}")
    return term.operand_values


def forget_carried(fe: FunctionEmitter, op: Operation) -> None:
    """Buffers a loop carries or frees from outside may be gone in a later iteration."""
    outer = [d.buffer for d in op.walk() if isinstance(d, mem.DeallocOp)
             and not defined_inside(op, d.buffer)]
    fe.allocs.forget(list(op.operand_values) + outer)


def defined_inside(op: Operation, v: Value) -> bool:
    """Whether ``v`` is defined by an op (or block) nested in ``op``."""
    owner = v.owner
    if isinstance(owner, Block):
        owner = owner.parent_op
    return owner is not None and op.is_ancestor_of(owner)
