"""pyasc.runtime: calling compiled kernels and caching them.

CPU kernels: ``abi`` (the calling convention shared with the LLVM backend), ``cpu``
(``CPUKernel``), ``caller`` (generated per-kernel callers for the fast entry),
``descriptor`` (the portable descriptor-entry caller), ``marshal`` (argument checks and
``ArgumentError`` messages), ``results`` (kernel-allocated memory owned by numpy
arrays), ``disk_cache`` (object code + JSON manifests on disk), ``objload`` (object code
into executable memory without LLVM) and ``pycall`` (a kernel's native entry as a Python
builtin).
"""


class _Miss:
    """What a native entry returns for arguments of another specialization."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<pyasc.MISS>"


MISS = _Miss()
"""The native entries' "not mine" answer (nothing was called; see ``pycall``).  Defined
here, not in ``pycall``, so the frontend can test for it without importing ctypes."""
