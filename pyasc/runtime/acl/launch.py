"""One kernel launch through AscendCL: arguments to the device, launch, results back.

:func:`launch` gives each array parameter a device address: a numpy array is copied
into a fresh :class:`~.memory.DeviceBuffer` (and, when the kernel writes it, copied
back after the stream is synchronized), a :class:`~.device_array.DeviceArray` or a
torch NPU tensor is passed as it is.  The argument block is packed from the kernel's
signature (:mod:`.packing`), launched with ``aclrtLaunchKernelWithHostArgs`` on a
pooled stream and waited for.  Every buffer of the launch is freed when it returns or
raises.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from pyasc.errors import AclCallError, ArgumentError, DeviceError
from pyasc.runtime.acl.context import DeviceContext, LoadedBinary
from pyasc.runtime.acl.memory import DeviceBuffer
from pyasc.runtime.acl.packing import pack_arguments

CopyBack = list[tuple[np.ndarray, DeviceBuffer]]


def torch_npu_address(arg: Any) -> int | None:
    """The device address of a torch tensor on an NPU (``torch_npu``), else ``None``.
    Untested here: no torch_npu on the build machine."""
    device = getattr(arg, "device", None)
    if getattr(device, "type", None) != "npu" or not hasattr(arg, "data_ptr"):
        return None
    if not arg.is_contiguous():
        raise ArgumentError("an NPU tensor passed to a kernel must be contiguous",
                            hint="pass tensor.contiguous()")
    return int(arg.data_ptr())


def _address(ctx: DeviceContext, stack: contextlib.ExitStack, arg: Any, written: bool,
             back: CopyBack) -> int:
    if getattr(arg, "__pyasc_device_array__", False):
        if arg.buffer.ctx is not ctx or not arg.buffer.alive:
            raise DeviceError("a device array of a closed device context was passed",
                              hint="create device arrays again after shutdown()")
        return int(arg.ptr)
    address = torch_npu_address(arg)
    if address is not None:
        return address
    if not isinstance(arg, np.ndarray) or not arg.flags.c_contiguous:
        raise ArgumentError(f"a kernel array argument must be a C-contiguous numpy array, "
                            f"a pyasc.device_array or an NPU tensor, got {type(arg).__name__}")
    buf = stack.enter_context(DeviceBuffer(ctx, arg.nbytes))
    buf.upload(arg)
    if written:
        back.append((arg, buf))
    return buf.ptr


def launch(ctx: DeviceContext, binary: LoadedBinary, kernel: str, block_dim: int,
           codes: Sequence[str], args: Sequence[Any],
           writes: Collection[int] | None = None) -> dict[str, int]:
    """Run ``kernel`` of ``binary`` on ``block_dim`` blocks (see the module docstring);
    ``writes``: the positions of the arrays it writes (``None``: every array)."""
    if len(codes) != len(args):
        raise ArgumentError(f"kernel '{kernel}' takes {len(codes)} arguments "
                            f"({', '.join(codes)}), got {len(args)}")
    ctx.bind_thread()
    back: CopyBack = []
    with contextlib.ExitStack() as stack:
        values = [_address(ctx, stack, arg, writes is None or i in writes, back)
                  if code == "ptr" else arg
                  for i, (code, arg) in enumerate(zip(codes, args, strict=True))]
        block = pack_arguments(codes, values)
        host = ctypes.create_string_buffer(block, len(block)) if block else None
        fn = binary.function(kernel)
        with ctx.stream() as stream:
            try:
                ctx.lib.call("aclrtLaunchKernelWithHostArgs", fn, block_dim, stream.handle,
                             None, host, len(block), None, 0)
            except AclCallError:
                stream.failed = True
                raise
            stream.synchronize()
        for array, buf in back:
            buf.download(array)
    return {}
