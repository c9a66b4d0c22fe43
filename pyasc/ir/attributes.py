"""The IR's source locations and attribute values: :class:`Location`, the array-valued
:class:`DenseArray` and the :class:`AttrDef` declarations ops make with :func:`attr`.

Leaf data of ``core`` (which re-exports them): none of them refers to an operation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyasc.ir.types import Type

# ---------------------------------------------------------------------------- locations


@dataclass(frozen=True)
class Location:
    """A source position: file name, 1-based line and 1-based column (MLIR convention)."""

    file: str | None = None
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.file is None:
            return "loc(unknown)"
        return f"loc({json.dumps(self.file)}:{self.line}:{self.col})"

    @property
    def known(self) -> bool:
        return self.file is not None


UNKNOWN_LOC = Location()

# ---------------------------------------------------------------------------- attributes


class DenseArray:
    """An array-valued attribute (constant tensors); printed ``dense<[...] : tensor<..>>``."""

    __slots__ = ("array", "type")

    def __init__(self, array: np.ndarray, type_: Type) -> None:
        self.array = np.asarray(array)
        self.type = type_

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DenseArray) and self.type == other.type
                and self.array.shape == other.array.shape
                and bool(np.array_equal(self.array, other.array, equal_nan=True)))

    def __hash__(self) -> int:
        return hash((self.type, self.array.tobytes()))

    def __repr__(self) -> str:
        return f"DenseArray({self.array!r}, {self.type})"


AttrValue = Any  # int | float | bool | str | Type | DenseArray | tuple[AttrValue, ...]


@dataclass(frozen=True)
class AttrDef:
    """Declaration of one attribute: accepted Python kinds and an optional default."""

    kinds: tuple[type, ...]
    optional: bool = False

    def accepts(self, value: AttrValue) -> bool:
        if isinstance(value, bool) and bool not in self.kinds:
            return False
        return isinstance(value, self.kinds)


def attr(*kinds: type, optional: bool = False) -> AttrDef:
    """Shorthand used in op declarations: ``attrs = {"axis": attr(int)}``."""
    return AttrDef(tuple(kinds), optional)
