"""Turning a kernel's result slots into Python objects.

Memory a kernel allocated for a result (``aligned_alloc``) is wrapped in a
:class:`KernelBuffer`, which calls ``free`` when the last array using it is
garbage-collected.  numpy learns about such memory through ``__array_interface__`` of a
small :class:`ArrayMemory` object that also holds the owner (a ``KernelBuffer``, the
caller's argument array for views of it, or the runtime's preallocated array), so the
returned array's ``base`` chain keeps the memory alive exactly as long as needed.
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
    mem = ArrayMemory(owner, desc[0] & (2 ** 64 - 1), shape, strides, dtype, readonly=copy)
    arr = np.asarray(mem)
    return arr.copy() if copy else arr


def pick_argument(args: Sequence[Any], choices: Sequence[int], desc: list[int],
                  rank: int) -> Any:
    """The argument among ``choices`` whose memory a result descriptor describes (the
    kernel returned ``x if c else y``): the caller gets its own object back."""
    for i in choices:
        a = args[i]
        interface = a.__array_interface__
        strides = a.strides
        if interface["data"][0] == desc[0] and list(a.shape) == desc[1:1 + rank] and \
                [s // a.itemsize for s in strides] == desc[1 + rank:1 + 2 * rank]:
            return a
    raise InternalCompilerError("a kernel returned memory that belongs to none of the "
                                f"arguments {list(choices)}")
