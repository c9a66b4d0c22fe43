"""bfloat16 <-> float32 bit conversions shared by the device paths (ascend-sim's
arguments and results, AscendCL argument packing)."""

from __future__ import annotations

import numpy as np


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even, NaN kept quiet); returns uint16 bits."""
    floats = np.asarray(values, dtype=np.float32)
    if not floats.flags.c_contiguous:
        floats = np.ascontiguousarray(floats)
    bits = floats.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(floats), ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (uint16) to float32 exactly."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
