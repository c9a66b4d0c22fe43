"""What a Python name or expression stands for while a function is being compiled.

Like Triton's ``constexpr``, values known at compile time stay plain Python objects
(ints, floats, bools, None, strings, tuples, slices, numpy dtypes, the ``np`` module,
:class:`RangeValue`...).  Run-time values wrap an IR value:

* :class:`Scalar`: a scalar; ``weak`` marks Python ``int``/``float``/``bool`` values,
  which NEP 50 lets adapt to the other operand's dtype.  Index scalars carry facts the
  frontend uses to fold index arithmetic: bounds (``lo``/``hi``) and an affine form
  ``base + offset`` so that ``(i + 6) - (i - 5)`` folds to ``11``;
* :class:`Tensor`: an immutable array value (``tensor<...>``);
* :class:`Buffer`: a mutable, aliasable array (``memref<...>``): parameters, arrays the
  function writes to, and views of them.

``dims`` on tensors and buffers, when known, gives each dimension as an ``int`` or an
index :class:`Scalar`, so shapes of derived arrays need no ``dim`` ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyasc.ir.core import Value
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, index

Dim = Any  # int | Scalar (an index scalar)


@dataclass(eq=False)
class Scalar:
    """A run-time scalar."""

    value: Value
    weak: bool = False
    lo: int | None = None
    hi: int | None = None
    base: Value | None = None
    offset: int = 0

    @property
    def type(self) -> ScalarType:
        return self.value.type  # type: ignore[return-value]

    @property
    def affine(self) -> tuple[Value, int]:
        """``(base, offset)`` with ``self == base + offset``."""
        return (self.base, self.offset) if self.base is not None else (self.value, 0)


@dataclass(eq=False)
class Tensor:
    """A run-time array value."""

    value: Value
    dims: tuple[Dim, ...] | None = None
    # a join's copy of a buffer some path held (merge.Slot.lost_view): numpy has a view
    copied_view: bool = False

    @property
    def type(self) -> TensorType:
        return self.value.type  # type: ignore[return-value]


@dataclass(eq=False)
class Buffer:
    """A run-time mutable array (a memref); several names may alias one buffer."""

    value: Value
    dims: tuple[Dim, ...] | None = None
    param: int | None = None  # flat parameter index when this is a function argument

    @property
    def type(self) -> MemRefType:
        return self.value.type  # type: ignore[return-value]


@dataclass(frozen=True)
class RangeValue:
    """``range(start, stop, step)``; each bound is an ``int`` or an index ``Scalar``."""

    start: Any
    stop: Any
    step: Any


@dataclass(frozen=True)
class Undefined:
    """A name that is not defined on every path reaching this point."""

    reason: str


@dataclass(frozen=True)
class BoundMethod:
    """``obj.name`` for an array method, called later (``x.sum``)."""

    obj: Any
    name: str


@dataclass(frozen=True)
class NumpyFunction:
    """A numpy function reached as ``np.<name>`` (looked up in the registry)."""

    name: str


def is_runtime(v: object) -> bool:
    """A run-time value (scalar, tensor or buffer), as opposed to a compile-time one."""
    return isinstance(v, Scalar | Tensor | Buffer)


def is_number(v: object) -> bool:
    """A compile-time Python number (``bool`` included, numpy scalars excluded)."""
    return isinstance(v, int | float) and not isinstance(v, np.generic)


def static_dims(dims: tuple[Dim, ...]) -> tuple[int, ...]:
    """The IR shape of ``dims`` (``DYN`` for run-time dims)."""
    return tuple(d if isinstance(d, int) else DYN for d in dims)


_PYTHON_KINDS = {"index": "int", "f64": "float", "i1": "bool"}


def kind_name(v: object) -> str:
    """A short human description of a frontend value, for error messages."""
    if isinstance(v, Scalar):
        if v.weak and v.type.name in _PYTHON_KINDS:
            return f"Python {_PYTHON_KINDS[v.type.name]}"
        return f"{_np_name(v.type)} scalar"
    if isinstance(v, Tensor | Buffer):
        t = v.type
        shape = "x".join("?" if d == DYN else str(d) for d in t.shape) or "0-d"
        return f"{_np_name(t.element)} array ({shape})"
    if callable(getattr(v, "source_info", None)):  # a callee: @hybrid, plain or local
        return f"function '{getattr(v, '__name__', '?')}'"
    return "None" if v is None else type(v).__name__


def _np_name(t: ScalarType) -> str:
    if t == index:
        return "int64"
    return "bfloat16" if t.name == "bf16" else str(t.to_numpy())
