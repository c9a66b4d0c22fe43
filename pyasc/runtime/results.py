"""Turning a kernel's result slots into Python objects.

Memory a kernel allocated for a result (``aligned_alloc``) is wrapped in a
:class:`KernelBuffer`, which calls ``free`` when the last array using it is
garbage-collected.  numpy learns about such memory through ``__array_interface__`` of a
small :class:`ArrayMemory` object that also holds the owner (a ``KernelBuffer``, the
caller's argument array for views of it, or the runtime's preallocated array), so the
returned array's ``base`` chain keeps the memory alive exactly as long as needed.

A result whose memory the kernel chose at run time among arguments, views of them and
a result buffer (``y = x if c else np.zeros_like(x)``, or ``x[1:]`` returned on one
path and ``x[:-1]`` on another) is told apart by its data pointer: all of an argument
is that argument (the caller's own object, as for a parameter returned as-is), a
pointer into an argument's memory is a view of it, anything else is the buffer
(:func:`pick_view`).  Live allocations never overlap, so the test is exact.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from pyasc.errors import InternalCompilerError

_libc = ctypes.CDLL(None)
_free = _libc.free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None


class KernelBuffer:
    """Owns one allocation made by compiled code; frees it when collected."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __del__(self) -> None:
        if self.ptr:
            _free(self.ptr)
            self.ptr = 0


def own(ptr: int, shared: Sequence[Any]) -> Any:
    """The owner of the result memory at ``ptr`` that a kernel allocated, unless it is
    the memory of one of the ``shared`` buffers' owners (a preallocated array or a
    :class:`KernelBuffer`): then that owner, so the memory is freed exactly once.  Buffer
    pointers are allocation starts and live allocations are distinct, so equality of
    start pointers is the exact test."""
    for owner in shared:
        start = owner.ptr if type(owner) is KernelBuffer else \
            owner.__array_interface__["data"][0]
        if start == ptr:
            return owner
    return KernelBuffer(ptr)


class ArrayMemory:
    """An ``__array_interface__`` provider that keeps ``owner`` alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner: Any, data: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], dtype: np.dtype, readonly: bool = False) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "version": 3, "data": (data, readonly), "shape": shape,
            "strides": strides, "typestr": dtype.str, "descr": dtype.descr,
        }


def wrap_array(owner: Any, desc: list[int], rank: int, dtype: np.dtype,
               copy: bool = False) -> np.ndarray:
    """The numpy array described by a result descriptor ``[data, shape.., strides..]``."""
    shape = tuple(desc[1:1 + rank])
    strides = tuple(s * dtype.itemsize for s in desc[1 + rank:1 + 2 * rank])
    mem = ArrayMemory(owner, desc[0] & _MASK, shape, strides, dtype, readonly=copy)
    arr = np.asarray(mem)
    return arr.copy() if copy else arr


def pick_argument(args: Sequence[Any], choices: Sequence[int], desc: list[int],
                  rank: int) -> Any:
    """The argument among ``choices`` whose memory a result descriptor describes (the
    kernel returned ``x if c else y``): the caller gets its own object back."""
    for i in choices:
        if _describes(args[i], desc, rank):
            return args[i]
    raise InternalCompilerError("a kernel returned memory that belongs to none of the "
                                f"arguments {list(choices)}")


def pick_view(args: Sequence[Any], choices: Sequence[int], desc: list[int], rank: int,
              dtype: np.dtype, buffer: Any = None) -> np.ndarray:
    """The array a result descriptor describes when the kernel chose its memory at run
    time among the arguments ``choices``, views of them and the result ``buffer`` (a
    preallocated array, a :class:`KernelBuffer`, or ``None``): all of an argument is
    that argument itself, a view of one shares its memory, else it is (a view of) the
    buffer."""
    for i in choices:
        if _describes(args[i], desc, rank):
            return args[i]
    data = desc[0] & _MASK
    for i in choices:
        if _within(args[i], data):
            return wrap_array(args[i], desc, rank, dtype)
    if buffer is None:
        raise InternalCompilerError("a kernel returned memory that belongs to none of the "
                                    f"arguments {list(choices)}")
    if type(buffer) is np.ndarray and _describes(buffer, desc, rank):
        return buffer
    return wrap_array(buffer, desc, rank, dtype)


def one_object(out: list, indices: Sequence[int]) -> list:
    """numpy returns an array bound to two returned names as one object: each result
    among ``indices`` (whose memory may be an earlier result's) that describes exactly
    the memory of an earlier array result (data pointer, shape, strides, dtype) is
    replaced by that result."""
    for j in indices:
        a = out[j]
        start = a.__array_interface__["data"][0]
        for b in out[:j]:
            if type(b) is np.ndarray and b.shape == a.shape and b.strides == a.strides \
                    and b.dtype == a.dtype and b.__array_interface__["data"][0] == start:
                out[j] = b
                break
    return out


_MASK = 2 ** 64 - 1


def _describes(a: np.ndarray, desc: list[int], rank: int) -> bool:
    """Whether ``desc`` (``[data, shape.., strides in elements..]``) is all of ``a``."""
    return a.__array_interface__["data"][0] == desc[0] & _MASK and \
        list(a.shape) == desc[1:1 + rank] and \
        [s // a.itemsize for s in a.strides] == desc[1 + rank:1 + 2 * rank]


def _within(a: np.ndarray, ptr: int) -> bool:
    """Whether ``ptr`` lies in ``a``'s memory, ends included (an empty view may point
    just past the last element)."""
    lo = hi = a.__array_interface__["data"][0]
    if a.size:
        for d, s in zip(a.shape, a.strides, strict=True):
            lo, hi = (lo + s * (d - 1), hi) if s < 0 else (lo, hi + s * (d - 1))
        hi += a.itemsize
    return lo <= ptr <= hi
