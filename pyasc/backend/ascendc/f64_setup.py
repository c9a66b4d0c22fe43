"""float64 scalar set-up of fusion groups moves to the host (no double in vector kernels).

A group often starts with scalar arithmetic on its scalar inputs: ``var + eps`` casts a
Python float ``eps`` (float64) to the float32 of ``var``.  Computed in the kernel that
is ``double`` arithmetic on the AI Core, which no SoC documents (``soc.py``).  Before
partitioning, each top-level group whose scalar set-up touches float64 is split: that
set-up (scalar ops computed from the group's scalar inputs and constants alone) stays
in front of the group, where the host computes it in numpy's precision, and the group
gets the results (the float32 ``eps``) as inputs.  Scalar kernels do the same for their
own set-up (``scalar_f64.fold_host_scalars``).
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.analysis import NotVectorizable
from pyasc.backend.ascendc.grouping import dissolve, wrap_group
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import MemRefType, ScalarType, TensorType, Type, f64


def _f64(t: Type) -> bool:
    return t == f64 or isinstance(t, TensorType | MemRefType) and t.element == f64


def _setup(group: FusionGroupOp) -> list[Operation]:
    """The group's float64 scalar set-up ops (see the module docstring)."""
    body = group.body.blocks[0]
    known: set[Value] = {a for a in body.args if isinstance(a.type, ScalarType)}
    touched: set[Value] = set()
    ops = []
    for op in body.ops:
        if op.region_list or not op.result_values or \
                not all(isinstance(r.type, ScalarType) for r in op.result_values) or \
                not all(v in known for v in op.operand_values) or op.name == "fusion.yield":
            continue
        known.update(op.result_values)
        if any(_f64(v.type) for v in (*op.operand_values, *op.result_values)) or \
                any(v in touched for v in op.operand_values):
            touched.update(op.result_values)
            ops.append(op)
    return ops


def hoist_f64_setup(fn: FuncOp, probe: Callable[[FusionGroupOp], object]) -> None:
    """Split every top-level group of ``fn`` with float64 scalar set-up (module
    docstring); ``probe(group)`` raises ``NotVectorizable`` unless the rest still plans
    as one kernel (then the group stays whole, as before)."""
    for group in [op for b in top_blocks(fn.entry) for op in b.ops
                  if isinstance(op, FusionGroupOp)]:
        if not _setup(group):
            continue
        block = group.parent
        assert block is not None
        kind = group.attributes["kind"]
        ops = dissolve(group)
        produced = {r for op in ops for r in op.result_values}
        setup: set[Value] = set()
        rest = []
        for op in ops:
            inner = {v for v in op.operand_values if v in produced}
            scalar = not op.region_list and bool(op.result_values) and \
                all(isinstance(r.type, ScalarType) for r in op.result_values)
            if scalar and inner <= setup:
                setup.update(op.result_values)
            else:
                rest.append(op)
        if rest:
            regrouped = wrap_group(rest, kind)
            if not _plans(regrouped, probe):  # keep what planned before: the whole group
                members = set(dissolve(regrouped)) | {o for o in ops if o not in rest}
                wrap_group(sorted(members, key=block.index_of), kind)


def _plans(group: FusionGroupOp, probe: Callable[[FusionGroupOp], object]) -> bool:
    try:
        probe(group)
    except (NotVectorizable, OutOfMemoryError):
        return False
    return True


__all__ = ["hoist_f64_setup"]
