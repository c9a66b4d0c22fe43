"""IR types: scalar dtypes, ``index``, value tensors and mutable strided buffers.

Text forms (MLIR-like):

* scalars: ``i1`` (bool), ``i8 i16 i32 i64``, ``ui8 ui16 ui32 ui64``, ``f16 bf16 f32 f64``,
  ``index`` (a Python ``int``: signed 64-bit in compiled code, "weak" under NEP 50);
* ``tensor<4x?xf32>``: an immutable array value; ``?`` is a dimension known only at run
  time; ``tensor<f32>`` is 0-d;
* ``memref<4x?xf32>``: a mutable C-contiguous buffer, and
  ``memref<4x?xf32, strided<[?, 1]>>``: a strided view whose strides (in elements) are
  static integers or ``?``.

Types are immutable and hashable; compare them with ``==``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DYN = -1
"""Marker for a dimension or stride known only at run time (printed ``?``)."""


@dataclass(frozen=True)
class Type:
    """Base class of all IR types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A scalar element type; ``name`` is the IR spelling (``f32``, ``ui8``, ``index``...)."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64")

    @property
    def is_int(self) -> bool:
        """True for signed/unsigned integers and ``index`` (not for ``i1``)."""
        return self.name not in ("i1",) and not self.is_float

    @property
    def is_signed(self) -> bool:
        return self.name.startswith("i") and self.name != "i1"

    @property
    def is_unsigned(self) -> bool:
        return self.name.startswith("ui")

    @property
    def is_bool(self) -> bool:
        return self.name == "i1"

    @property
    def is_index(self) -> bool:
        return self.name == "index"

    @property
    def bitwidth(self) -> int:
        return _BITS[self.name]

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (``i1`` is stored as one byte, like numpy)."""
        return max(1, self.bitwidth // 8)

    def to_numpy(self) -> np.dtype:
        """The numpy dtype of this scalar type (``bf16`` needs the ml_dtypes package)."""
        if self.name == "bf16":
            try:
                import ml_dtypes  # noqa: PLC0415 - optional dependency
            except ImportError as exc:  # pragma: no cover - depends on environment
                raise TypeError("bfloat16 arrays need the 'ml_dtypes' package") from exc
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(_TO_NUMPY[self.name])


_BITS = {
    "i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64,
    "ui8": 8, "ui16": 16, "ui32": 32, "ui64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "index": 64,
}
_TO_NUMPY = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "index": "int64",
}

i1 = ScalarType("i1")
i8 = ScalarType("i8")
i16 = ScalarType("i16")
i32 = ScalarType("i32")
i64 = ScalarType("i64")
u8 = ScalarType("ui8")
u16 = ScalarType("ui16")
u32 = ScalarType("ui32")
u64 = ScalarType("ui64")
f16 = ScalarType("f16")
bf16 = ScalarType("bf16")
f32 = ScalarType("f32")
f64 = ScalarType("f64")
index = ScalarType("index")

SCALAR_TYPES: dict[str, ScalarType] = {t.name: t for t in (
    i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, index)}


def scalar_from_numpy(dtype: np.dtype | type | str) -> ScalarType:
    """The IR scalar type for a numpy dtype; raises ``TypeError`` if unsupported."""
    dt = np.dtype(dtype)
    if dt.name == "bfloat16":
        return bf16
    for name, np_name in _TO_NUMPY.items():
        if name != "index" and dt == np.dtype(np_name):
            return SCALAR_TYPES[name]
    raise TypeError(f"dtype {dt} is not supported by pyasc")


def _dims_str(shape: tuple[int, ...]) -> str:
    return "".join(("?" if d == DYN else str(d)) + "x" for d in shape)


@dataclass(frozen=True)
class ShapedType(Type):
    """Common base of tensors and buffers: a shape (``DYN`` for ``?``) and element type."""

    shape: tuple[int, ...]
    element: ScalarType

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d != DYN for d in self.shape)

    def num_elements(self) -> int | None:
        """Element count, or ``None`` when a dimension is dynamic."""
        if not self.is_static:
            return None
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class TensorType(ShapedType):
    """An immutable array value: ``tensor<4x?xf32>``."""

    def __str__(self) -> str:
        return f"tensor<{_dims_str(self.shape)}{self.element}>"

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(tuple(shape), self.element)

    def with_element(self, element: ScalarType) -> TensorType:
        return TensorType(self.shape, element)


@dataclass(frozen=True)
class MemRefType(ShapedType):
    """A mutable buffer or view; ``strides`` is ``None`` for C-contiguous, else per-dim
    element strides where each is an int or ``DYN``."""

    strides: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.strides is not None and len(self.strides) != len(self.shape):
            raise ValueError("memref strides must have one entry per dimension")

    def __str__(self) -> str:
        body = f"memref<{_dims_str(self.shape)}{self.element}"
        if self.strides is not None:
            strides = ", ".join("?" if s == DYN else str(s) for s in self.strides)
            body += f", strided<[{strides}]>"
        return body + ">"

    @property
    def is_contiguous(self) -> bool:
        return self.strides is None

    @property
    def inner_unit_stride(self) -> bool:
        """True when the last axis is known to have stride 1 (vectorizable rows)."""
        return self.rank == 0 or self.strides is None or self.strides[-1] == 1

    def with_shape(self, shape: tuple[int, ...]) -> MemRefType:
        return MemRefType(tuple(shape), self.element, None)

    def tensor_type(self) -> TensorType:
        """The value type read from this buffer."""
        return TensorType(self.shape, self.element)


@dataclass(frozen=True)
class FunctionType(Type):
    """``(inputs) -> (results)``, the type of a ``func.func``."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"


def element_type(t: Type) -> ScalarType:
    """The scalar element type of a scalar, tensor or memref type."""
    if isinstance(t, ScalarType):
        return t
    if isinstance(t, ShapedType):
        return t.element
    raise TypeError(f"{t} has no element type")


def shape_of(t: Type) -> tuple[int, ...]:
    """The shape of a tensor/memref type; ``()`` for scalars."""
    return t.shape if isinstance(t, ShapedType) else ()


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy broadcasting on static/dynamic shapes; ``None`` if statically incompatible.

    A dynamic dim against 1 stays dynamic; dynamic against n becomes n (checked at run
    time by the code that uses it).
    """
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]
        static = {d for d in dims if d not in (DYN, 1)}
        if len(static) > 1:
            return None
        if static:
            out.append(static.pop())
        elif DYN in dims:
            out.append(DYN)
        else:
            out.append(1)
    return tuple(out)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order element strides of a static shape (``DYN`` where not computable)."""
    strides: list[int] = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc = DYN if (d == DYN or acc == DYN) else acc * d
    return tuple(reversed(strides))
