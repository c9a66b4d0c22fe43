"""``tensor``: whole-array operations on immutable array values (numpy semantics).

Shapes may hold ``?`` dims; ops that create a shaped value take one trailing ``index``
operand per ``?`` in their result type (``dims``).  Slices take normalized offsets,
sizes and steps (the frontend does Python's negative-index and clamping arithmetic
in IR, where it folds away for constants).

Reductions (``sum prod max min any all``) reduce ``axes`` (sorted, distinct) with
``keepdims``; reducing every axis without keepdims gives a scalar.  ``argmax``/
``argmin`` return ``index`` values; without an ``axis`` attribute they index the
flattened array.  ``matmul`` is numpy ``matmul`` (1-D, 2-D and batched).  ``gather`` is
numpy ``take(src, idx, axis)`` (negative indices wrap).  ``compress`` is ``src[mask]``
for a boolean mask over the leading dims, with a run-time length.  ``map`` is a fused
elementwise kernel: its region computes one element from scalar block arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Block, Location, Operation, Region, Value, attr
from pyasc.ir.ops.common import (
    check_axes,
    check_dynamic_dims,
    check_index_operands,
    elementwise_type,
    is_value_type,
    require,
    same_element,
    tensor,
)
from pyasc.ir.types import (
    DYN,
    ScalarType,
    ShapedType,
    TensorType,
    Type,
    broadcast_shapes,
    element_type,
    index,
)

PURE = frozenset({"pure"})


class FillOp(Operation):
    """``np.full(shape, value)``; ``zeros``/``ones``/``zeros_like`` use it."""

    name = "tensor.fill"
    operands = ("value", "dims*")
    results = ("result",)
    traits = PURE

    @classmethod
    def new(cls, value: Value, t: TensorType, dims: Sequence[Value] = (),
            loc: Location | None = None) -> FillOp:
        return cls([value, *dims], [t], loc=loc)

    def verify_op(self) -> None:
        t = tensor(self.result.type)
        require(self.value.type == t.element,
                f"fill value {self.value.type} does not match element {t.element}")
        check_dynamic_dims(t, self.dims)


class ArangeOp(Operation):
    """1-D ``start + i * step`` for ``i`` in ``range(len)``; the frontend computes len."""

    name = "tensor.arange"
    operands = ("start", "step", "dims*")
    results = ("result",)
    traits = PURE

    def verify_op(self) -> None:
        t = tensor(self.result.type)
        require(t.rank == 1, "arange result must be 1-D")
        require(self.start.type == t.element and self.step.type == t.element,
                "arange start and step must have the result's element type")
        check_dynamic_dims(t, self.dims)


class BroadcastOp(Operation):
    """``np.broadcast_to(src, shape)``."""

    name = "tensor.broadcast"
    operands = ("source", "dims*")
    results = ("result",)
    traits = PURE

    def verify_op(self) -> None:
        t = tensor(self.result.type)
        src = self.source.type
        require(is_value_type(src), f"broadcast source must be a value, got {src}")
        require(element_type(src) == t.element, "broadcast keeps the element type")
        src_shape = src.shape if isinstance(src, TensorType) else ()
        require(len(src_shape) <= t.rank, "broadcast cannot reduce rank")
        require(broadcast_shapes(src_shape, t.shape) is not None,
                f"cannot broadcast {src} to {t}")
        check_dynamic_dims(t, self.dims)


class ReshapeOp(Operation):
    """C-order reshape; element counts must agree (checked at run time if dynamic)."""

    name = "tensor.reshape"
    operands = ("source", "dims*")
    results = ("result",)
    traits = PURE

    def verify_op(self) -> None:
        src, t = tensor(self.source.type), tensor(self.result.type)
        require(src.element == t.element, "reshape keeps the element type")
        if src.is_static and t.is_static:
            require(src.num_elements() == t.num_elements(),
                    f"cannot reshape {src} into {t}")
        check_dynamic_dims(t, self.dims)


class TransposeOp(Operation):
    """``np.transpose(src, perm)``."""

    name = "tensor.transpose"
    operands = ("source",)
    results = ("result",)
    attrs = {"perm": attr(tuple)}
    traits = PURE

    def verify_op(self) -> None:
        src, t = tensor(self.source.type), tensor(self.result.type)
        perm = self.attributes["perm"]
        require(sorted(perm) == list(range(src.rank)), f"invalid permutation {perm}")
        require(t == TensorType(tuple(src.shape[p] for p in perm), src.element),
                f"transpose of {src} by {perm} is not {t}")


def _slice_parts(op: Operation, rank: int) -> tuple[list[Value], list[Value], list[Value]]:
    rest = op.operand_values[1:]
    require(len(rest) == 3 * rank, f"expected {3 * rank} offset/size/step operands")
    return rest[:rank], rest[rank:2 * rank], rest[2 * rank:]


def verify_slice(op: Operation, src: ShapedType, result: ShapedType) -> None:
    """Shared by ``tensor.slice`` and ``mem.subview``: ranks, drops and index operands."""
    offsets, sizes, steps = _slice_parts(op, src.rank)
    check_index_operands(offsets + sizes + steps, "slice operands")
    drop = op.attributes.get("drop", ())
    check_axes(drop, src.rank)
    require(result.rank == src.rank - len(drop),
            f"slice result rank {result.rank} != {src.rank} - {len(drop)} dropped")
    require(result.element == src.element, "slice keeps the element type")


class SliceOp(Operation):
    """Strided slice: ``operands = source, offsets[r], sizes[r], steps[r]``.

    Element ``k`` along axis ``a`` is ``source[offset[a] + k * step[a]]``; steps may be
    negative.  Axes listed in ``drop`` have size 1 and are removed (integer indexing).
    """

    name = "tensor.slice"
    operands = ("source", "indices*")
    results = ("result",)
    attrs = {"drop": attr(tuple, optional=True)}
    traits = PURE

    def parts(self) -> tuple[list[Value], list[Value], list[Value]]:
        return _slice_parts(self, tensor(self.source.type).rank)

    def verify_op(self) -> None:
        verify_slice(self, tensor(self.source.type), tensor(self.result.type))


class ExtractOp(Operation):
    """Read one element: ``source[indices]`` (indices normalized, in range)."""

    name = "tensor.extract"
    operands = ("source", "indices*")
    results = ("result",)
    traits = PURE

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        require(len(self.indices) == src.rank, f"expected {src.rank} indices")
        check_index_operands(self.indices, "indices")
        require(self.result.type == src.element, "extract yields the element type")


class DimOp(Operation):
    """The run-time size of dimension ``axis`` of a tensor."""

    name = "tensor.dim"
    operands = ("source",)
    results = ("result",)
    attrs = {"axis": attr(int)}
    traits = PURE

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        check_axes([self.attributes["axis"]], src.rank)
        require(self.result.type == index, "dim yields index")


class ConcatOp(Operation):
    """``np.concatenate(inputs, axis)``."""

    name = "tensor.concat"
    operands = ("inputs*",)
    results = ("result",)
    attrs = {"axis": attr(int)}
    traits = PURE

    def verify_op(self) -> None:
        ins = [tensor(v.type) for v in self.inputs]
        require(len(ins) >= 1, "concat needs at least one input")
        t = tensor(self.result.type)
        axis = self.attributes["axis"]
        check_axes([axis], t.rank)
        same_element(ins + [t])
        for x in ins:
            require(x.rank == t.rank, "concat inputs must have the result's rank")
            for a in range(t.rank):
                if a != axis and DYN not in (x.shape[a], t.shape[a]):
                    require(x.shape[a] == t.shape[a], f"concat dim {a} mismatch")


class ReduceOp(Operation):
    """Base of the axis reductions (``axes`` sorted and distinct, ``keepdims``)."""

    operands = ("source",)
    results = ("result",)
    attrs = {"axes": attr(tuple), "keepdims": attr(bool)}
    traits = PURE

    @classmethod
    def result_type(cls, src: TensorType, axes: Sequence[int], keepdims: bool,
                    element: ScalarType | None = None) -> Type:
        elem = element or src.element
        if keepdims:
            return TensorType(tuple(1 if a in axes else d for a, d in enumerate(src.shape)),
                              elem)
        shape = tuple(d for a, d in enumerate(src.shape) if a not in axes)
        return TensorType(shape, elem) if shape else elem

    @classmethod
    def new(cls, source: Value, axes: Sequence[int], keepdims: bool = False,
            loc: Location | None = None) -> Operation:
        t = cls.result_type(tensor(source.type), axes, keepdims, cls.result_element(source))
        return cls([source], [t], {"axes": tuple(axes), "keepdims": keepdims}, loc=loc)

    @classmethod
    def result_element(cls, source: Value) -> ScalarType:
        return element_type(source.type)

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        axes = self.attributes["axes"]
        check_axes(axes, src.rank)
        require(list(axes) == sorted(axes), "reduction axes must be sorted")
        expected = self.result_type(src, axes, self.attributes["keepdims"],
                                    self.result_element(self.source))
        require(self.result.type == expected, f"expected result {expected}")


class SumOp(ReduceOp):
    name = "tensor.sum"


class ProdOp(ReduceOp):
    name = "tensor.prod"


class ReduceMaxOp(ReduceOp):
    name = "tensor.max"


class ReduceMinOp(ReduceOp):
    name = "tensor.min"


class AnyOp(ReduceOp):
    name = "tensor.any"

    @classmethod
    def result_element(cls, source: Value) -> ScalarType:
        from pyasc.ir.types import i1

        return i1


class AllOp(AnyOp):
    name = "tensor.all"


class ArgReduceOp(Operation):
    """Base of ``argmax``/``argmin``: first index of the extreme value (NaN wins)."""

    operands = ("source",)
    results = ("result",)
    attrs = {"axis": attr(int, optional=True), "keepdims": attr(bool, optional=True)}
    traits = PURE

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        axis = self.attributes.get("axis")
        keep = self.attributes.get("keepdims", False)
        if axis is None:
            expected: Type = TensorType((1,) * src.rank, index) if keep else index
        else:
            check_axes([axis], src.rank)
            expected = ReduceOp.result_type(src, [axis], keep, index)
        require(self.result.type == expected, f"expected result {expected}")


class ArgMaxOp(ArgReduceOp):
    name = "tensor.argmax"


class ArgMinOp(ArgReduceOp):
    name = "tensor.argmin"


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy matmul result shape, or ``None`` if statically incompatible."""
    if not a or not b:
        return None
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    k1, k2 = a2[-1], b2[-2]
    if DYN not in (k1, k2) and k1 != k2:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


class MatmulOp(Operation):
    """numpy ``matmul`` (``@``): 1-D, 2-D and batched with broadcasting."""

    name = "tensor.matmul"
    operands = ("lhs", "rhs")
    results = ("result",)
    traits = PURE

    @classmethod
    def new(cls, lhs: Value, rhs: Value, loc: Location | None = None) -> MatmulOp:
        a, b = tensor(lhs.type), tensor(rhs.type)
        shape = matmul_shape(a.shape, b.shape)
        if shape is None:
            raise ValueError(f"matmul: shapes {a} and {b} are not aligned")
        elem = same_element([a, b])
        t: Type = TensorType(shape, elem) if shape else elem
        return cls([lhs, rhs], [t], loc=loc)

    def verify_op(self) -> None:
        a, b = tensor(self.lhs.type), tensor(self.rhs.type)
        shape = matmul_shape(a.shape, b.shape)
        require(shape is not None, f"matmul: shapes {a} and {b} are not aligned")
        elem = same_element([a, b])
        expected: Type = TensorType(shape, elem) if shape else elem
        require(self.result.type == expected, f"expected result {expected}")


class GatherOp(Operation):
    """``np.take(source, indices, axis)``; integer ``indices`` of any shape.  Optional
    labels for bounds messages: ``array`` (the user's name of the array) and ``axes``
    (the user's axis of the index operand, when it differs from ``axis``)."""

    name = "tensor.gather"
    operands = ("source", "indices")
    results = ("result",)
    attrs = {"axis": attr(int), "array": attr(str, optional=True),
             "axes": attr(tuple, optional=True)}
    traits = PURE

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        idx_t = self.indices.type
        idx_elem = element_type(idx_t)
        require(idx_elem.is_int, f"gather indices must be integers, got {idx_elem}")
        axis = self.attributes["axis"]
        check_axes([axis], src.rank)
        idx_shape = idx_t.shape if isinstance(idx_t, TensorType) else ()
        shape = src.shape[:axis] + idx_shape + src.shape[axis + 1:]
        expected: Type = TensorType(shape, src.element) if shape else src.element
        require(self.result.type == expected, f"expected result {expected}")


class CompressOp(Operation):
    """``source[mask]`` for a boolean ``mask`` matching the leading dims of ``source``."""

    name = "tensor.compress"
    operands = ("source", "mask")
    results = ("result",)
    traits = PURE

    def verify_op(self) -> None:
        src, mask = tensor(self.source.type), tensor(self.mask.type)
        require(mask.element.is_bool, "compress mask must be i1")
        require(mask.rank <= src.rank, "mask rank exceeds source rank")
        for m, s in zip(mask.shape, src.shape, strict=False):
            require(DYN in (m, s) or m == s, f"mask {mask} does not match {src}")
        t = tensor(self.result.type)
        require(t == TensorType((DYN, *src.shape[mask.rank:]), src.element),
                f"compress result must be {TensorType((DYN, *src.shape[mask.rank:]), src.element)}")


class MapOp(Operation):
    """Fused elementwise kernel over broadcast operands.

    The body block has one scalar argument per operand (its element type) and ends with
    ``tensor.yield`` of one scalar per result.  Results have the broadcast shape.
    """

    name = "tensor.map"
    operands = ("inputs*",)
    results = ("outputs*",)
    regions = ("body",)
    terminators = ("tensor.yield",)
    traits = PURE

    @classmethod
    def empty(cls, inputs: Sequence[Value], result_elems: Sequence[ScalarType],
              loc: Location | None = None) -> MapOp:
        block = Block([element_type(v.type) for v in inputs])
        types = [elementwise_type([v.type for v in inputs], e) for e in result_elems]
        return cls(list(inputs), types, regions=[Region([block])], loc=loc)

    def verify_op(self) -> None:
        body = self.body.blocks[0]
        require([a.type for a in body.args] == [element_type(v.type) for v in self.inputs],
                "map block arguments must be the inputs' element types")
        term = body.terminator
        if term is None or term.name != "tensor.yield":
            return  # the verifier reports the missing terminator
        yields = term.operand_values
        require(len(yields) == len(self.outputs), "map yields one value per result")
        for y, r in zip(yields, self.outputs, strict=True):
            require(isinstance(y.type, ScalarType), "map body yields scalars")
            expected = elementwise_type([v.type for v in self.inputs], y.type)  # type: ignore
            require(r.type == expected, f"map result {r.type} != {expected}")


class YieldOp(Operation):
    """Terminator of ``tensor.map``."""

    name = "tensor.yield"
    operands = ("values*",)
    traits = frozenset({"terminator"})
