"""STREAM-triad memory bandwidth (``a = b + s*c`` over float64), C + OpenMP via ctypes.

The bandwidth follows STREAM's convention: 24 bytes per element (two reads, one write; the
write-allocate read is not counted), best pass of ``reps``.  The harness reports
memory-bound kernels as a percentage of this figure at the same thread count.

    python benchmarks/stream.py [--threads 1,2] [--mib 256]
"""

from __future__ import annotations

import argparse
import ctypes
import tempfile
from pathlib import Path

import numpy as np

from c_impl import C_DIR, compile_shared

DEFAULT_MIB = 256  # per array; far larger than any last-level cache here


def measure_triad(threads_list: list[int], mib: int = DEFAULT_MIB, reps: int = 10
                  ) -> dict[int, float]:
    """Best triad bandwidth in GB/s for each thread count in ``threads_list``."""
    with tempfile.TemporaryDirectory(prefix="pyasc-bench-stream-") as tmp:
        path = Path(tmp) / "libtriad.so"
        compile_shared([C_DIR / "triad.c"], path, ("-fopenmp",))
        triad = ctypes.CDLL(str(path)).triad
        triad.restype = ctypes.c_double
        triad.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        n = mib * (1 << 20) // 8
        # np.empty leaves the pages untouched, so the C code's parallel first touch
        # places them.
        a, b, c = (np.empty(n) for _ in range(3))
        found = {}
        for threads in threads_list:
            seconds = triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, n, threads, reps)
            found[threads] = 24 * n / seconds / 1e9
        if not np.all(a[:: max(n // 1000, 1)] == 7.0):
            raise RuntimeError("triad produced a wrong result")
        return found


def main(argv: list[str] | None = None) -> None:
    """Print the triad bandwidth for each requested thread count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--mib", type=int, default=DEFAULT_MIB, help="MiB per array")
    args = parser.parse_args(argv)
    counts = [int(t) for t in args.threads.split(",")]
    for threads, gbs in measure_triad(counts, args.mib).items():
        print(f"STREAM triad, {threads} thread{'s' * (threads > 1)}: {gbs:.1f} GB/s")


if __name__ == "__main__":
    main()
