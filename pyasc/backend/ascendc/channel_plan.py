"""What a channel stencil kernel (``channel_kernel``) adds to a stencil kernel's plan.

:class:`ChannelPlan` is the run-time loop over channels inside each unit, the output
planes' accumulators in UB, where they start (``init``) and the epilogue after the
loop (``post``) with its inputs beside the accumulator (:class:`PostInput`): scalars
passed at the launch, one value per output plane (read once per unit, like the
"planes" initial values) and whole planes of the output's shape (a residual: the
tile's rows copied in per plane).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.backend.ascendc.tiles import Buf, Instr
from pyasc.ir.core import Location
from pyasc.ir.passes.channel_post import PLANE, WHOLE
from pyasc.ir.types import ScalarType


@dataclass
class PostInput:
    """An array input of the epilogue: ``name`` (its GM parameter, ``<name>Gm_``), its
    kind (``PLANE``: ``<name>Vals`` holds the unit's planes' values; ``WHOLE``: ``buf``
    receives the plane's rows of the tile, from ``offsets``), its element type and its tile
    buffer."""

    name: str
    kind: str
    dtype: ScalarType
    buf: Buf
    # WHOLE: the window's constant offsets into the array, one per axis of its rank
    offsets: tuple[int, ...] = ()


@dataclass
class ChannelPlan:
    """What a channel stencil (``channel_kernel``) adds to a stencil kernel: a run-time
    loop over channels inside each unit, the output planes' accumulators in UB."""

    acc_in: Buf                      # the tile program's input of the sum so far
    acc_out: Buf                     # its result: both are the plane's accumulator
    acc_type: ScalarType
    weights: str                     # the name of the weight array (GM, and its UB copy)
    weights_type: ScalarType
    weights_rank: int
    acc_tiles: int                   # accumulators of a tile each (the planes of a unit)
    weight_bytes: int                # UB bytes of a channel's weights of those planes
    # the windows' Gathers, once per channel for every plane (``winBuf_``, a tile each)
    windows: list[Instr] = field(default_factory=list)
    window_bytes: int = 0            # bytes of a window's element
    # the accumulators' start: "fill" (the fill value), "planes" (a value per plane read
    # from GM, ``acc = bias[o]``) or "acc" (the accumulator buffer's values, written
    # before the loop: ``acc = res[o, i, j] * 0.5``)
    init: str = "fill"
    # the elementwise ops after the loop (``ChannelStencil.post``) on each plane's
    # accumulator once its sums are complete, their scalars' declarations, and the
    # buffer of their result (copied to ``out`` instead of the accumulators)
    post: list[Instr] = field(default_factory=list)
    post_scalars: list[tuple[str, str, Location]] = field(default_factory=list)
    post_out: Buf | None = None
    # the epilogue's other inputs: scalars (the member each sets and its type) and arrays
    post_params: list[tuple[str, ScalarType]] = field(default_factory=list)
    post_inputs: list[PostInput] = field(default_factory=list)

    def reserved(self, tile: int) -> int:
        """UB bytes beside the stencil's own: the accumulators, the weights, the
        channel's windows, the unit's planes' initial values and epilogue values."""
        planes = sum(self.plane_bytes(p.dtype) for p in self.post_inputs if p.kind == PLANE)
        return self.acc_tiles * tile * self.acc_type.itemsize + self.weight_bytes + \
            len(self.windows) * tile * self.window_bytes + self.init_bytes + planes

    def plane_bytes(self, t: ScalarType) -> int:
        """UB of a value of type ``t`` per plane of a unit: at most ``weight_bytes //
        32`` planes (a plane's row of taps is at least 32 bytes), 32-byte aligned."""
        return -(-(self.weight_bytes // 32 * t.itemsize) // 32) * 32

    @property
    def pipe_buffers(self) -> int:
        """TPipe buffers of its own: the accumulators, the weights, the windows, the
        initial values and the epilogue's per-plane values."""
        return 3 + (self.init == "planes") + sum(p.kind == PLANE for p in self.post_inputs)

    @property
    def init_bytes(self) -> int:
        """UB of a unit's initial values ("planes")."""
        return self.plane_bytes(self.acc_type) if self.init == "planes" else 0


__all__ = ["PLANE", "WHOLE", "ChannelPlan", "PostInput"]
