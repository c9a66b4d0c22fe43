"""pyasc.runtime: calling compiled kernels and caching them.

CPU kernels: ``abi`` (the calling convention shared with the LLVM backend), ``cpu``
(``CPUKernel``), ``caller`` (generated per-kernel callers for the fast entry),
``descriptor`` (the portable descriptor-entry caller), ``marshal`` (argument checks and
``ArgumentError`` messages), ``results`` (kernel-allocated memory owned by numpy arrays)
and ``disk_cache`` (object code + JSON manifests on disk).
"""
