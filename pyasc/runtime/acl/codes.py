"""AscendCL constants: error codes and their names, enums, binary magics, load options.

Values are those of the CANN runtime headers (``acl/acl_base_rt.h``,
``acl/error_codes/rt_error_codes.h``, ``acl/acl_rt.h``; /work/shared/ascendc-reference.md
section 2).  The load-option structs are laid out as the C declarations and their sizes
are asserted at import, so a layout mistake fails loudly instead of passing garbage.
"""

from __future__ import annotations

import ctypes
import enum

ACL_SUCCESS = 0

ERROR_NAMES: dict[int, str] = {
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    200000: "ACL_ERROR_BAD_ALLOC",
    200001: "ACL_ERROR_API_NOT_SUPPORT",
    200002: "ACL_ERROR_INVALID_DEVICE",
    500000: "ACL_ERROR_INTERNAL_ERROR",
    500001: "ACL_ERROR_FAILURE",
    500003: "ACL_ERROR_RT_FAILURE",
    107000: "ACL_ERROR_RT_PARAM_INVALID",
    107001: "ACL_ERROR_RT_INVALID_DEVICEID",
    107002: "ACL_ERROR_RT_CONTEXT_NULL",
    107017: "ACL_ERROR_RT_INVALID_HANDLE",
    207000: "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",
    207001: "ACL_ERROR_RT_MEMORY_ALLOCATION",
    207004: "ACL_ERROR_RT_NO_DEVICE",
    507000: "ACL_ERROR_RT_INTERNAL_ERROR",
    507014: "ACL_ERROR_RT_AICORE_TIMEOUT",
    507015: "ACL_ERROR_RT_AICORE_EXCEPTION",
    507027: "ACL_ERROR_RT_KERNEL_LOOKUP",
    507035: "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION",
    507046: "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT",
}
"""``aclError`` value -> its name in the CANN headers."""

ACL_ERROR_REPEAT_INITIALIZE = 100002


def error_name(code: int) -> str:
    """The header name of ``code`` (``ACL_ERROR_<code>`` when it is not in the table)."""
    return ERROR_NAMES.get(code, f"ACL_ERROR_{code}")


class MemcpyKind(enum.IntEnum):
    """``aclrtMemcpyKind`` (acl_rt.h:144)."""

    HOST_TO_HOST = 0
    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3
    DEFAULT = 4


class MallocPolicy(enum.IntEnum):
    """``aclrtMemMallocPolicy`` (acl_rt.h:177)."""

    HUGE_FIRST = 0
    HUGE_ONLY = 1
    NORMAL_ONLY = 2
    HUGE_FIRST_P2P = 3


class DevAttr(enum.IntEnum):
    """``aclrtDevAttr`` values used by pyasc (CANN runtime docs, aclrtDevAttr)."""

    AICPU_CORE_NUM = 1
    AICORE_CORE_NUM = 101
    CUBE_CORE_NUM = 102
    VECTOR_CORE_NUM = 201


class BinaryLoadOptionType(enum.IntEnum):
    """``aclrtBinaryLoadOptionType`` (acl_rt.h)."""

    LAZY_LOAD = 1
    MAGIC = 2
    CPU_KERNEL_MODE = 3


class BinaryMagic(enum.IntEnum):
    """``ACL_RT_BINARY_MAGIC_ELF_*`` (acl_rt.h:474): the core type of a kernel object.
    A raw bisheng ``.o`` carries none, and without a magic the 910B runtime assumes a
    cube kernel; an object of pyasc's vector kernels (``dav-c220-vec``) is loaded with
    ``VECTOR_CORE``, one of its cube kernels (``dav-c220-cube``) with ``CUBE_CORE``."""

    AICORE = 0x43554245  # mixed (cube + vector)
    VECTOR_CORE = 0x41415246
    CUBE_CORE = 0x41494343


class BinaryLoadOptionValue(ctypes.Union):
    """``aclrtBinaryLoadOptionValue``: 16 bytes."""

    _fields_ = (("isLazyLoad", ctypes.c_uint32), ("magic", ctypes.c_uint32),
                ("cpuKernelMode", ctypes.c_int32), ("rsv", ctypes.c_uint32 * 4))


class BinaryLoadOption(ctypes.Structure):
    """``aclrtBinaryLoadOption``: a C enum (4 bytes) then the value union, 20 bytes."""

    _fields_ = (("type", ctypes.c_int), ("value", BinaryLoadOptionValue))


class BinaryLoadOptions(ctypes.Structure):
    """``aclrtBinaryLoadOptions``: a pointer to the options and their count, 16 bytes."""

    _fields_ = (("options", ctypes.POINTER(BinaryLoadOption)), ("numOpt", ctypes.c_size_t))


STRUCT_SIZES = {BinaryLoadOptionValue: 16, BinaryLoadOption: 20, BinaryLoadOptions: 16}
for _cls, _size in STRUCT_SIZES.items():
    if ctypes.sizeof(_cls) != _size:  # pragma: no cover - a non-LP64 platform
        raise ImportError(f"{_cls.__name__} is {ctypes.sizeof(_cls)} bytes, the CANN "
                          f"header's is {_size}: this platform's ABI is not supported")


def magic_options(magic: int) -> tuple[BinaryLoadOptions, BinaryLoadOption]:
    """Load options carrying one MAGIC option (keep both objects alive during the call)."""
    option = BinaryLoadOption(type=BinaryLoadOptionType.MAGIC)
    option.value.magic = magic
    return BinaryLoadOptions(ctypes.pointer(option), 1), option
