"""``pyasc.device_array``: an array that lives in device memory.

A :class:`DeviceArray` is a shape, a dtype and a :class:`~.memory.DeviceBuffer` holding
the C-contiguous elements.  ``target="ascend"`` kernels take it where they take a numpy
array and use its memory directly (no copy in, no copy out: a kernel writing it changes
it in place); :meth:`DeviceArray.numpy` brings the elements back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyasc.runtime.acl.codes import MemcpyKind
from pyasc.runtime.acl.context import DeviceContext, context
from pyasc.runtime.acl.memory import DeviceBuffer


class DeviceArray:
    """A C-contiguous array in device memory (see the module docstring)."""

    __pyasc_device_array__ = True

    def __init__(self, buffer: DeviceBuffer, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.buffer, self.shape, self.dtype = buffer, tuple(shape), np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ptr(self) -> int:
        """The device address of the first element."""
        return self.buffer.ptr

    def numpy(self) -> np.ndarray:
        """A host copy of the elements."""
        out = np.empty(self.shape, self.dtype)
        if out.nbytes:
            self.buffer.download(out)
        return out

    def copy_from(self, array: Any) -> None:
        """Overwrite the elements with ``array`` (same shape; cast to this dtype)."""
        host = np.ascontiguousarray(np.broadcast_to(np.asarray(array, self.dtype), self.shape))
        if host.nbytes:
            self.buffer.upload(host)

    def copy_device(self, src: DeviceArray) -> None:
        """Overwrite the elements with those of ``src`` (same shape and dtype), device to
        device (``aclrtMemcpy`` ``DEVICE_TO_DEVICE``): no host copy."""
        if src.shape != self.shape or src.dtype != self.dtype:
            raise ValueError(f"cannot copy a {src.dtype}{list(src.shape)} device array into "
                             f"a {self.dtype}{list(self.shape)} one")
        if self.nbytes and src.buffer is not self.buffer:
            self.buffer.ctx.memcpy(self.ptr, self.buffer.nbytes, src.ptr, self.nbytes,
                                   MemcpyKind.DEVICE_TO_DEVICE)

    def free(self) -> None:
        """Release the device memory now (the array is unusable afterwards)."""
        self.buffer.free()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"


def device_array(data: Any, dtype: Any = None, *, ctx: DeviceContext | None = None
                 ) -> DeviceArray:
    """Upload ``data`` (anything ``np.asarray`` takes) to a new :class:`DeviceArray`."""
    host = np.ascontiguousarray(np.asarray(data, dtype=dtype))
    ctx = ctx if ctx is not None else context()
    out = DeviceArray(DeviceBuffer(ctx, host.nbytes), host.shape, host.dtype)
    if host.nbytes:
        out.buffer.upload(host)
    return out


def empty(shape: tuple[int, ...], dtype: Any, *, ctx: DeviceContext | None = None
          ) -> DeviceArray:
    """An uninitialised :class:`DeviceArray`."""
    dt = np.dtype(dtype)
    ctx = ctx if ctx is not None else context()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    return DeviceArray(DeviceBuffer(ctx, nbytes), tuple(shape), dt)
