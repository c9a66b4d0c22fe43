"""Advanced indexing with several index arrays: ``tensor.gather_nd`` and ``mem.scatter``.

Both index the *leading* ``k`` axes of an array with ``k`` integer index operands
(tensors or scalars) that broadcast together to a shape ``B`` (numpy's rule); the
frontend transposes the indexed axes to the front first (a view).  Negative indices
wrap once; an index out of range is an ``IndexError`` (``bounds`` check; the optional
``array``/``axes`` attributes label its message with the user's names).

* ``gather_nd(source, indices*)``: numpy's ``source[i0, ..., ik-1]`` — a value of shape
  ``B + source.shape[k:]`` (a scalar when that is empty) with
  ``result[b, rest] = source[i0[b], ..., ik-1[b], rest]``.
* ``mem.scatter(updates, dest, indices*)``: numpy's ``dest[i0, ..., ik-1] = updates``
  — ``updates`` (a scalar or a tensor broadcasting to ``B + dest.shape[k:]``) is
  written position by position in C order of that shape, so for repeated indices the
  last write wins.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Operation, Value, attr
from pyasc.ir.ops.common import is_value_type, memref, require, same_element, tensor
from pyasc.ir.types import (
    DYN,
    ShapedType,
    TensorType,
    Type,
    broadcast_shapes,
    element_type,
)

LABELS = {"array": attr(str, optional=True), "axes": attr(tuple, optional=True)}
"""Optional labels for bounds messages: the user's name of the indexed array and the
user's axes of the index operands (the frontend moved them to the front)."""


def index_shape(indices: Sequence[Value]) -> tuple[int, ...]:
    """The broadcast shape ``B`` of the index operands (error if they cannot broadcast)."""
    shapes = []
    for v in indices:
        t = v.type
        require(is_value_type(t) and element_type(t).is_int,
                f"index operands must be integer scalars or tensors, got {t}")
        shapes.append(t.shape if isinstance(t, TensorType) else ())
    shape = broadcast_shapes(*shapes)
    require(shape is not None, "index operands cannot be broadcast together")
    return shape  # type: ignore[return-value]


def _check_leading(src: ShapedType, indices: Sequence[Value]) -> tuple[int, ...]:
    require(1 <= len(indices) <= src.rank,
            f"expected 1 to {src.rank} index operands, got {len(indices)}")
    return index_shape(indices) + src.shape[len(indices):]


def _compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(x == y or DYN in (x, y) for x, y in zip(a, b,
                                                                            strict=True))


class GatherNdOp(Operation):
    """``source[indices...]`` over the leading axes (see the module docstring)."""

    name = "tensor.gather_nd"
    operands = ("source", "indices*")
    results = ("result",)
    attrs = LABELS
    traits = frozenset({"pure"})

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        shape = _check_leading(src, self.indices)
        t = self.result.type
        if not shape:
            require(t == src.element, f"expected result {src.element}")
            return
        require(isinstance(t, TensorType) and t.element == src.element
                and _compatible(t.shape, shape),
                f"expected result {TensorType(shape, src.element)}, got {t}")


class ScatterOp(Operation):
    """``dest[indices...] = updates`` over the leading axes, last write wins."""

    name = "mem.scatter"
    operands = ("updates", "dest", "indices*")
    attrs = LABELS
    traits = frozenset({"writes", "checks"})

    def verify_op(self) -> None:
        dst = memref(self.dest.type)
        shape = _check_leading(dst, self.indices)
        u: Type = self.updates.type
        require(is_value_type(u), f"scattered updates must be a value, got {u}")
        same_element([u, dst])
        us = u.shape if isinstance(u, TensorType) else ()
        out = broadcast_shapes(us, shape)
        require(len(us) <= len(shape) and out is not None and _compatible(out, shape),
                f"cannot broadcast {u} to the indexed shape "
                f"{TensorType(shape, dst.element)}")
