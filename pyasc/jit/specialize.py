"""Call signatures: which specialization a call selects, and its flat parameters.

Each bound argument (defaults applied) is described by a hashable *spec*; the tuple of
specs is the specialization key:

* numpy array: ``("array", dtype, ndim, layout, shape)`` where ``layout`` is ``"C"``
  (C-contiguous), ``"inner"`` (unit stride on the last axis) or ``"strided"``, and
  ``shape`` is ``None`` under ``dynamic_shape=True`` (or, when some of its dimensions
  are specialized by value, a tuple with ``None`` for each run-time dimension);
* Python ``bool``/``int``/``float``: ``("scalar", kind)``: a run-time weak scalar whose
  value is *not* part of the key; numpy scalars: ``("npscalar", dtype)``;
* tuples and lists: ``("tuple", specs...)`` / ``("list", specs...)``, flattened into
  several parameters (inside the function a list stays a list);
* ``None``, strings and dtypes: ``("const", type, value)``, compile-time values.

Value specialization: a scalar argument whose value the compiler needs at compile time
(an ``axis=``, a ``keepdims=``, a dtype, a slice step...) is keyed by value instead:
``("const", type, value)``.  Which arguments those are is discovered on the first
compilation (the frontend asks, see ``NeedsConstant``) and remembered per function.
Under ``dynamic_shape=True`` the same holds for one dimension of an array argument, path
``(*array_path, SHAPE, axis)``, only when it is a window loop's trip count
(``range(wt.shape[1])``, see ``frontend/window_dims.py``; capped by ``window_cap.py``);
any other compile-time need of a run-time dimension is a coded error.
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import ArgumentError
from pyasc.frontend.signature import SEQUENCES, SHAPE, Path, Spec

CONST_TYPES = (type(None), str, np.dtype, type)


def layout_of(a: np.ndarray) -> str:
    """The layout class of an array: ``"C"``, ``"inner"`` or ``"strided"``."""
    if a.flags.c_contiguous:
        return "C"
    if a.ndim and a.strides[-1] == a.itemsize:
        return "inner"
    return "strided"


def spec_of(value: object, path: Path, dynamic_shape: bool, by_value: set[Path]) -> Spec:
    """The key entry of one argument, as ``arguments.prepare`` made it (raises
    ``ArgumentError`` for unsupported kinds)."""
    if isinstance(value, np.ndarray):
        return _array_spec(value, path, dynamic_shape, by_value)
    if getattr(value, "__pyasc_device_array__", False):  # C-contiguous device memory
        shape = _shape_key(tuple(value.shape), path, dynamic_shape,  # type: ignore
                           by_value)
        return ("array", _dtype_name(value.dtype, path), len(value.shape), "C",  # type: ignore
                shape)
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


def is_shape_path(path: Path) -> bool:
    """Whether a by-value path names a dimension of an array, ``(*array, SHAPE, axis)``."""
    return len(path) >= 2 and path[-2] == SHAPE


def _array_spec(a: np.ndarray, path: Path, dynamic_shape: bool, by_value: set[Path]
                ) -> Spec:
    dtype = _dtype_name(a.dtype, path)
    if any(s % a.itemsize for s in a.strides) or not a.flags.aligned:
        raise ArgumentError(f"argument {_name(path)}: unaligned arrays are not supported",
                            hint="pass np.ascontiguousarray(x)")
    return ("array", dtype, a.ndim, layout_of(a),
            _shape_key(a.shape, path, dynamic_shape, by_value))


def _shape_key(shape: tuple[int, ...], path: Path, dynamic_shape: bool,
               by_value: set[Path]) -> tuple | None:
    """The shape entry of an array spec: every dimension when shapes are static; under
    ``dynamic_shape`` ``None``, or the by-value dimensions with ``None`` elsewhere."""
    if not dynamic_shape:
        return tuple(shape)
    static = [(*path, SHAPE, i) in by_value for i in range(len(shape))]
    if not any(static):
        return None
    return tuple(d if s else None for d, s in zip(shape, static, strict=True))


def _dtype_name(dt: np.dtype, path: Path) -> str:
    from pyasc.ir.types import scalar_from_numpy  # ``import pyasc`` does not load the IR

    try:
        scalar_from_numpy(dt)
    except TypeError:
        raise ArgumentError(f"argument {_name(path)}: dtype {dt} is not supported") from None
    return dt.name


def _name(path: Path) -> str:
    return "'" + str(path[0]) + "'" + "".join(f"[{i}]" for i in path[1:])
