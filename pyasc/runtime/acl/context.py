"""The device context: one per process, with its streams, memory and loaded binaries.

Lifetimes:

* ``aclInit`` once per process and library (``ACL_ERROR_REPEAT_INITIALIZE`` means
  someone else, e.g. torch_npu, initialised it: accepted, and then pyasc does not call
  ``aclFinalize``); ``aclFinalize`` at exit (``atexit``).
* ``aclrtSetDevice`` in every thread that uses the device (ACL binds the device per
  thread), undone by as many ``aclrtResetDevice`` when the context closes.
* Streams come from a pool (one per concurrent launch); a stream whose work failed is
  destroyed instead of reused.
* Device memory is counted (:attr:`DeviceContext.live`); closing the context frees what
  is left.  Kernel objects are loaded once per context, SoC and magic (the core type
  they are loaded for), keyed by the digest of their bytes, and unloaded when it
  closes.
* In a forked child the parent's context is dropped without any ACL call (its handles
  belong to the parent) and the child opens its own on first use.

:func:`context` returns the process's context (opening it); :func:`shutdown` closes it
(the next :func:`context` opens a new one; ``aclFinalize`` waits for the exit).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping

from pyasc.errors import AclCallError, DeviceError, OutOfMemoryError
from pyasc.runtime.acl.binding import AclLibrary
from pyasc.runtime.acl.codes import (
    ACL_ERROR_REPEAT_INITIALIZE,
    BinaryMagic,
    DevAttr,
    MallocPolicy,
    MemcpyKind,
    magic_options,
)
from pyasc.runtime.acl.lookup import load_library

DEVICE_VARIABLE = "PYASC_ACL_DEVICE"
TIMEOUT_VARIABLE = "PYASC_ACL_TIMEOUT_MS"


def initialize(lib: AclLibrary) -> None:
    """``aclInit(NULL)`` once per process (see the module docstring)."""
    with lib.init_lock:
        if lib.initialized:
            return
        rc = lib.call_rc("aclInit", None)
        if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
            raise lib.error("aclInit", rc)
        lib.initialized, lib.owns_init = True, rc == 0


def device_count(lib: AclLibrary) -> int:
    """``aclrtGetDeviceCount``."""
    count = ctypes.c_uint32()
    lib.call("aclrtGetDeviceCount", ctypes.byref(count))
    return count.value


def soc_name(lib: AclLibrary) -> str:
    """``aclrtGetSocName()`` (NULL is an :class:`AclCallError`)."""
    name = lib.string("aclrtGetSocName")
    if not name:
        recent = lib.recent_message()
        raise AclCallError(f"aclrtGetSocName returned NULL: {recent or 'no message'}",
                           acl_code=-1, acl_name="NULL", call="aclrtGetSocName",
                           recent=recent)
    return name


class Stream:
    """An ``aclrtStream`` of a context; ``failed`` once its work reported an error."""

    def __init__(self, ctx: DeviceContext, handle: int) -> None:
        self.ctx, self.handle, self.failed = ctx, handle, False

    def synchronize(self, timeout_ms: int | None = None) -> None:
        """Wait for the stream's work; ``timeout_ms`` (else ``PYASC_ACL_TIMEOUT_MS``)
        bounds the wait (``aclrtSynchronizeStreamWithTimeout``)."""
        if timeout_ms is None and os.environ.get(TIMEOUT_VARIABLE, "").strip():
            timeout_ms = int(os.environ[TIMEOUT_VARIABLE])
        try:
            if timeout_ms is None:
                self.ctx.lib.call("aclrtSynchronizeStream", self.handle)
            else:
                self.ctx.lib.call("aclrtSynchronizeStreamWithTimeout", self.handle,
                                  timeout_ms)
        except AclCallError:
            self.failed = True
            raise


class LoadedBinary:
    """A kernel object loaded by ``aclrtBinaryLoadFromData``, with its functions."""

    def __init__(self, ctx: DeviceContext, handle: int, digest: str, magic: int) -> None:
        self.ctx, self.handle, self.digest, self.magic = ctx, handle, digest, magic
        self._functions: dict[str, int] = {}

    def function(self, name: str) -> int:
        """The ``aclrtFuncHandle`` of kernel ``name`` (looked up once)."""
        handle = self._functions.get(name)
        if handle is None:
            out = ctypes.c_void_p()
            self.ctx.lib.call("aclrtBinaryGetFunction", self.handle, name.encode(),
                              ctypes.byref(out))
            handle = self._functions[name] = int(out.value or 0)
        return handle


class DeviceContext:
    """One device of one process (see the module docstring)."""

    def __init__(self, lib: AclLibrary, device_id: int) -> None:
        self.lib, self.device_id, self.pid = lib, device_id, os.getpid()
        self.closed = False
        self.soc_name = ""
        self.live: dict[int, int] = {}  # device address -> bytes
        self.host_live: set[int] = set()  # aclrtMallocHost addresses
        self._lock = threading.RLock()
        self._local = threading.local()
        self._set_device_calls = 0
        self._free_streams: list[Stream] = []
        self._streams: set[int] = set()
        self._binaries: dict[tuple[str, str, int], LoadedBinary] = {}

    def open(self) -> DeviceContext:
        """Initialise ACL, check the device id, bind this thread, read the SoC name."""
        initialize(self.lib)
        count = device_count(self.lib)
        if not 0 <= self.device_id < count:
            raise DeviceError(f"device {self.device_id} does not exist: AscendCL reports "
                              f"{count} device(s)",
                              hint=f"set {DEVICE_VARIABLE} to a device in 0..{count - 1}"
                              if count else "check the NPU driver (npu-smi info)")
        try:
            self.bind_thread()
            self.soc_name = soc_name(self.lib)
        except AclCallError:
            self.close()  # undo a successful aclrtSetDevice
            raise
        return self

    def _check_open(self) -> None:
        if self.closed:
            raise DeviceError("the device context was shut down; its buffers are gone",
                              hint="create the device arrays again after shutdown()")

    def bind_thread(self) -> None:
        """``aclrtSetDevice`` once in the calling thread."""
        self._check_open()
        if getattr(self._local, "bound", False):
            return
        self.lib.call("aclrtSetDevice", self.device_id)
        with self._lock:
            self._set_device_calls += 1
        self._local.bound = True

    def vector_core_count(self) -> int:
        """``aclrtGetDeviceInfo(ACL_DEV_ATTR_VECTOR_CORE_NUM)``."""
        value = ctypes.c_int64()
        self.lib.call("aclrtGetDeviceInfo", self.device_id, DevAttr.VECTOR_CORE_NUM,
                      ctypes.byref(value))
        return value.value

    # -- memory
    def malloc(self, nbytes: int) -> int:
        """``aclrtMalloc`` (a failure is E50003 with the byte counts)."""
        self.bind_thread()
        out = ctypes.c_void_p()
        try:
            self.lib.call("aclrtMalloc", ctypes.byref(out), max(nbytes, 1),
                          MallocPolicy.HUGE_FIRST)
        except AclCallError as exc:
            raise OutOfMemoryError(
                f"device allocation of {nbytes} bytes failed ({exc.acl_name}: "
                f"{exc.recent or 'no message'}); pyasc holds {sum(self.live.values())} "
                f"bytes in {len(self.live)} device buffers",
                hint="free device arrays you no longer need, or split the data") from exc
        ptr = int(out.value or 0)
        with self._lock:
            self.live[ptr] = nbytes
        return ptr

    def free(self, ptr: int) -> None:
        """``aclrtFree`` of a live allocation of this context (else nothing)."""
        with self._lock:
            if self.closed or self.pid != os.getpid():
                return
            nbytes = self.live.pop(ptr, None)
        if nbytes is None:
            return
        try:
            self.bind_thread()
            self.lib.call("aclrtFree", ptr)
        except AclCallError:
            with self._lock:  # still allocated: freed again when the context closes
                self.live[ptr] = nbytes
            raise

    def memcpy(self, dst: int, dst_max: int, src: int, count: int, kind: MemcpyKind) -> None:
        """``aclrtMemcpy`` (synchronous)."""
        self.bind_thread()
        if count:
            self.lib.call("aclrtMemcpy", dst, dst_max, src, count, kind)

    # -- streams
    @contextlib.contextmanager
    def stream(self) -> Iterator[Stream]:
        """A stream from the pool for the duration of the block."""
        self.bind_thread()
        with self._lock:
            s = self._free_streams.pop() if self._free_streams else None
        if s is None:
            out = ctypes.c_void_p()
            self.lib.call("aclrtCreateStream", ctypes.byref(out))
            s = Stream(self, int(out.value or 0))
            with self._lock:
                self._streams.add(s.handle)
        try:
            yield s
        finally:
            self._return_stream(s)

    def _return_stream(self, s: Stream) -> None:
        with self._lock:
            if not s.failed and not self.closed:
                self._free_streams.append(s)
                return
            self._streams.discard(s.handle)
        if not self.closed:
            self.lib.call("aclrtDestroyStream", s.handle)

    # -- binaries
    def binary(self, obj: bytes, magic: int = BinaryMagic.VECTOR_CORE) -> LoadedBinary:
        """The kernel object ``obj`` loaded with ``magic`` (its core type): loaded once
        per context, SoC and magic."""
        self.bind_thread()
        key = (self.soc_name, hashlib.sha256(obj).hexdigest(), int(magic))
        with self._lock:
            loaded = self._binaries.get(key)
            if loaded is None:
                options, _option = magic_options(magic)
                handle = ctypes.c_void_p()
                self.lib.call("aclrtBinaryLoadFromData", obj, len(obj), ctypes.byref(options),
                              ctypes.byref(handle))
                loaded = LoadedBinary(self, int(handle.value or 0), key[1], magic)
                self._binaries[key] = loaded
        return loaded

    def loaded_binaries(self) -> int:
        """How many kernel objects this context has loaded."""
        return len(self._binaries)

    # -- closing
    def close(self, finalize: bool = False) -> list[AclCallError]:
        """Free what is left, destroy streams, unload binaries, reset the device (and
        ``aclFinalize`` when ``finalize`` and pyasc initialised ACL).  Every step runs;
        returns the errors of the steps that failed."""
        with self._lock:
            if self.closed or self.pid != os.getpid():
                return []
            errors: list[AclCallError] = []
            steps = [(self.bind_thread, ())]
            steps += [(self.lib.call, ("aclrtFree", p)) for p in self.live]
            steps += [(self.lib.call, ("aclrtFreeHost", p)) for p in self.host_live]
            steps += [(self.lib.call, ("aclrtDestroyStream", s)) for s in self._streams]
            steps += [(self.lib.call, ("aclrtBinaryUnLoad", b.handle))
                      for b in self._binaries.values()]
            for fn, args in steps:
                _collect(errors, fn, *args)
            for _ in range(self._set_device_calls):
                _collect(errors, self.lib.call, "aclrtResetDevice", self.device_id)
            self.closed = True
            self.live.clear(), self.host_live.clear(), self._streams.clear(), self._binaries.clear()
            self._free_streams.clear()
            if finalize and self.lib.owns_init:
                failed = len(errors)
                _collect(errors, self.lib.call, "aclFinalize")
                if len(errors) == failed:  # else still initialised: finalised at exit
                    self.lib.initialized = self.lib.owns_init = False
            return errors

    def abandon(self) -> None:
        """Forget everything without ACL calls (a forked child: the parent owns it)."""
        self.closed = True
        self.lib.initialized = False


def _collect(errors: list[AclCallError], fn: object, *args: object) -> None:
    try:
        fn(*args)  # type: ignore[operator]
    except AclCallError as exc:
        errors.append(exc)


class _Process:
    """The process's device context.  One per process by nature (ACL's own state is
    per process); the lock makes the first open single-flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ctx: DeviceContext | None = None

    def get(self, environ: Mapping[str, str] | None) -> DeviceContext:
        with self.lock:
            if self.ctx is None or self.ctx.closed:
                env = os.environ if environ is None else environ
                lib = load_library(env)
                device = int(env.get(DEVICE_VARIABLE, "0") or 0)
                self.ctx = DeviceContext(lib, device).open()
            return self.ctx

    def close(self, finalize: bool) -> list[AclCallError]:
        with self.lock:
            ctx, self.ctx = self.ctx, None
        return ctx.close(finalize) if ctx is not None else []

    def after_fork(self) -> None:
        self.lock = threading.Lock()
        if self.ctx is not None:
            self.ctx.abandon()
        self.ctx = None


_PROCESS = _Process()
atexit.register(_PROCESS.close, True)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_PROCESS.after_fork)


def context(environ: Mapping[str, str] | None = None) -> DeviceContext:
    """The process's device context, opened on first use (device ``PYASC_ACL_DEVICE``,
    default 0)."""
    return _PROCESS.get(environ)


def current() -> DeviceContext | None:
    """The open context, if any (without opening one)."""
    ctx = _PROCESS.ctx
    return ctx if ctx is not None and not ctx.closed else None


def shutdown(finalize: bool = False) -> None:
    """Close the process's context now (see :meth:`DeviceContext.close`); the first
    error of its steps is raised after every step ran.  ``finalize`` also calls
    ``aclFinalize``: only for the end of a process (the stand-in library allows a new
    ``aclInit`` after it; whether real AscendCL does is unverified)."""
    errors = _PROCESS.close(finalize)
    if errors:
        raise errors[0]
