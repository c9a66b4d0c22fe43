"""A convolution's source that is a zero-padded copy of its input: the padding goes to
the conv kernel's ``LoadData`` 3D ``padList`` instead of a padded array on the host.

``pyasc.ops.conv2d`` (``_common.pad2d``) and hand-written code pad the same way: a new
buffer ``xp`` filled with zeros, then one write of the whole input ``x`` into its
interior window ``xp[:, :, pt:pt + h, pl:pl + w]``, then the im2col copies read ``xp``.
:func:`zero_padded` recognizes that buffer by its uses: the fill (of the constant 0),
the interior write (unit steps, constant offsets, the whole 4-D tensor ``x``) and reads
inside the copy nest, in that order in one block, and nothing else. A padded array
that anything else reads or writes (a second write, a read after the convolution, a
fill of another value) is not taken: the convolution then reads the padded array as
before (padList 0), which is correct whatever the padding holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.rewrite import constant_value, same_number
from pyasc.ir.types import MemRefType, TensorType


@dataclass(frozen=True)
class ZeroPadded:
    """``buffer`` is ``value`` (N, C, H, W) with ``pads`` (left, right, top, bottom)
    zeros around its last two axes, built by the host ops ``ops`` (its fill and the
    interior write), which a conv kernel with ``padList`` need not run."""

    value: Value
    pads: tuple[int, int, int, int]
    ops: tuple[Operation, ...]


def _interior(view: mem.SubviewOp, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(top, left) of a unit-step window of the whole (n, c, h, w) at (0, 0, top, left)
    of its source, or None."""
    if view.attributes.get("drop"):
        return None
    offsets, sizes, steps = (list(map(constant_value, part)) for part in view.parts())
    if any(not isinstance(v, int) for v in offsets + sizes + steps):
        return None
    if steps != [1, 1, 1, 1] or tuple(sizes) != shape or offsets[:2] != [0, 0]:
        return None
    return offsets[2], offsets[3]


def _write_into(view: Operation) -> mem.WriteOp | None:
    """The only use of ``view``'s result, if it is the destination of a ``mem.write``."""
    uses = list(view.result_values[0].uses)
    if len(uses) != 1 or not isinstance(uses[0][0], mem.WriteOp):
        return None
    write = uses[0][0]
    return write if write.operand_values[1] is view.result_values[0] else None


def zero_padded(buf: Value, nest: Operation) -> ZeroPadded | None:
    """``buf`` as a zero-padded copy of a 4-D tensor that only the copy loop ``nest``
    reads afterwards, or None."""
    t = buf.type
    if not (isinstance(buf, OpResult) and isinstance(buf.op, mem.AllocOp) and
            isinstance(t, MemRefType) and t.rank == 4):
        return None
    fills, views = [], []
    for user, _ in buf.uses:
        if nest.is_ancestor_of(user):
            continue
        if isinstance(user, mem.FillOp) and user.operand_values[1] is buf:
            fills.append(user)
        elif isinstance(user, mem.SubviewOp) and user.operand_values[0] is buf:
            views.append(user)
        else:
            return None
    if len(fills) != 1 or len(views) != 1:
        return None
    zero = constant_value(fills[0].operand_values[0])
    write = _write_into(views[0])
    if zero is None or not same_number(zero, type(zero)(0)) or write is None:
        return None
    value = write.operand_values[0]
    vt = value.type
    if not isinstance(vt, TensorType) or vt.element != t.element:
        return None
    at = _interior(views[0], vt.shape)
    block = nest.parent
    if at is None or any(op.parent is not block for op in (fills[0], write)) or not \
            block.index_of(fills[0]) < block.index_of(write) < block.index_of(nest):
        return None
    (top, left), (h, w) = at, vt.shape[2:]
    pads = (left, t.shape[3] - w - left, top, t.shape[2] - h - top)
    return ZeroPadded(value, pads, (fills[0], write)) if min(pads) >= 0 else None


__all__ = ["ZeroPadded", "zero_padded"]
