"""Device and pinned host buffers with deterministic lifetimes.

A :class:`DeviceBuffer` is ``aclrtMalloc`` memory of one device context.  It is freed
by :meth:`~DeviceBuffer.free`, at the end of a ``with`` block, when it is garbage
collected (``weakref.finalize``) or when its context closes, whichever comes first;
freeing twice is harmless.  A :class:`HostBuffer` is page-locked host memory
(``aclrtMallocHost``), the source or destination ``aclrtMemcpyAsync`` needs.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from pyasc.errors import AclCallError, ArgumentError, OutOfMemoryError
from pyasc.runtime.acl.codes import MemcpyKind
from pyasc.runtime.acl.context import DeviceContext, Stream


class DeviceBuffer:
    """``nbytes`` of device memory (see the module docstring)."""

    def __init__(self, ctx: DeviceContext, nbytes: int) -> None:
        self.ctx, self.nbytes = ctx, int(nbytes)
        self.ptr = ctx.malloc(self.nbytes)
        self._finalizer = weakref.finalize(self, ctx.free, self.ptr)

    @property
    def alive(self) -> bool:
        """Not freed yet (and its context is open)."""
        return self._finalizer.alive and not self.ctx.closed

    def free(self) -> None:
        """Free the memory now (once)."""
        if self._finalizer.alive:
            self._finalizer.detach()
            self.ctx.free(self.ptr)

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()

    def _host(self, array: np.ndarray) -> int:
        if not array.flags.c_contiguous or array.nbytes > self.nbytes:
            raise ArgumentError(f"a copy to or from a {self.nbytes}-byte device buffer "
                                f"needs a C-contiguous array of at most that many bytes, "
                                f"got {array.nbytes} bytes (contiguous: "
                                f"{array.flags.c_contiguous})")
        return int(array.ctypes.data)

    def upload(self, array: np.ndarray) -> None:
        """Host -> device (``aclrtMemcpy``), ``array.nbytes`` bytes at the start."""
        self.ctx._check_open()
        self.ctx.memcpy(self.ptr, self.nbytes, self._host(array), array.nbytes,
                        MemcpyKind.HOST_TO_DEVICE)

    def download(self, array: np.ndarray) -> None:
        """Device -> host (``aclrtMemcpy``) into the writable ``array``."""
        self.ctx._check_open()
        if not array.flags.writeable:
            raise ArgumentError("a download needs a writable array")
        self.ctx.memcpy(self._host(array), array.nbytes, self.ptr, array.nbytes,
                        MemcpyKind.DEVICE_TO_HOST)

    def upload_async(self, host: HostBuffer, stream: Stream) -> None:
        """Pinned host -> device on ``stream`` (``aclrtMemcpyAsync``); synchronize the
        stream before reusing ``host``."""
        self.ctx._check_open()
        count = min(host.nbytes, self.nbytes)
        try:
            self.ctx.lib.call("aclrtMemcpyAsync", self.ptr, self.nbytes, host.ptr, count,
                              MemcpyKind.HOST_TO_DEVICE, stream.handle)
        except AclCallError:
            stream.failed = True
            raise


class HostBuffer:
    """``nbytes`` of page-locked host memory from ``aclrtMallocHost``."""

    def __init__(self, ctx: DeviceContext, nbytes: int) -> None:
        self.ctx, self.nbytes = ctx, int(nbytes)
        ctx.bind_thread()
        out = ctypes.c_void_p()
        try:
            ctx.lib.call("aclrtMallocHost", ctypes.byref(out), max(self.nbytes, 1))
        except AclCallError as exc:
            raise OutOfMemoryError(f"pinned host allocation of {self.nbytes} bytes failed "
                                   f"({exc.acl_name}: {exc.recent or 'no message'})",
                                   hint="pin less host memory") from exc
        self.ptr = int(out.value or 0)
        ctx.host_live.add(self.ptr)
        self._finalizer = weakref.finalize(self, _free_host, ctx, self.ptr)

    def array(self, dtype: Any = np.uint8) -> np.ndarray:
        """A numpy view of the buffer (valid until :meth:`free`)."""
        raw = (ctypes.c_char * self.nbytes).from_address(self.ptr)
        return np.frombuffer(raw, dtype=np.dtype(dtype))

    def free(self) -> None:
        """``aclrtFreeHost`` now (once)."""
        if self._finalizer.alive:
            self._finalizer.detach()
            _free_host(self.ctx, self.ptr)

    def __enter__(self) -> HostBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def _free_host(ctx: DeviceContext, ptr: int) -> None:
    if ctx.closed or ptr not in ctx.host_live:
        return
    ctx.host_live.discard(ptr)
    try:
        ctx.lib.call("aclrtFreeHost", ptr)
    except AclCallError:
        ctx.host_live.add(ptr)  # freed again when the context closes
        raise
