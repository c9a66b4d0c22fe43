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
A loop ``hoist-checks`` versioned whose fast copy was batched (its branch holds a group)
is a :class:`BranchItem`: a branch on the host, each side partitioned like the entry
block.

Pure host ops (no effects) that do not use a value of the open scalar region are
emitted before it, so host scalar math between device statements does not split a
region; any other host op closes the region first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import arith, func, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.versioning import is_versioned, top_blocks
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


@dataclass
class BranchItem:
    """A top-level versioned ``loop.if`` (``hoist-checks``) whose fast branch holds a
    kernel of its own (a batched nest): the host evaluates the condition (scalar math on
    shapes) and runs the items of one branch, ``then_items`` (checks proven) or
    ``else_items`` (the unchanged loop, raising where it always did)."""

    op: loop.IfOp
    then_items: list[Item]
    else_items: list[Item]


Item = HostItem | GroupItem | ScalarItem | CubeItem | CopyItem | BranchItem


def partition(fn: FuncOp, cube: Callable[[Operation], bool] | None = None,
              copy: Callable[[Operation], bool] | None = None) -> list[Item]:
    """The entry block of ``fn`` as an ordered list of host ops, groups, regions,
    cube matmuls (the ops ``cube`` accepts), copy loops (those ``copy`` accepts) and
    branches (:class:`BranchItem`, each branch partitioned the same way)."""
    return partition_block(fn.entry, cube, copy)


def _branches_on_host(op: Operation) -> bool:
    """``op`` is a versioned ``loop.if`` with a group (or a ``channels`` loop, whose body
    is one) in one of its branches (as one scalar region it would run that group's
    batched nest as scalar code)."""
    return is_versioned(op) and any(
        isinstance(x, FusionGroupOp) or isinstance(x, loop.ForOp) and
        bool(x.attributes.get("channels"))
        for r in op.region_list for b in top_blocks(r.blocks[0]) for x in b.ops)


def partition_block(block: Block, cube: Callable[[Operation], bool] | None = None,
                    copy: Callable[[Operation], bool] | None = None) -> list[Item]:
    """:func:`partition` of the ops of ``block``."""
    items: list[Item] = []
    region: list[Operation] = []

    def close() -> None:
        nonlocal region
        if region:
            items.append(ScalarItem(region))
            region = []

    for op in block.ops:
        if isinstance(op, FusionGroupOp):
            close()
            items.append(GroupItem(op))
        elif _branches_on_host(op):
            close()
            assert isinstance(op, loop.IfOp)
            items.append(BranchItem(op, *(partition_block(r.blocks[0], cube, copy)
                                          for r in op.region_list)))
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
