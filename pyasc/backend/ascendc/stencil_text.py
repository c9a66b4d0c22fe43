"""The stencil kernel's C++ vocabulary, shared by ``emit_stencil`` and ``emit_channels``.

The run-time arguments of a dynamic kernel and the members they set, the UB tensors of
per-plane inputs, and the gap and byte counts of the halo and output copies
(``DataCopyPad`` rows at the tile's pitch), each as a number for a static kernel or a
C++ expression for a dynamic one.
"""

from __future__ import annotations

from pyasc.backend.ascendc.stencil_kernel import PlaneInput, StencilKernel
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.types import DYN


def static_planes(k: StencilKernel) -> list[tuple[PlaneInput, int]]:
    """The per-plane inputs of static count, each with its byte offset in
    ``planesBuf_`` (32-byte aligned: a ``DataCopyPad`` destination)."""
    out, at = [], 0
    for p in k.planes_in:
        if p.count != DYN:
            out.append((p, at))
            at += p.ub_bytes
    return out


def static_planes_bytes(k: StencilKernel) -> int:
    """UB bytes of ``planesBuf_``: every per-plane input of static count."""
    return sum(p.ub_bytes for p, _ in static_planes(k))


def plane_values(k: StencilKernel, p: PlaneInput) -> str:
    """The UB tensor of per-plane input ``p``'s values."""
    c = ctype(p.dtype)
    if p.count == DYN:
        return f"{p.name}Buf_.Get<{c}>()"
    at = dict((id(q), off) for q, off in static_planes(k))[id(p)]
    return f"planesBuf_.Get<{c}>()[{at // p.dtype.itemsize}]"


def dynamic_names(k: StencilKernel) -> list[str]:
    """The run-time arguments of a dynamic stencil kernel, in order: the extents, the
    tiling, then each base's dims."""
    names = ["planes", "rows", "cols", "pitch", "tileRows", "tilesPerPlane", "units",
             "perBlock", "tileCols", "colTiles", "images"]
    for n, b in zip(k.base_names, k.match.bases, strict=True):
        names += [f"{n}Dim{a}" for a in range(len(b.shape))]
    if k.channels is not None:  # the channel loop, the planes' groups, the weights' dims
        names += ["channels", "groupPlanes", "planeGroups", "accStride", "wRow"]
        names += [f"{k.channels.weights}Dim{a}" for a in range(k.channels.weights_rank)]
    return names


def member(name: str) -> str:
    """The member an argument sets: the static kernel's constant names where it has
    one (``ROWS``, ``TILE_ROWS``...), so the shared text reads either."""
    fixed = {"planes": "PLANES", "rows": "ROWS", "cols": "COLS", "pitch": "PITCH",
             "tileRows": "TILE_ROWS", "tilesPerPlane": "TILES_PER_PLANE", "units": "UNITS",
             "perBlock": "PER_BLOCK", "tileCols": "TILE_COLS", "colTiles": "COL_TILES",
             "images": "IMAGES", "channels": "CHANNELS", "groupPlanes": "GROUP_PLANES",
             "planeGroups": "PLANE_GROUPS", "accStride": "ACC_STRIDE", "wRow": "W_ROW"}
    return fixed.get(name, name + "_")


def base_dims(k: StencilKernel, name: str, shape: tuple[int, ...]) -> list[int | str]:
    if k.dynamic:
        return [f"{name}Dim{a}_" for a in range(len(shape))]
    return list(shape)


def row_gap(k: StencilKernel, width: int | str, size: int) -> str | int:
    """UB gap (32-byte blocks) between rows of ``width`` elements at the tile's pitch."""
    if not k.dynamic:
        assert isinstance(width, int)
        return (k.pitch * size - -(-width * size // 32) * 32) // 32
    return (f"static_cast<uint32_t>((PITCH * {size} - ({width} * {size} + 31) / 32 * 32) "
            "/ 32)")


def byte_count(cols: int | str, size: int) -> str | int:
    """Bytes of ``cols`` elements (a static count, a run-time name, or ``-1``: COLS)."""
    if isinstance(cols, str):
        return f"static_cast<uint32_t>({cols} * {size})"
    return f"static_cast<uint32_t>(COLS * {size})" if cols < 0 else cols * size



__all__ = ["base_dims", "byte_count", "dynamic_names", "member", "plane_values", "row_gap",
           "static_planes", "static_planes_bytes"]
