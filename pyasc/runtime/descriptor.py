"""The portable way to call a kernel: its descriptor entry (see ``abi.py``).

Arguments are validated completely in Python, then written as descriptors (data pointer,
dims, strides in elements) and scalar values into a slot array.  About five times slower
per call than the fast entry, but it relies on nothing but numpy's public Python API;
the runtime uses it where numpy's struct layout cannot be confirmed, and tests use it to
cross-check the fast entry.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyasc.runtime.abi import KernelABI, ResultSpec
from pyasc.runtime.caller import ResultSlots, buffer_failed, shared_results
from pyasc.runtime.marshal import check_array, check_count, convert_scalar, numpy_dtype
from pyasc.runtime.results import one_object, own, pick_argument, pick_view, wrap_array

_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


class _Slots:
    """Argument and result slot arrays for one in-flight call."""

    __slots__ = ("args", "args_addr", "views", "res")

    def __init__(self, abi: KernelABI) -> None:
        self.args = np.zeros(max(1, abi.arg_slots), np.int64)
        self.args_addr = self.args.ctypes.data
        self.views = [self.args[p.slot:p.slot + 1].view(numpy_dtype(p.dtype))
                      if p.kind == "scalar" else None for p in abi.params]
        self.res = ResultSlots(abi)


def error_values(abi: KernelABI, res: np.ndarray) -> list[int]:
    """The run-time values of the error record in the result slots ``res``."""
    if abi.error_slot < 0:
        return []
    first = abi.error_slot + 2
    return res[first:first + abi.error_values].tolist()


class DescriptorCaller:
    """``call(flat_args) -> list`` through the descriptor entry at ``address``."""

    def __init__(self, abi: KernelABI, address: int,
                 fail: Callable[[int, Sequence[Any], Sequence[int]], None]) -> None:
        self.abi = abi
        self.fn = _PROTO(address)
        self.fail = fail
        self.pool: list[_Slots] = []

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        check_count(self.abi, args)
        slots = self.pool.pop() if self.pool else _Slots(self.abi)
        try:
            buffers = self._fill(slots, args)
            rc = self.fn(slots.args_addr, slots.res.addr)
            if rc:
                self.fail(rc, args, error_values(self.abi, slots.res.i64))
            owners: list[Any] = []
            for b, spec in zip(buffers, self.abi.buffers, strict=True):
                ptr = int(slots.res.i64[spec.slot])
                owners.append(b if b is not None else
                              own(ptr, [owners[s] for s in spec.shares]))
            out = [self._result(j, r, slots.res, args, owners, self.abi)
                   for j, r in enumerate(self.abi.results)]
            return one_object(out, shared_results(self.abi))
        finally:
            self.pool.append(slots)

    def _fill(self, slots: _Slots, args: Sequence[Any]) -> list[Any]:
        a64 = slots.args
        for i, (spec, a) in enumerate(zip(self.abi.params, args, strict=True)):
            if spec.kind == "scalar":
                slots.views[i][0] = convert_scalar(i, spec, a)
                continue
            check_array(i, spec, a)
            s, r = spec.slot, a.ndim
            a64[s] = a.ctypes.data
            a64[s + 1:s + 1 + r] = a.shape
            a64[s + 1 + r:s + 1 + 2 * r] = [st // a.itemsize for st in a.strides]
        buffers: list[Any] = []
        for b in self.abi.buffers:
            try:
                out = np.empty(b.runtime_shape(args), numpy_dtype(b.dtype)) if b.prealloc \
                    else None
            except (ValueError, MemoryError) as exc:
                buffer_failed(b, exc, b.runtime_shape(args))
            if out is not None:
                slots.res.i64[b.slot] = out.ctypes.data
            buffers.append(out)
        return buffers

    @staticmethod
    def _result(j: int, r: ResultSpec, res: ResultSlots, args: Sequence[Any],
                owners: list[Any], abi: KernelABI) -> Any:
        if r.kind == "buffer":
            return owners[r.buffer]
        if r.kind == "param" and r.choices:
            desc = res.i64[r.slot:r.slot + 1 + 2 * r.rank].tolist()
            return pick_argument(args, r.choices, desc, r.rank)
        if r.kind == "param":
            return args[r.param]
        if r.kind == "scalar":
            v = res.views[j][0]
            return int(v) if r.dtype == "index" else v
        owner = args[r.param] if r.param is not None else \
            owners[r.buffer] if r.buffer is not None else None
        desc = res.i64[r.slot:r.slot + 1 + 2 * r.rank].tolist()
        shares = r.buffer is not None and abi.buffers[r.buffer].shares
        if r.choices or shares:  # memory chosen at run time
            return pick_view(args, r.choices, desc, r.rank, numpy_dtype(r.dtype), owner)
        return wrap_array(owner, desc, r.rank, numpy_dtype(r.dtype), r.copy)
