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


class BorrowedBuffer(DeviceBuffer):
    """Device memory someone else owns (a torch NPU tensor): pyasc uses it and never
    frees it; ``owner`` is kept alive as long as the buffer."""

    def __init__(self, ctx: DeviceContext, ptr: int, nbytes: int, owner: Any) -> None:
        self.ctx, self.nbytes, self.ptr, self.owner = ctx, int(nbytes), int(ptr), owner
        self._open = True

    @property
    def alive(self) -> bool:
        return self._open and not self.ctx.closed

    def free(self) -> None:
        self._open = False  # the owner frees the memory


_TORCH_DTYPES = {f"torch.{name}": np.dtype(name) for name in (
    "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")}


def is_npu_tensor(value: Any) -> bool:
    """Whether ``value`` looks like a torch tensor on an Ascend NPU (``torch_npu``):
    ``value.device.type == "npu"`` and a ``data_ptr()``.  Duck-typed, so pyasc never
    imports torch."""
    device = getattr(value, "device", None)
    return getattr(device, "type", None) == "npu" and callable(getattr(value, "data_ptr", None))


def from_npu_tensor(tensor: Any, *, ctx: DeviceContext | None = None) -> DeviceArray:
    """A :class:`DeviceArray` over a contiguous torch NPU tensor's own memory (no copy;
    kernels writing it change the tensor).  Raises ``ValueError`` for a non-contiguous
    tensor or a dtype numpy has no equal of (bfloat16, complex)."""
    if not tensor.is_contiguous():
        raise ValueError("the NPU tensor is not contiguous: pass tensor.contiguous()")
    dtype = _TORCH_DTYPES.get(str(tensor.dtype))
    if dtype is None:
        raise ValueError(f"an NPU tensor of dtype {tensor.dtype} has no numpy equal; "
                         f"known: {', '.join(sorted(_TORCH_DTYPES))}")
    shape = tuple(int(d) for d in tensor.shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    ctx = ctx if ctx is not None else context()
    return DeviceArray(BorrowedBuffer(ctx, int(tensor.data_ptr()), nbytes, tensor), shape,
                       dtype)


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
