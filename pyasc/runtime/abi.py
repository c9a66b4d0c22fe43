"""The calling convention between compiled CPU kernels and the Python runtime.

A kernel has two native entry points.

``int32_t k(uint64_t *args, uint64_t *res)`` -- the descriptor entry, usable from C.
    ``args`` is a flat array of 8-byte slots.  Parameter ``i`` starts at slot
    ``params[i].slot``: a scalar occupies one slot holding its value in its storage type
    at the slot's first bytes (``bool`` one byte, ``float16`` two, ``index`` an int64);
    an array of rank ``r`` occupies ``1 + 2r`` slots ``[data, shape[r], strides[r]]`` with
    strides in ELEMENTS (negative allowed) and ``data`` pointing at element ``[0,...,0]``.
    Nothing is validated: the caller guarantees dtype, rank, static dims, layout class
    and alignment.

``int32_t k.py(a_0, ..., a_{n-1}, b_0, ..., b_{m-1}, uint64_t *res)`` -- the fast entry.
    ``a_i`` is the address of the ``PyArrayObject`` for an array parameter, an
    ``int64_t`` for an integer or bool scalar, a ``double`` for a float scalar; ``b_j``
    is the ``PyArrayObject`` address of the preallocated result buffer ``j`` (in
    ``buffers`` order).  The entry reads data, dims, strides and flags from numpy's
    public struct, checks rank, static dims, layout class, alignment and writeability,
    and returns ``ERR_ARGS`` (-1) on any mismatch so that Python can explain it.

``res`` is a flat array of 8-byte result slots (the fast entry accepts NULL when the
kernel has none besides buffer pointers).  Result ``j`` starts at ``results[j].slot``: a
scalar is one slot; an array of rank ``r`` is ``1 + 2r`` slots written like an argument
descriptor.  Then one slot per result buffer (``buffers[b].slot``): for a
*preallocated* buffer the descriptor-entry caller stores its data pointer there before
the call; for a buffer the kernel allocates, the kernel stores the ``aligned_alloc``
pointer, which the caller frees once the returned array is garbage-collected (NULL
when the kernel did not allocate it: a result chosen at run time that was an argument).

Both return 0 on success, or ``k >= 1`` for ``errors[k - 1]``: a failed ``func.assert``,
a zero loop step or an allocation failure, or ``ERR_INTERRUPT`` when a signal handler
raised while the kernel ran.  A failing kernel frees its own temporaries.
When some error site reports run-time values (``ErrorSpec.values``, e.g. the index and
the axis size of a failed bounds check), ``res`` ends with the *error record* at slot
``error_slot``: ``[lock, key, v_0, ..., v_{m-1}]``; the failing site stores its values
in ``v_0...`` before returning its code (``lock`` and ``key`` let the iterations of a
parallel loop that fail at once keep the values of the first failing iteration, whose
code the pool returns).

``PyObject *k.pycall(PyObject *ctx, PyObject *const *args, Py_ssize_t nargs)`` -- the
optional native entry (:class:`NativeSpec`), a ``METH_FASTCALL`` builtin taking the
Python call itself: it checks each argument exactly against the specialization (type,
dtype, rank, static dims, layout class, scalar kind), allocates the preallocated
results with numpy's ``PyArray_Empty``, calls the core without the GIL and builds the
return value.  It answers the ``MISS`` object, having called nothing, when any check
fails.  ``ctx`` is a ctypes array (its data pointer at offset 16 of the object) of
addresses: :data:`NATIVE_FIXED` first, then the kernel's own ``NativeSpec.ctx`` entries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

ERR_ARGS = -1
"""Return code of the fast ABI when an argument does not fit the specialization."""

ERR_INTERRUPT = -2
"""Return code of a kernel that stopped because a signal handler raised while it ran
(``KeyboardInterrupt`` on Ctrl-C; see ``pyasc.runtime.interrupt``)."""

ABI_VERSION = 4

PYARRAY_OFFSETS = {"data": 16, "nd": 24, "dims": 32, "strides": 40, "descr": 56,
                   "flags": 64}
"""Byte offsets of fields in numpy's public ``PyArrayObject_fields`` (64-bit CPython)."""

OB_TYPE_OFFSET = 8
"""Offset of ``ob_type`` in a CPython object; a float's or a numpy scalar's value and
a ctypes object's data pointer sit right after the header, at offset 16."""
VALUE_OFFSET = 16

NATIVE_FIXED = (
    "PyArray_Type", "PyFloat_Type", "PyLong_Type", "Py_True", "Py_False", "Py_None", "MISS",
    "raiser", "Py_IncRef", "Py_DecRef", "PyArray_Empty", "PyArray_Scalar",
    "PyFloat_FromDouble", "PyLong_FromLongLong", "PyBool_FromLong",
    "PyLong_AsLongLongAndOverflow", "PyTuple_New", "PyTuple_SetItem", "PyList_New",
    "PyList_SetItem", "PyErr_Clear", "PyObject_CallFunctionObjArgs", "PyEval_SaveThread",
    "PyEval_RestoreThread",
)
"""The first context slots of every native entry: objects, then C-API functions
(``raiser`` is the Python function turning a kernel's error code into an exception)."""


@dataclass(frozen=True)
class ParamSpec:
    """One flat parameter: an array (memref) or a scalar."""

    name: str
    kind: str  # "array" | "scalar"
    dtype: str  # IR scalar type name ("f32", "index", ...)
    slot: int
    shape: tuple[int, ...] = ()  # -1 where dynamic
    strides: tuple[int, ...] | None = None  # layout class; None = C-contiguous
    writes: bool = False  # the kernel writes into the array


@dataclass(frozen=True)
class ResultSpec:
    """One flat result.

    ``kind``: ``"scalar"``; ``"param"`` (the caller's own argument ``param`` is returned,
    or, with ``choices``, the one of those arguments whose memory the result descriptor
    shows: ``x if c else y``);
    ``"buffer"`` (the whole preallocated result buffer ``buffer``, returned as the
    runtime's own ``np.empty`` array); ``"array"`` (a view described by the result
    descriptor whose memory belongs to argument ``param``, to result buffer ``buffer``,
    or to read-only kernel constants when ``copy`` is true: then the runtime copies it;
    with ``choices``, memory chosen at run time: all of one of those arguments (returned
    as the argument itself), a view of one, or else result buffer ``buffer``).
    """

    kind: str
    dtype: str
    slot: int
    rank: int = 0
    param: int | None = None
    buffer: int | None = None
    copy: bool = False
    choices: tuple[int, ...] = ()  # arguments the memory is chosen among at run time


@dataclass(frozen=True)
class BufferSpec:
    """Memory backing array results: preallocated by the runtime or allocated by the kernel.

    A preallocated buffer's shape is ``shape`` with each ``-1`` replaced, in order, by
    ``dim_sources``: ``(i, axis)`` is ``args[i].shape[axis]``, ``(i, -1)`` the integer
    argument ``args[i]`` itself.

    ``shares``: earlier buffers whose memory this kernel-allocated buffer's pointer may
    be (``row`` returned after ``t2 = row`` and a branch that may rebind ``row``): the
    runtime then uses that buffer's owner instead of taking ownership a second time.
    """

    slot: int
    prealloc: bool
    dtype: str
    shape: tuple[int, ...] = ()
    dim_sources: tuple[tuple[int, int], ...] = ()
    shares: tuple[int, ...] = ()

    def runtime_shape(self, args: Sequence[Any]) -> tuple[int, ...]:
        """The concrete shape of a preallocated buffer for the call ``args``."""
        src = iter(self.dim_sources)
        out = []
        for d in self.shape:
            if d >= 0:
                out.append(d)
                continue
            i, axis = next(src)
            out.append(int(args[i]) if axis < 0 else args[i].shape[axis])
        return tuple(out)


@dataclass(frozen=True)
class ErrorSpec:
    """A run-time error site: ``kind`` in assert/bounds/shape/value/memory.

    ``message`` is a template when ``values > 0``: the kernel stores that many int64
    values in the error slots (see :class:`KernelABI`) before returning the site's code.
    ``file``/``line``/``col``/``source`` locate the check in the user's code (``line``
    0: unknown; ``source`` is the source line, read when the kernel was compiled).
    """

    kind: str
    message: str
    values: int = 0
    file: str | None = None
    line: int = 0
    col: int = 0
    source: str | None = None


@dataclass(frozen=True)
class NativeSpec:
    """The native entry ``symbol``: ``nmin`` to ``len(kinds)`` positional arguments of
    the given kinds (``"array:C|inner|strided"``, ``"py:float|int|bool"``,
    ``"np:<dtype>"``); ``result`` is the JSON tree of the return value (see
    ``pyasc.jit.callplan``); ``ctx`` the kernel's context entries after
    :data:`NATIVE_FIXED`: ``("descr", dtype)``, ``("sctype", dtype)`` (a numpy scalar
    type) or ``("default", i)`` (the default value of parameter ``i``)."""

    symbol: str
    nmin: int
    kinds: tuple[str, ...]
    result: Any
    ctx: tuple[tuple[str, str], ...]

    @classmethod
    def from_json(cls, data: dict) -> NativeSpec:
        """Inverse of ``asdict``; raises on malformed data."""
        return cls(str(data["symbol"]), int(data["nmin"]), tuple(map(str, data["kinds"])),
                   data["result"], tuple((str(k), str(v)) for k, v in data["ctx"]))


@dataclass(frozen=True)
class KernelABI:
    """Everything the runtime needs to call a kernel; stored as JSON in the disk cache."""

    symbol: str
    py_symbol: str
    params: tuple[ParamSpec, ...]
    results: tuple[ResultSpec, ...]
    buffers: tuple[BufferSpec, ...]
    errors: tuple[ErrorSpec, ...]
    arg_slots: int
    result_slots: int
    native: NativeSpec | None = None
    error_slot: int = -1

    @property
    def error_values(self) -> int:
        """How many value slots follow the error record's header (0: no record)."""
        return max((e.values for e in self.errors), default=0)

    def to_json(self) -> dict:
        """Plain JSON data (no pickle)."""
        data = asdict(self)
        data["version"] = ABI_VERSION
        return data

    @classmethod
    def from_json(cls, data: dict) -> KernelABI:
        """Inverse of :meth:`to_json`; raises ``ValueError``/``KeyError``/``TypeError``."""
        if data.get("version") != ABI_VERSION:
            raise ValueError(f"ABI version {data.get('version')} != {ABI_VERSION}")
        return cls(
            symbol=str(data["symbol"]), py_symbol=str(data["py_symbol"]),
            params=tuple(ParamSpec(**_tuples(p, ("shape", "strides")))
                         for p in data["params"]),
            results=tuple(ResultSpec(**_tuples(r, ("choices",))) for r in data["results"]),
            buffers=tuple(BufferSpec(**_buffer(b)) for b in data["buffers"]),
            errors=tuple(ErrorSpec(**e) for e in data["errors"]),
            arg_slots=int(data["arg_slots"]), result_slots=int(data["result_slots"]),
            native=None if data.get("native") is None
            else NativeSpec.from_json(data["native"]),
            error_slot=int(data.get("error_slot", -1)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


def _buffer(d: dict) -> dict:
    out = _tuples(d, ("shape", "shares"))
    out["dim_sources"] = tuple((int(i), int(a)) for i, a in d.get("dim_sources", ()))
    return out


def _tuples(d: dict, keys: tuple[str, ...]) -> dict:
    out = dict(d)
    for k in keys:
        if out.get(k) is not None:
            out[k] = tuple(int(x) for x in out[k])
    return out
