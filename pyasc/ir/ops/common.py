"""Shared verification and type-inference helpers for op definitions.

Elementwise ops (``arith.*``, ``math.*``) accept scalars and tensors alike: the result is
a scalar when every operand is, otherwise a tensor of the operands' broadcast shape.
Types are explicit in the IR, so the frontend inserts ``arith.cast`` for promotion and
elementwise operands share one element type (``arith.select``'s condition is ``i1``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.types import (
    DYN,
    MemRefType,
    ScalarType,
    ShapedType,
    TensorType,
    Type,
    broadcast_shapes,
    element_type,
    index,
)


def is_value_type(t: Type) -> bool:
    """Scalars and tensors are values; memrefs are storage."""
    return isinstance(t, ScalarType | TensorType)


def types_str(types: Sequence[Type] | None) -> str:
    """``(f32, index)``: a type list as it reads in the IR (not its Python repr)."""
    return "nothing" if types is None else "(" + ", ".join(str(t) for t in types) + ")"


def require(cond: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``cond`` (the verifier turns it into E50021)."""
    if not cond:
        raise ValueError(message)


def elementwise_type(types: Sequence[Type], element: ScalarType) -> Type:
    """Result type of an elementwise op over ``types`` with result element ``element``."""
    for t in types:
        require(is_value_type(t), f"elementwise operand must be a scalar or tensor, got {t}")
    shapes = [t.shape for t in types if isinstance(t, TensorType)]
    if not shapes:
        return element
    shape = broadcast_shapes(*shapes)
    if shape is None:
        raise ValueError("operands could not be broadcast together with shapes "
                         + " ".join(str(tuple('?' if d == DYN else d for d in s))
                                    for s in shapes))
    return TensorType(shape, element)


def same_element(types: Sequence[Type]) -> ScalarType:
    """The common element type of ``types``; error if they differ."""
    elems = {element_type(t) for t in types}
    require(len(elems) == 1, "operands must have the same element type, got "
            + ", ".join(sorted(str(e) for e in elems)))
    return elems.pop()


def check_elementwise_result(op: Operation, element: ScalarType) -> None:
    expected = elementwise_type([v.type for v in op.operand_values], element)
    actual = op.result.type
    require(_compatible(expected, actual),
            f"result type {actual} does not match inferred {expected}")


def _compatible(inferred: Type, actual: Type) -> bool:
    """``actual`` may refine a dynamic dim of ``inferred`` to a static one."""
    if isinstance(inferred, TensorType) and isinstance(actual, TensorType):
        return (inferred.element == actual.element and inferred.rank == actual.rank
                and all(a == b or a == DYN for a, b in zip(inferred.shape, actual.shape,
                                                           strict=True)))
    return inferred == actual


def check_index_operands(values: Sequence[Value], what: str) -> None:
    for v in values:
        require(v.type == index, f"{what} must be of type index, got {v.type}")


def check_dynamic_dims(result: Type, dims: Sequence[Value]) -> None:
    """Ops creating a shaped value take one ``index`` operand per ``?`` in its type."""
    require(isinstance(result, ShapedType), f"result must be shaped, got {result}")
    assert isinstance(result, ShapedType)
    n_dyn = sum(d == DYN for d in result.shape)
    require(len(dims) == n_dyn, f"expected {n_dyn} dynamic-dim operands, got {len(dims)}")
    check_index_operands(dims, "dynamic dims")


def check_axes(axes: Sequence[int], rank: int) -> None:
    require(len(set(axes)) == len(axes), f"repeated axis in {tuple(axes)}")
    for a in axes:
        require(0 <= a < rank, f"axis {a} out of range for rank {rank}")


def shaped(t: Type, kind: type = ShapedType) -> ShapedType:
    require(isinstance(t, kind), f"expected a {kind.__name__}, got {t}")
    assert isinstance(t, ShapedType)
    return t


def memref(t: Type) -> MemRefType:
    require(isinstance(t, MemRefType), f"expected a memref, got {t}")
    assert isinstance(t, MemRefType)
    return t


def tensor(t: Type) -> TensorType:
    require(isinstance(t, TensorType), f"expected a tensor, got {t}")
    assert isinstance(t, TensorType)
    return t
