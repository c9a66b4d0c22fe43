"""The AscendCL runtime of ``target="ascend"``: a ctypes binding and its objects.

Modules, bottom up: :mod:`.codes` (error names, enums, magics, load-option structs),
:mod:`.binding` (the C signatures, error mapping), :mod:`.lookup` (finding the
library), :mod:`.context` (the process's device context, streams, loaded binaries),
:mod:`.memory` (device and pinned host buffers), :mod:`.packing` (the kernel argument
block), :mod:`.launch` (one launch), :mod:`.device_array` and :mod:`.probe`.
docs/ascend-runtime.md describes it; nothing here has run on a real NPU (the tests use
the stand-in library of ``tests/acl_standin``).
"""

from pyasc.runtime.acl.binding import PROTOTYPES, AclLibrary
from pyasc.runtime.acl.codes import BinaryMagic
from pyasc.runtime.acl.context import DeviceContext, context, current, shutdown
from pyasc.runtime.acl.device_array import DeviceArray, device_array
from pyasc.runtime.acl.launch import launch
from pyasc.runtime.acl.lookup import LibraryLookup, find_library, load_library
from pyasc.runtime.acl.memory import DeviceBuffer, HostBuffer
from pyasc.runtime.acl.packing import pack_arguments
from pyasc.runtime.acl.probe import DeviceProbe, device_available, probe

__all__ = [
    "PROTOTYPES",
    "AclLibrary",
    "BinaryMagic",
    "DeviceArray",
    "DeviceBuffer",
    "DeviceContext",
    "DeviceProbe",
    "HostBuffer",
    "LibraryLookup",
    "context",
    "current",
    "device_array",
    "device_available",
    "find_library",
    "launch",
    "load_library",
    "pack_arguments",
    "probe",
    "shutdown",
]
