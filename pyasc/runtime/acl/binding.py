"""The ctypes binding of the AscendCL calls pyasc uses, with their exact C signatures.

:data:`PROTOTYPES` is the table ``name -> (restype, argtypes)`` of every bound call,
copied from the CANN runtime headers (``acl/acl_rt.h``, ``acl/acl.h``; line numbers in
/work/shared/ascendc-reference.md section 2.2/2.3).  :class:`AclLibrary` loads a library,
sets ``restype``/``argtypes`` on each function it has and turns every non-zero
``aclError`` into :class:`~pyasc.errors.AclCallError` (E50032) carrying the code, its
name, the call and ``aclGetRecentErrMsg()``.  A call the library lacks (an older CANN)
raises ``ToolchainMissingError`` when it is first used, not at load.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyasc.errors import AclCallError, ToolchainMissingError
from pyasc.runtime.acl.codes import ACL_SUCCESS, BinaryLoadOptions, error_name

aclError = ctypes.c_int  # noqa: N816 - the C type's name
_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_size = ctypes.c_size_t

PROTOTYPES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "aclInit": (aclError, (ctypes.c_char_p,)),
    "aclFinalize": (aclError, ()),
    "aclGetRecentErrMsg": (ctypes.c_char_p, ()),
    "aclrtSetDevice": (aclError, (ctypes.c_int32,)),
    "aclrtResetDevice": (aclError, (ctypes.c_int32,)),
    "aclrtGetDeviceCount": (aclError, (ctypes.POINTER(ctypes.c_uint32),)),
    "aclrtGetSocName": (ctypes.c_char_p, ()),
    "aclrtGetDeviceInfo": (aclError, (ctypes.c_uint32, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_int64))),
    "aclrtCreateStream": (aclError, (_pp,)),
    "aclrtDestroyStream": (aclError, (_p,)),
    "aclrtSynchronizeStream": (aclError, (_p,)),
    "aclrtSynchronizeStreamWithTimeout": (aclError, (_p, ctypes.c_int32)),
    "aclrtMalloc": (aclError, (_pp, _size, ctypes.c_int)),
    "aclrtFree": (aclError, (_p,)),
    "aclrtMallocHost": (aclError, (_pp, _size)),
    "aclrtFreeHost": (aclError, (_p,)),
    "aclrtMemcpy": (aclError, (_p, _size, _p, _size, ctypes.c_int)),
    "aclrtMemcpyAsync": (aclError, (_p, _size, _p, _size, ctypes.c_int, _p)),
    "aclrtBinaryLoadFromData": (aclError, (_p, _size, ctypes.POINTER(BinaryLoadOptions),
                                           _pp)),
    "aclrtBinaryGetFunction": (aclError, (_p, ctypes.c_char_p, _pp)),
    "aclrtBinaryUnLoad": (aclError, (_p,)),
    # (funcHandle, numBlocks, stream, cfg, hostArgs, argsSize, placeHolderArray, num)
    "aclrtLaunchKernelWithHostArgs": (aclError, (_p, ctypes.c_uint32, _p, _p, _p, _size,
                                                 _p, _size)),
}
"""Every bound call: ``name -> (restype, argtypes)`` as in the CANN headers."""

RETURNS_STRING = frozenset(n for n, (res, _) in PROTOTYPES.items() if res is ctypes.c_char_p)
"""Calls returning ``const char*`` (NULL on failure) instead of an ``aclError``."""


class AclLibrary:
    """One loaded AscendCL library (``CDLL(path, RTLD_GLOBAL)``) and its bound calls.

    ``initialized`` is whether ``aclInit`` succeeded in this process and ``owns_init``
    whether pyasc's call did it (the device context reads and sets both)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._dll = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        self._fns: dict[str, Callable[..., Any]] = {}
        for name, (restype, argtypes) in PROTOTYPES.items():
            fn = getattr(self._dll, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, list(argtypes)
                self._fns[name] = fn
        self.initialized = self.owns_init = False
        self.init_lock = threading.Lock()

    @property
    def missing(self) -> tuple[str, ...]:
        """The bound calls this library does not export."""
        return tuple(n for n in PROTOTYPES if n not in self._fns)

    def function(self, name: str) -> Callable[..., Any]:
        """The ctypes function ``name`` (E50030 when the library lacks it)."""
        fn = self._fns.get(name)
        if fn is None:
            raise ToolchainMissingError(
                f"{self.path} has no {name}: this CANN is too old for pyasc's launch path",
                hint="install CANN 8.0 or newer and source its set_env.sh")
        return fn

    def call(self, name: str, *args: Any) -> None:
        """Call ``name``; a non-zero ``aclError`` raises :class:`AclCallError`."""
        rc = self.function(name)(*args)
        if rc != ACL_SUCCESS:
            raise self.error(name, rc)

    def call_rc(self, name: str, *args: Any) -> int:
        """Call ``name`` and return its ``aclError`` (for codes the caller accepts)."""
        return int(self.function(name)(*args))

    def string(self, name: str) -> str | None:
        """Call a ``const char*`` function; ``None`` for NULL."""
        value = self.function(name)()
        return value.decode(errors="replace") if value else None

    def recent_message(self) -> str:
        """``aclGetRecentErrMsg()`` (empty when the library has none to give)."""
        try:
            return self.string("aclGetRecentErrMsg") or ""
        except ToolchainMissingError:
            return ""

    def error(self, call: str, rc: int, context: str = "") -> AclCallError:
        """The coded error of ``call`` returning ``rc``."""
        name, recent = error_name(rc), self.recent_message()
        text = f"{call} returned {rc} ({name})" + (f" {context}" if context else "")
        text += f": {recent}" if recent else " (aclGetRecentErrMsg: no message)"
        return AclCallError(text, acl_code=rc, acl_name=name, call=call, recent=recent)
