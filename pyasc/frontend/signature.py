"""The argument specs a specialization is compiled for, and its flat parameters.

A *spec* describes one bound argument of a call (made by
:func:`pyasc.jit.specialize.spec_of`, which documents the forms): an array's dtype,
rank, layout and (static) shape, a run-time scalar's kind, a tuple/list of specs, or a
compile-time constant.  The frontend compiles a function for a dict of specs; this
module gives the flat parameter list the kernel takes (:func:`params_of`), the IR type
of each leaf, and the flat arguments of a call in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - the IR types are imported when first needed
    from pyasc.ir.types import Type

Path = tuple[Any, ...]
Spec = tuple[Any, ...]
SEQUENCES = {tuple: "tuple", list: "list"}


@dataclass(frozen=True)
class Param:
    """One flat parameter of a specialization."""

    path: Path
    type: Type
    weak: bool = False

    @property
    def name(self) -> str:
        return "_".join(str(p) for p in self.path)


SHAPE = "shape"
"""The path element naming an array's dimensions in a by-value path
``(*array_path, SHAPE, axis)`` (a dimension specialized under ``dynamic_shape``)."""


def param_type(spec: Spec) -> tuple[Type, bool]:
    """The IR type of a leaf spec and whether it is weak."""
    from pyasc.ir.types import DYN, MemRefType, ScalarType, f64, i1, index, scalar_from_numpy

    kind = spec[0]
    if kind == "array":
        _, dtype, ndim, layout, shape = spec
        dims = (DYN,) * ndim if shape is None else tuple(DYN if d is None else d
                                                             for d in shape)
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
