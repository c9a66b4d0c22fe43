"""Turning a kernel's native entry (``<symbol>.pycall``) into a Python builtin function.

The entry has the ``METH_FASTCALL`` signature; :func:`make_native` wraps it with
``PyCFunction_NewEx`` (through ``ctypes.pythonapi``) around a context object: a ctypes
array holding the addresses the entry needs (see ``abi.NATIVE_FIXED``: type objects,
``True``/``False``/``None``, :data:`MISS`, C-API and numpy C-API functions, then the
kernel's dtypes, numpy scalar types and default arguments).  The builtin holds the
context, and the context holds everything those addresses point to plus the loaded
machine code, so nothing is freed while the builtin can still be called.

:func:`native_supported` confirms once per process, on real objects, every layout the
entries rely on (object header, float and numpy scalar payloads, the array struct,
ctypes data pointers, numpy's C-API table); where any differs, kernels are called
through their ctypes entry instead (``caller.py``), never through a guess.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyasc.runtime import MISS
from pyasc.runtime.abi import (
    NATIVE_FIXED,
    OB_TYPE_OFFSET,
    PYARRAY_OFFSETS,
    VALUE_OFFSET,
    NativeSpec,
)
from pyasc.runtime.marshal import numpy_dtype

METH_FASTCALL = 0x0080
_NUMPY_API = {"PyArray_Type": 2, "PyArray_Scalar": 60, "PyArray_Empty": 184}
"""Indices in numpy's C-API table (stable across numpy 1.x and 2.x)."""

_C_API = ("Py_IncRef", "Py_DecRef", "PyFloat_FromDouble", "PyLong_FromLongLong",
          "PyBool_FromLong", "PyLong_AsLongLongAndOverflow", "PyTuple_New", "PyTuple_SetItem",
          "PyList_New", "PyList_SetItem", "PyErr_Clear", "PyObject_CallFunctionObjArgs",
          "PyEval_SaveThread", "PyEval_RestoreThread")


class PyMethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``."""

    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


@functools.cache
def _numpy_table() -> int:
    """Address of numpy's C-API function table."""
    from numpy._core import _multiarray_umath

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(_multiarray_umath._ARRAY_API, None) or 0


def _numpy_function(name: str) -> int:
    return ctypes.c_void_p.from_address(_numpy_table() + 8 * _NUMPY_API[name]).value or 0


@functools.cache
def _fixed() -> tuple[int, ...]:
    """Addresses of :data:`NATIVE_FIXED` except ``raiser`` (0 there, set per kernel)."""
    objects = {"PyArray_Type": id(np.ndarray), "PyFloat_Type": id(float),
               "PyLong_Type": id(int), "Py_True": id(True), "Py_False": id(False),
               "Py_None": id(None), "MISS": id(MISS), "raiser": 0,
               "PyArray_Empty": _numpy_function("PyArray_Empty"),
               "PyArray_Scalar": _numpy_function("PyArray_Scalar")}
    for name in _C_API:
        objects[name] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    return tuple(objects[name] for name in NATIVE_FIXED)


def _read(obj: object, offset: int, ctype: type) -> Any:
    return ctype.from_address(id(obj) + offset).value


@functools.cache
def native_supported() -> bool:
    """Whether this interpreter and numpy have the layouts the native entries read."""
    if sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8 or \
            getattr(sys, "_is_gil_enabled", lambda: True)() is False:
        return False
    try:
        a = np.zeros((2, 3), np.float32)
        ctx = (ctypes.c_uint64 * 1)()
        return (_read(1.5, OB_TYPE_OFFSET, ctypes.c_void_p) == id(float)
                and _read(1.5, VALUE_OFFSET, ctypes.c_double) == 1.5
                and _read(np.float32(2.5), VALUE_OFFSET, ctypes.c_float) == 2.5
                and _read(np.int16(-7), VALUE_OFFSET, ctypes.c_int16) == -7
                and _read(np.bool_(True), VALUE_OFFSET, ctypes.c_uint8) == 1
                and _read(a, PYARRAY_OFFSETS["descr"], ctypes.c_void_p) == id(a.dtype)
                and _read(ctx, VALUE_OFFSET, ctypes.c_void_p) == ctypes.addressof(ctx)
                and _numpy_function("PyArray_Type") == id(np.ndarray)
                and _empty_works())
    except (AttributeError, ValueError, OSError, ImportError):  # pragma: no cover
        return False


def _empty_works() -> bool:
    """Call ``PyArray_Empty`` once through ctypes: the table index is right."""
    proto = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                              ctypes.py_object, ctypes.c_int)
    empty = proto(_numpy_function("PyArray_Empty"))
    dt = np.dtype(np.float64)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(dt))  # PyArray_Empty steals a reference
    out = empty(2, (ctypes.c_int64 * 2)(3, 4), dt, 0)
    return type(out) is np.ndarray and out.shape == (3, 4) and out.dtype == dt


def _context_entry(kind: str, value: str, defaults: Sequence[object],
                   keep: list[object]) -> int:
    if kind == "descr":
        obj: object = numpy_dtype(value)
    elif kind == "sctype":
        obj = numpy_dtype(value).type
    else:
        obj = defaults[int(value)]
    keep.append(obj)
    return id(obj)


def make_native(spec: NativeSpec, address: int, raiser: Callable[[int], Any],
                defaults: Sequence[object], keepalive: object) -> Callable[..., Any] | None:
    """The builtin for the native entry at ``address`` (``None`` when unsupported).

    ``defaults`` are the values of the last parameters (the ``("default", i)`` context
    entries index it); ``keepalive`` is what must outlive the builtin (the code)."""
    if not address or not native_supported():
        return None
    keep: list[object] = [raiser, keepalive]
    values = list(_fixed())
    values[NATIVE_FIXED.index("raiser")] = id(raiser)
    values += [_context_entry(k, v, defaults, keep) for k, v in spec.ctx]
    context_type = type("NativeContext", (ctypes.c_uint64 * len(values),), {})
    context = context_type(*values)
    method = PyMethodDef(spec.symbol.encode(), address, METH_FASTCALL, None)
    context.keep = (keep, method)  # the builtin holds the context, the context all else
    return _new_builtin()(ctypes.addressof(method), context, None)


@functools.cache
def _new_builtin() -> Any:
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                   ctypes.c_void_p]
    return new
