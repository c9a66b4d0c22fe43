"""What ``mem.disjoint`` and ``mem.same_view`` compute, on numpy views.

The interpreter's buffers are numpy arrays (views share their base's memory exactly as
compiled memrefs do), so the run-time alias tests are computed from each view's data
address, shape and byte strides, the same quantities the CPU backend reads from a
memref descriptor (``backend/llvm/emit_alias.py``).
"""

from __future__ import annotations

import numpy as np


def byte_span(a: np.ndarray) -> tuple[int, int] | None:
    """``(lowest byte, one past the highest byte)`` the elements of ``a`` occupy, or
    ``None`` for an empty view."""
    if a.size == 0:
        return None
    start = a.__array_interface__["data"][0]
    lo = hi = 0
    for n, s in zip(a.shape, a.strides, strict=True):
        extent = (n - 1) * s
        lo, hi = lo + min(0, extent), hi + max(0, extent)
    return start + lo, start + hi + a.itemsize


def disjoint(a: np.ndarray, b: np.ndarray) -> np.bool_:
    """True when the byte spans of ``a`` and ``b`` do not intersect (``mem.disjoint``)."""
    sa, sb = byte_span(a), byte_span(b)
    return np.bool_(sa is None or sb is None or sa[1] <= sb[0] or sb[1] <= sa[0])


def same_view(a: np.ndarray, b: np.ndarray) -> np.bool_:
    """True when ``a`` and ``b`` address the same elements in the same order
    (``mem.same_view``)."""
    if a.shape != b.shape or a.itemsize != b.itemsize:
        return np.bool_(False)
    if a.__array_interface__["data"][0] != b.__array_interface__["data"][0]:
        return np.bool_(False)
    return np.bool_(all(sa == sb for n, sa, sb in zip(a.shape, a.strides, b.strides,
                                                        strict=True) if n > 1))
