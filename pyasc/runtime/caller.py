"""Per-kernel Python callers for the fast entry, generated as straight-line code.

A kernel's fast entry takes its arguments as native parameters (arrays and
preallocated result buffers as ``PyObject*`` via ctypes ``py_object``, scalars as int64
or double), so the Python side only checks the exact type and dtype of each argument,
makes the outputs whose shapes it can compute with ``np.empty``, and calls.  Generating
that code per kernel (as ``dataclasses`` and ``namedtuple`` do) removes the loops, tuple
unpacking and attribute lookups a generic caller would pay on every call; what remains
is mostly the ctypes call itself (~2 us on the development machine).  A kernel with an
error record (``abi.error_slot``) hands ``fail`` the record's values too.

Generated source for ``relu(x: memref<8xf32>) -> alloc<8xf32>`` (``k._call.__doc__``)::

    def call(args):
        if len(args) != 1:
            check_count(abi, args)
        a0, = args
        if type(a0) is not ndarray or a0.dtype is not d0:
            check_array(0, p[0], a0)
        try:
            b0 = empty((8, ), bd0)
        except (ValueError, MemoryError) as exc:
            alloc_failed(0, exc, (8, ))
        rc = fn(a0, b0, None)
        if rc:
            fail(rc, args, ())
        out = [b0]
        return out
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from pyasc.errors import OutOfMemoryError
from pyasc.ir.types import SCALAR_TYPES
from pyasc.runtime.abi import BufferSpec, KernelABI, ResultSpec
from pyasc.runtime.marshal import (
    INDEX_MAX,
    INDEX_MIN,
    check_array,
    check_count,
    convert_scalar,
    numpy_dtype,
    python_type,
)
from pyasc.runtime.results import (
    KernelBuffer,
    one_object,
    own,
    pick_argument,
    pick_view,
    wrap_array,
)


class ResultSlots:
    """A result slot array with typed views of its scalar slots."""

    __slots__ = ("i64", "addr", "views")

    def __init__(self, abi: KernelABI) -> None:
        self.i64 = np.zeros(max(1, abi.result_slots), np.int64)
        self.addr = self.i64.ctypes.data
        self.views = [self.i64[r.slot:r.slot + 1].view(numpy_dtype(r.dtype))
                      if r.kind == "scalar" else None for r in abi.results]


def buffer_failed(buf: BufferSpec, exc: Exception, shape: tuple[int, ...]) -> NoReturn:
    """Raise what numpy raises for a result buffer of ``shape`` it could not allocate:
    ``ValueError`` for a negative dimension (a size argument of the call), else
    :class:`OutOfMemoryError`."""
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed") from None
    raise OutOfMemoryError(f"cannot allocate a {numpy_dtype(buf.dtype)} result buffer of "
                           f"shape {shape}: {exc}") from exc


def fast_argtypes(abi: KernelABI) -> list[type]:
    """ctypes argument types of the fast entry (mirrors ``entry.fast_param_types``)."""
    types: list[type] = []
    for p in abi.params:
        if p.kind == "array":
            types.append(ctypes.py_object)
        else:
            types.append(ctypes.c_double if SCALAR_TYPES[p.dtype].is_float
                         else ctypes.c_int64)
    return types + [ctypes.py_object] * sum(b.prealloc for b in abi.buffers) + \
        [ctypes.c_void_p]


def make_caller(abi: KernelABI, address: int,
                fail: Callable[[int, Any, Any], None]) -> Callable[[Any], list]:
    """A function ``call(flat_args) -> list`` for the fast entry at ``address``."""
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, *fast_argtypes(abi))
    env: dict[str, Any] = {  # ``__name__``: errors are located past it (pyasc.callsite)
        "__name__": __name__, "fn": proto(address), "abi": abi, "p": abi.params,
        "ndarray": np.ndarray, "empty": np.empty, "check_count": check_count,
        "check_array": check_array, "convert": convert_scalar, "fail": fail,
        "wrap": wrap_array, "pick": pick_argument, "pick_view": pick_view,
        "KernelBuffer": KernelBuffer, "own": own, "ResultSlots": ResultSlots, "pool": [],
        "one_object": one_object,
        "alloc_failed": lambda k, exc, shape: buffer_failed(abi.buffers[k], exc, shape),
    }
    lines = _source(abi, env)
    exec("\n".join(lines), env)  # the source comes from the ABI only, never from user text
    call = env["call"]
    call.__doc__ = f"Call kernel {abi.symbol} (generated).\n\n" + "\n".join(lines)
    return call


def _source(abi: KernelABI, env: dict[str, Any]) -> list[str]:
    n = len(abi.params)
    names = [f"a{i}" for i in range(n)]
    out = ["def call(args):", f"    if len(args) != {n}:", "        check_count(abi, args)"]
    if n:
        out.append(f"    {', '.join(names)}, = args")
    for i, p in enumerate(abi.params):
        out += _check_param(i, p.kind, p.dtype, env)
    buffers = _buffers(abi, env, out)
    needs_res = abi.result_slots > sum(b.prealloc for b in abi.buffers)
    if needs_res:
        out.append("    res = pool.pop() if pool else ResultSlots(abi)")
    call_args = names + [buffers[k] for k, b in enumerate(abi.buffers) if b.prealloc]
    call_args.append("res.addr" if needs_res else "None")
    out += [f"    rc = fn({', '.join(call_args)})", "    if rc:"]
    values = "()"
    if abi.error_slot >= 0:  # read the error record before another call may take res
        first = abi.error_slot + 2
        out.append(f"        values = res.i64[{first}:{first + abi.error_values}].tolist()")
        values = "values"
    if needs_res:
        out.append("        pool.append(res)")
    out.append(f"        fail(rc, args, {values})")
    for k, b in enumerate(abi.buffers):
        if not b.prealloc and b.shares:  # may be another buffer's memory: one owner
            shared = "".join(f"{buffers[s]}, " for s in b.shares)
            out.append(f"    {buffers[k]} = own(int(res.i64[{b.slot}]), ({shared}))")
        elif not b.prealloc:
            out.append(f"    {buffers[k]} = KernelBuffer(int(res.i64[{b.slot}]))")
    results = [_result_expr(j, r, buffers, env, abi) for j, r in enumerate(abi.results)]
    out.append(f"    out = [{', '.join(results)}]")
    if shared_results(abi):
        out.append(f"    out = one_object(out, {shared_results(abi)})")
    if needs_res:
        out.append("    pool.append(res)")
    out.append("    return out")
    return out


def _check_param(i: int, kind: str, dtype: str, env: dict[str, Any]) -> list[str]:
    a = f"a{i}"
    if kind == "array":
        env[f"d{i}"] = numpy_dtype(dtype)
        return [f"    if type({a}) is not ndarray or {a}.dtype is not d{i}:",
                f"        check_array({i}, p[{i}], {a})"]
    env[f"t{i}"] = python_type(dtype)
    cond = f"type({a}) is not t{i}"
    if dtype == "index":
        cond += f" or not {INDEX_MIN} <= {a} <= {INDEX_MAX}"
    return [f"    if {cond}:", f"        {a} = convert({i}, p[{i}], {a})"]


def _buffers(abi: KernelABI, env: dict[str, Any], out: list[str]) -> list[str]:
    names = []
    checked: set[int] = set()
    for k, b in enumerate(abi.buffers):
        names.append(f"b{k}" if b.prealloc else f"o{k}")
        if not b.prealloc:
            continue
        env[f"bd{k}"] = numpy_dtype(b.dtype)
        for i, axis in b.dim_sources:
            rank = len(abi.params[i].shape)
            if axis >= 0 and i not in checked:  # a wrong rank must not raise IndexError
                checked.add(i)
                out += [f"    if a{i}.ndim != {rank}:", f"        check_array({i}, p[{i}], a{i})"]
        out += ["    try:", f"        b{k} = empty({_shape_expr(b)}, bd{k})",
                "    except (ValueError, MemoryError) as exc:",
                f"        alloc_failed({k}, exc, {_shape_expr(b)})"]
    return names


def _shape_expr(b: BufferSpec) -> str:
    src = iter(b.dim_sources)
    dims = []
    for d in b.shape:
        if d >= 0:
            dims.append(str(d))
            continue
        i, axis = next(src)
        dims.append(f"a{i}" if axis < 0 else f"a{i}.shape[{axis}]")
    return "(" + "".join(f"{d}, " for d in dims) + ")"


def _result_expr(j: int, r: ResultSpec, buffers: list[str], env: dict[str, Any],
                 abi: KernelABI) -> str:
    if r.kind == "buffer":
        return buffers[r.buffer]
    desc = f"res.i64[{r.slot}:{r.slot + 1 + 2 * r.rank}].tolist()"
    if r.kind == "param" and r.choices:
        return f"pick(args, {r.choices}, {desc}, {r.rank})"
    if r.kind == "param":
        return f"args[{r.param}]"
    if r.kind == "scalar":
        value = f"res.views[{j}][0]"
        return f"int({value})" if r.dtype == "index" else value
    env[f"rd{j}"] = numpy_dtype(r.dtype)
    owner = f"args[{r.param}]" if r.param is not None else \
        buffers[r.buffer] if r.buffer is not None else "None"
    if r.choices or _shared(abi, r):  # memory chosen at run time (see results.pick_view)
        return f"pick_view(args, {r.choices}, {desc}, {r.rank}, rd{j}, {owner})"
    return f"wrap({owner}, {desc}, {r.rank}, rd{j}, {r.copy})"


def shared_results(abi: KernelABI) -> tuple[int, ...]:
    """The array results in a kernel-allocated buffer that may be an earlier buffer's
    memory (``BufferSpec.shares``): the same array as an earlier result, maybe."""
    return tuple(j for j, r in enumerate(abi.results)
                 if r.kind == "array" and _shared(abi, r))


def _shared(abi: KernelABI, r: ResultSpec) -> bool:
    """Whether result ``r`` lives in a buffer that may be another buffer's array: all of
    that array is returned as the array itself (the object numpy would return)."""
    return r.buffer is not None and bool(abi.buffers[r.buffer].shares)
