"""Kernel argument packing: the host argument block of ``aclrtLaunchKernelWithHostArgs``.

The block is the kernel's parameters in declaration order, laid out as the device
compiler reads them (reference section 2.3, "Argument packing"): a ``GM_ADDR`` is an
8-byte little-endian device address at an 8-aligned offset; a by-value scalar is its C
type's little-endian bytes at an offset aligned to its size (the natural C alignment: for
the ``int32``/``float`` scalars of pyasc 1.1.1's packer this is the same layout); the
total is padded to a multiple of 8.  Signature codes are those the generated kernels
declare (``ptr``, ``i8``..``u64``, ``f16``, ``bf16``, ``f32``, ``f64``, ``bool``: see
``pyasc/backend/ascendc/sim/sim_launch.h`` and ``ascendc/signature.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyasc.errors import ArgumentError
from pyasc.runtime.bf16 import float32_to_bf16_bits


def _bf16(value: Any) -> bytes:
    return int(float32_to_bf16_bits(np.float32(value))).to_bytes(2, "little")


def _integer(fmt: str, dtype: str) -> Callable[[Any], bytes]:
    # numpy wraps out-of-range integers as C does (a kernel parameter is a C cast)
    pack = struct.Struct("<" + fmt).pack
    return lambda value: pack(np.array(value).astype(dtype).item())


SCALARS: dict[str, tuple[int, Callable[[Any], bytes]]] = {
    "i8": (1, _integer("b", "int8")),
    "i16": (2, _integer("h", "int16")),
    "i32": (4, _integer("i", "int32")),
    "i64": (8, _integer("q", "int64")),
    "u8": (1, _integer("B", "uint8")),
    "u16": (2, _integer("H", "uint16")),
    "u32": (4, _integer("I", "uint32")),
    "u64": (8, _integer("Q", "uint64")),
    "bool": (1, lambda v: b"\x01" if v else b"\x00"),
    "f16": (2, lambda v: np.array(v, "<f2").tobytes()),
    "bf16": (2, _bf16),
    "f32": (4, lambda v: np.array(v, "<f4").tobytes()),
    "f64": (8, lambda v: np.array(v, "<f8").tobytes()),
}
"""Scalar signature code -> (C size = alignment, little-endian encoder)."""

POINTER_SIZE = 8


def layout(codes: Sequence[str]) -> tuple[list[int], int]:
    """The offset of each parameter and the padded total size of the block."""
    offsets, size = [], 0
    for code in codes:
        width = POINTER_SIZE if code == "ptr" else SCALARS[code][0]
        size = -(-size // width) * width
        offsets.append(size)
        size += width
    return offsets, -(-size // 8) * 8


def pack_arguments(codes: Sequence[str], values: Sequence[Any]) -> bytes:
    """The argument block for ``values`` (device addresses as ints for ``ptr``)."""
    if len(codes) != len(values):
        raise ArgumentError(f"the kernel takes {len(codes)} arguments ({', '.join(codes)}), "
                            f"got {len(values)}")
    offsets, total = layout(codes)
    block = bytearray(total)
    for code, offset, value in zip(codes, offsets, values, strict=True):
        if code == "ptr":
            data = int(value).to_bytes(POINTER_SIZE, "little")
        else:
            scalar = value.item() if isinstance(value, np.generic) else value
            data = SCALARS[code][1](scalar)
        block[offset:offset + len(data)] = data
    return bytes(block)
