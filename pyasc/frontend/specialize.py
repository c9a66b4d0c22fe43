"""Call signatures: which specialization a call selects, and its flat parameters.

Each bound argument (defaults applied) is described by a hashable *spec*; the tuple of
specs is the specialization key:

* numpy array: ``("array", dtype, ndim, layout, shape)`` where ``layout`` is ``"C"``
  (C-contiguous), ``"inner"`` (unit stride on the last axis) or ``"strided"``, and
  ``shape`` is ``None`` under ``dynamic_shape=True``;
* Python ``bool``/``int``/``float``: ``("scalar", kind)``: a run-time weak scalar whose
  value is *not* part of the key; numpy scalars: ``("npscalar", dtype)``;
* tuples and lists: ``("tuple", specs...)`` / ``("list", specs...)``, flattened into
  several parameters (inside the function a list stays a list);
* ``None``, strings and dtypes: ``("const", type, value)``, compile-time values.

Value specialization: a scalar argument whose value the compiler needs at compile time
(an ``axis=``, a ``keepdims=``, a dtype, a slice step...) is keyed by value instead:
``("const", type, value)``.  Which arguments those are is discovered on the first
compilation (the frontend asks, see ``NeedsConstant``) and remembered per function.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyasc.errors import ArgumentError

if TYPE_CHECKING:  # pragma: no cover - the IR types are imported when first needed
    from pyasc.ir.types import Type

Path = tuple[Any, ...]
Spec = tuple[Any, ...]
CONST_TYPES = (type(None), str, np.dtype, type)


def layout_of(a: np.ndarray) -> str:
    """The layout class of an array: ``"C"``, ``"inner"`` or ``"strided"``."""
    if a.flags.c_contiguous:
        return "C"
    if a.ndim and a.strides[-1] == a.itemsize:
        return "inner"
    return "strided"


SEQUENCES = {tuple: "tuple", list: "list"}


def spec_of(value: object, path: Path, dynamic_shape: bool, by_value: set[Path]) -> Spec:
    """The key entry of one argument, as ``arguments.prepare`` made it (raises
    ``ArgumentError`` for unsupported kinds)."""
    if isinstance(value, np.ndarray):
        return _array_spec(value, path, dynamic_shape)
    seq = SEQUENCES.get(type(value))
    if seq is not None:
        return (seq, *(spec_of(v, (*path, i), dynamic_shape, by_value)
                       for i, v in enumerate(value)))  # type: ignore[attr-defined]
    if isinstance(value, bool | int | float | np.generic) and path in by_value:
        return ("const", type(value).__name__, value.item() if isinstance(value, np.generic)
                else value)
    if isinstance(value, np.generic):  # before float: np.float64 subclasses float, but
        # is a strong numpy scalar under NEP 50 like every other numpy scalar
        return ("npscalar", _dtype_name(value.dtype, path))
    if isinstance(value, bool):
        return ("scalar", "bool")
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ArgumentError(f"argument {_name(path)}: {value} does not fit in 64 bits")
        return ("scalar", "int")
    if isinstance(value, float):
        return ("scalar", "float")
    if isinstance(value, CONST_TYPES) and (not isinstance(value, type) or
                                           issubclass(value, np.generic | bool | int | float)):
        return ("const", type(value).__name__, value)
    raise ArgumentError(f"argument {_name(path)} of type {type(value).__name__} is not "
                        "supported", hint="pass numpy arrays, numbers, tuples or lists of "
                        "them, None, strings or dtypes")


def _array_spec(a: np.ndarray, path: Path, dynamic_shape: bool) -> Spec:
    dtype = _dtype_name(a.dtype, path)
    if any(s % a.itemsize for s in a.strides) or not a.flags.aligned:
        raise ArgumentError(f"argument {_name(path)}: unaligned arrays are not supported",
                            hint="pass np.ascontiguousarray(x)")
    shape = None if dynamic_shape else tuple(a.shape)
    return ("array", dtype, a.ndim, layout_of(a), shape)


def _dtype_name(dt: np.dtype, path: Path) -> str:
    from pyasc.ir.types import scalar_from_numpy  # ``import pyasc`` does not load the IR

    try:
        scalar_from_numpy(dt)
    except TypeError:
        raise ArgumentError(f"argument {_name(path)}: dtype {dt} is not supported") from None
    return dt.name


def _name(path: Path) -> str:
    return "'" + str(path[0]) + "'" + "".join(f"[{i}]" for i in path[1:])


@dataclass(frozen=True)
class Param:
    """One flat parameter of a specialization."""

    path: Path
    type: Type
    weak: bool = False

    @property
    def name(self) -> str:
        return "_".join(str(p) for p in self.path)


def param_type(spec: Spec) -> tuple[Type, bool]:
    """The IR type of a leaf spec and whether it is weak."""
    from pyasc.ir.types import DYN, MemRefType, ScalarType, f64, i1, index, scalar_from_numpy

    kind = spec[0]
    if kind == "array":
        _, dtype, ndim, layout, shape = spec
        dims = shape if shape is not None else (DYN,) * ndim
        strides = None if layout == "C" else \
            (DYN,) * (ndim - 1) + (1,) if layout == "inner" else (DYN,) * ndim
        return MemRefType(tuple(dims), scalar_from_numpy(np.dtype(dtype)), strides), False
    if kind == "scalar":
        return {"bool": i1, "int": index, "float": f64}[spec[1]], True
    assert kind == "npscalar"
    t: ScalarType = scalar_from_numpy(np.dtype(spec[1]))
    return t, False


def leaves(spec: Spec, value: object, path: Path) -> Iterator[tuple[Path, Spec, object]]:
    """The run-time leaves of an argument, in flat-parameter order."""
    if spec[0] in SEQUENCES.values():
        for i, (s, v) in enumerate(zip(spec[1:], value, strict=True)):  # type: ignore
            yield from leaves(s, v, (*path, i))
    elif spec[0] != "const":
        yield path, spec, value


def params_of(specs: dict[str, Spec]) -> list[Param]:
    """The flat parameter list of a key."""
    out = []
    for name, spec in specs.items():
        for path, leaf, _ in leaves(spec, _shape_only(spec), (name,)):
            t, weak = param_type(leaf)
            out.append(Param(path, t, weak))
    return out


def _shape_only(spec: Spec) -> object:
    if spec[0] in SEQUENCES.values():
        return tuple(_shape_only(s) for s in spec[1:])
    return None


def flatten_args(specs: dict[str, Spec], arguments: dict[str, object]) -> list[object]:
    """The flat argument list of a call."""
    return [v for name, spec in specs.items()
            for _, _, v in leaves(spec, arguments[name], (name,))]


def const_value(spec: Spec) -> object:
    """The compile-time value of a ``const`` spec."""
    return spec[2]
