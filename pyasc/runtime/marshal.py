"""Checking call arguments against a kernel's specialization, with precise messages.

The hot path (``cpu.py``) only checks ``type(a) is np.ndarray and a.dtype is dtype`` and
lets the compiled fast entry check rank, static dims and layout; whenever anything is
off, the functions here find the exact problem and raise :class:`ArgumentError` (E50040).
They also convert Python scalars for the kernel's scalar slots.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from pyasc.errors import ArgumentError, InternalCompilerError
from pyasc.ir.types import DYN, SCALAR_TYPES
from pyasc.runtime.abi import KernelABI, ParamSpec

INDEX_MIN, INDEX_MAX = -(2 ** 63), 2 ** 63 - 1


@functools.cache
def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an IR scalar type name (``index`` is int64)."""
    try:
        return SCALAR_TYPES[name].to_numpy()
    except TypeError as exc:
        raise InternalCompilerError(f"the CPU runtime cannot represent {name}: {exc}") from exc


def _where(i: int, spec: ParamSpec) -> str:
    return f"argument {i} ('{spec.name}')"


def _fail(i: int, spec: ParamSpec, problem: str, hint: str | None = None) -> ArgumentError:
    return ArgumentError(f"{_where(i, spec)}: {problem}", hint=hint)


def check_count(abi: KernelABI, args: Sequence[Any]) -> None:
    """Raise unless ``args`` has one entry per flat parameter."""
    if len(args) != len(abi.params):
        raise ArgumentError(f"expected {len(abi.params)} arguments after flattening tuples, "
                            f"got {len(args)}")


def check_array(i: int, spec: ParamSpec, a: Any) -> None:
    """Raise :class:`ArgumentError` unless ``a`` fits the array parameter ``spec``."""
    want = numpy_dtype(spec.dtype)
    if not isinstance(a, np.ndarray):
        raise _fail(i, spec, f"expected a numpy array of {want}, got {type(a).__name__}")
    if a.dtype != want:
        raise _fail(i, spec, f"expected dtype {want}, got {a.dtype}",
                    "the operator was compiled for this dtype; cast with .astype(...) or "
                    "call it again to compile a new specialization")
    rank = len(spec.shape)
    if a.ndim != rank:
        raise _fail(i, spec, f"expected {rank} dimension(s), got {a.ndim}")
    for axis, (d, got) in enumerate(zip(spec.shape, a.shape, strict=True)):
        if d != DYN and d != got:
            raise _fail(i, spec, f"expected shape {_shape(spec.shape)}, got {a.shape} "
                        f"(axis {axis})", "use @hybrid(dynamic_shape=True) for varying shapes")
    _check_layout(i, spec, a)
    if not a.flags.aligned:
        raise _fail(i, spec, "the array's data is not aligned to its element size",
                    "pass a copy: np.array(x)")
    if spec.writes and not a.flags.writeable:
        raise _fail(i, spec, "the array is read-only but the operator writes to it",
                    "pass a writable array, e.g. np.array(x) (the writes then land in "
                    "that copy)")


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join("?" if d == DYN else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _check_layout(i: int, spec: ParamSpec, a: np.ndarray) -> None:
    itemsize = a.dtype.itemsize
    if any(s % itemsize for s in a.strides):
        raise _fail(i, spec, f"strides {a.strides} are not multiples of the item size "
                    f"{itemsize}", "pass a copy: np.array(x)")
    if spec.strides is None:
        if not a.flags.c_contiguous:
            raise _fail(i, spec, f"expected a C-contiguous array, got strides {a.strides}",
                        "the operator was specialized for contiguous input; pass "
                        "np.ascontiguousarray(x) or call it again to specialize")
        return
    for axis, (s, d, got) in enumerate(zip(spec.strides, a.shape, a.strides, strict=True)):
        if s != DYN and d > 1 and got != s * itemsize:
            raise _fail(i, spec, f"expected a stride of {s} element(s) on axis {axis}, got "
                        f"{got // itemsize} (strides {a.strides})",
                        "the operator was specialized for another memory layout")


_PY_KINDS = {"index": int, "f64": float, "i1": bool}


def convert_scalar(i: int, spec: ParamSpec, v: Any) -> Any:
    """The value to store in a scalar slot for ``v``, or raise :class:`ArgumentError`."""
    name = spec.dtype
    is_bool = isinstance(v, bool | np.bool_)
    if name == "i1":
        if not is_bool:
            raise _fail(i, spec, f"expected a bool, got {type(v).__name__}")
        return bool(v)
    if is_bool or not isinstance(v, numbers.Real):
        raise _fail(i, spec, f"expected a number of type {_kind(name)}, got "
                    f"{type(v).__name__}")
    if SCALAR_TYPES[name].is_float:
        return float(v)
    if not isinstance(v, numbers.Integral):
        raise _fail(i, spec, f"expected an integer, got {type(v).__name__} {v!r}")
    lo, hi = _int_range(name)
    if not lo <= int(v) <= hi:
        raise _fail(i, spec, f"{int(v)} does not fit in {_kind(name)}")
    return int(v)


def _kind(name: str) -> str:
    return "int" if name == "index" else str(numpy_dtype(name))


def _int_range(name: str) -> tuple[int, int]:
    if name == "index":
        return INDEX_MIN, INDEX_MAX
    info = np.iinfo(numpy_dtype(name))
    return int(info.min), int(info.max)


def explain(abi: KernelABI, args: Sequence[Any]) -> None:
    """Raise the :class:`ArgumentError` describing the first bad argument, if any."""
    check_count(abi, args)
    for i, (spec, a) in enumerate(zip(abi.params, args, strict=True)):
        if spec.kind == "array":
            check_array(i, spec, a)
        else:
            convert_scalar(i, spec, a)


def python_type(name: str) -> type:
    """The Python/numpy scalar type that a slot of type ``name`` takes without conversion."""
    return _PY_KINDS.get(name) or numpy_dtype(name).type
