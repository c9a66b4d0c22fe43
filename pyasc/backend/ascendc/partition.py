"""Splitting a function into host ops, vector kernels and scalar regions.

The host never computes on element data; it runs shape and tiling arithmetic, allocates
buffers and moves data (views, copies, fills, broadcasts, reshapes, single-element
reads and writes outside loops).  A loop or branch stays on the host only when it is
pure scalar math; one that touches array elements is device code.  Kernels do everything
else: each ``fusion.group`` tries to become a vector kernel, and every maximal run of
other device ops (loops with array work, unfused tensor ops, matmul, gather...) becomes
one scalar region.  A matmul the caller's ``cube`` predicate accepts (see ``cube_plan``)
is an item of its own: a cube kernel; so is a loop nest of window copies that its
``copy`` predicate accepts (``copy_loops``): a DMA kernel.

Pure host ops (no effects) that do not use a value of the open scalar region are
emitted before it, so host scalar math between device statements does not split a
region; any other host op closes the region first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import ScalarType

HOST_OPS: frozenset[type[Operation]] = frozenset({
    arith.ConstantOp, mem.AllocOp, mem.DimOp, mem.SubviewOp, mem.TransposeOp,
    mem.ReshapeOp, mem.ToTensorOp, mem.LoadOp, mem.StoreOp, mem.WriteOp, mem.CopyOp,
    mem.ContiguousOp, mem.FillOp, mem.DeallocOp, tensor.DimOp, tensor.ReshapeOp,
    tensor.TransposeOp, tensor.SliceOp, tensor.BroadcastOp, tensor.ExtractOp,
    tensor.ConcatOp, func.AssertOp, func.ReturnOp, loop.YieldOp, loop.ConditionOp,
})
_CONTROL = (loop.ForOp, loop.WhileOp, loop.IfOp)
_ELEMENT_ACCESS = frozenset({mem.LoadOp, mem.StoreOp, mem.WriteOp, mem.CopyOp, mem.FillOp,
                             mem.ToTensorOp, mem.ContiguousOp, tensor.ExtractOp,
                             tensor.SliceOp, tensor.ConcatOp, tensor.BroadcastOp})
_HOISTABLE = frozenset({"pure", "allocates", "constant"})


def is_host(op: Operation) -> bool:
    """True if the host program runs ``op`` itself (see the module docstring)."""
    if type(op) in HOST_OPS:
        return True
    module = type(op).__module__
    if module in (arith.__name__, m.__name__):
        return all(isinstance(v.type, ScalarType)
                   for v in [*op.operand_values, *op.result_values])
    if isinstance(op, _CONTROL):  # loops of scalar math only: element accesses are device work
        return all(is_host(inner) and type(inner) not in _ELEMENT_ACCESS
                   for region in op.region_list for block in region.blocks
                   for inner in block.ops)
    return False


@dataclass
class HostItem:
    op: Operation


@dataclass
class GroupItem:
    op: FusionGroupOp


@dataclass
class ScalarItem:
    ops: list[Operation] = field(default_factory=list)


@dataclass
class CubeItem:
    op: Operation


@dataclass
class CopyItem:
    op: Operation


Item = HostItem | GroupItem | ScalarItem | CubeItem | CopyItem


def partition(fn: FuncOp, cube: Callable[[Operation], bool] | None = None,
              copy: Callable[[Operation], bool] | None = None) -> list[Item]:
    """The entry block of ``fn`` as an ordered list of host ops, groups, regions,
    cube matmuls (the ops ``cube`` accepts) and copy loops (those ``copy`` accepts)."""
    items: list[Item] = []
    region: list[Operation] = []

    def close() -> None:
        nonlocal region
        if region:
            items.append(ScalarItem(region))
            region = []

    for op in fn.entry.ops:
        if isinstance(op, FusionGroupOp):
            close()
            items.append(GroupItem(op))
        elif cube is not None and cube(op):
            close()
            items.append(CubeItem(op))
        elif copy is not None and copy(op):
            close()
            items.append(CopyItem(op))
        elif is_host(op):
            if region and (_uses_any(op, region) or not _hoistable(op)):
                close()
            items.append(HostItem(op))
        else:
            region.append(op)
    close()
    return items


def _hoistable(op: Operation) -> bool:
    return not op.region_list and bool(op.traits & _HOISTABLE) and \
        not op.traits & {"writes", "checks", "reads"}


def _uses_any(op: Operation, ops: list[Operation]) -> bool:
    defined: set[Value] = {r for o in ops for r in o.result_values}
    return any(v in defined for inner in op.walk() for v in inner.operand_values)
