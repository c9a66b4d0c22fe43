"""Planning a stencil kernel: each window's rows loaded once per tile, views shifted in UB.

A group ``stencil-windows`` marked (several inputs are windows of one array) would be
a ``flat`` kernel reading every window as its own input.  The stencil kernel instead
walks tiles of ``T`` output rows (within one plane); per tile it copies, for each base
array, the ``T + halo`` input rows the tile's windows cover into UB with one
``DataCopyPad`` (rows padded to a pitch ``P`` of whole 32-byte blocks, the same pitch as
the output tile), so every input element is read from GM once per tile.  A window at
row/column offset ``(r, c)`` is then the halo buffer shifted by ``(r - r_min) * P + c``
elements, the same shift for every element of the tile: one vector ``Gather`` with a
byte-offset table ``0, s, 2s, ...`` (built once per block with ``CreateVecIndex`` and
``Muls``) and ``srcBaseAddr`` = the shift in bytes makes it an aligned tile buffer.
Why ``Gather``: vector operands must start 32-byte aligned (reference 1.3, and the sim
checks it), so a view one element to the right cannot be a UB offset, and a
``DataCopy`` UB -> UB moves whole aligned blocks only.  ``Gather`` reads any
element-aligned byte offset (asc-devkit ``dav_c220/kernel_operator_vec_gather_impl.h``:
the source address is ``src + srcBaseAddr``, the per-element offsets are bytes; tagged
[V] in the reference).  Each window's ``Gather`` is placed right before the first
instruction that reads it, so windows take UB only while they are live.

The compute stage is the group's own tile program (``VecLowering``), over ``T * P``
elements; the ``P - cols`` pad columns of each row hold don't-care values and are not
written back (``DataCopyPad`` UB -> GM of ``cols`` elements per row).  Shapes are
static, so the tile, the pitch, the block split and every offset are constants of the
kernel; the host passes the base arrays, the outputs and the scalar inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from pyasc.backend.ascendc.analysis import FULL, SCALAR, NotVectorizable, analyze
from pyasc.backend.ascendc.channel_plan import ChannelPlan
from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.grouping import value_name
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import Buf, Instr, Ref, TileProgram
from pyasc.backend.ascendc.vec_alloc import (
    MAX_PIPE_BUFFERS,
    TILE_QUANTUM,
    PhysBuf,
    assign,
    colcap,
    pipe_buffers,
)
from pyasc.backend.ascendc.vec_kernel import (
    RULES,
    KernelInput,
    KernelOutput,
    _outputs,
)
from pyasc.backend.ascendc.vec_lower import VecLowering
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.stencil_windows import StencilBase, StencilMatch, match_stencil
from pyasc.ir.types import DYN, ScalarType

MAX_ROWS = 4095       # DataCopyPad blockCount limit (rows of one copy)
MAX_STENCIL_OPS = 4096  # tensor ops of one stencil kernel (grouping merges up to it)
MIN_TILE_HALO = 4     # a tile spans at least 4x its halo rows: <= 1/4 extra input reads


@dataclass
class Gathered:
    """Window input ``index`` is base ``base`` shifted by ``shift`` UB elements: ``drow``
    rows of the pitch plus ``dcol`` (a run-time pitch: computed in the kernel)."""

    index: int
    base: int
    shift: int
    drow: int = 0
    dcol: int = 0


@dataclass
class PlaneInput:
    """Group input ``index``: one value per plane (``count`` of them, ``DYN``: a run-time
    count, loaded per block plane by plane as the units reach it), read from UB."""

    index: int
    name: str
    dtype: ScalarType
    count: int

    @property
    def ub_bytes(self) -> int:
        """All its values, 32-byte aligned, or one block (run-time count: the plane's)."""
        return 32 if self.count == DYN else -(-(self.count * self.dtype.itemsize) // 32) * 32


@dataclass
class StencilKernel:
    """A stencil kernel: the shared parts of a vector kernel plus the tiling."""

    core: ClassVar[str] = VECTOR
    name: str
    group: FusionGroupOp
    match: StencilMatch
    prog: TileProgram                # the compute stage
    inputs: list[KernelInput]
    outputs: list[KernelOutput]
    gathers: list[Gathered]
    base_names: list[str]
    base_types: list[ScalarType]
    planes_in: list[PlaneInput] = field(default_factory=list)
    phys: list[PhysBuf] = field(default_factory=list)
    pitch: int = 0                   # UB row stride of every tile, elements
    tile_rows: int = 0               # output rows per tile
    tile: int = 0                    # elements of a tile buffer (>= tile_rows * pitch)
    units: int = 0                   # (plane, row tile) pairs (row tiles: shared_planes)
    per_block: int = 0
    blocks: int = 0
    unit: int = 8                    # pitch granule: elements of 32 bytes
    channels: ChannelPlan | None = None  # a run-time loop over channels (channel_kernel)

    @property
    def dynamic(self) -> bool:
        """A run-time space: extents, pitch and tiling are kernel arguments."""
        return self.match.sizes is not None

    @property
    def schedule(self) -> str:
        return "stencil" if self.channels is None else "channels"

    @property
    def rows(self) -> int:
        return self.match.space[1]

    @property
    def cols(self) -> int:
        return self.match.space[2]

    @property
    def shared_planes(self) -> bool:
        """Bases read at fixed planes (a multi-channel conv: every output plane reads
        every channel): a unit is a row tile of every plane, the fixed bases' halo rows
        copied once (not once per output plane); the others (``plane_bases``: a residual
        ``res[o, i, j]``) per plane.  In a channel loop: only when every base is fixed."""
        fixed = [b.fixed for b in self.match.bases]
        return all(fixed) or any(fixed) and self.channels is None and not self.match.collapsed

    @property
    def plane_bases(self) -> list[int]:
        """The bases a unit of every plane copies per plane (``shared_planes``)."""
        return [i for i, b in enumerate(self.match.bases) if not b.fixed]

    @property
    def unit_planes(self) -> int:
        """Planes the units walk (the images, ``match.outer``, when the planes are
        computed inside a unit; every channel of every image when they collapse)."""
        if self.match.collapsed:
            return self.match.outer * self.match.space[0]
        return self.match.outer if self.shared_planes else self.match.space[0]

    @property
    def tiles_per_plane(self) -> int:
        return -(-self.rows // self.tile_rows)

    @property
    def scalar_inputs(self) -> list[KernelInput]:
        return [i for i in self.inputs if i.vv.cls == SCALAR]

    @property
    def written(self) -> list[KernelOutput]:
        return [o for o in self.outputs if o.kind == FULL]

    def halo_elements(self, k: int) -> int:
        """UB elements of base ``k``'s halo buffer: its rows plus one row of slack (a
        shifted read of a pad column may run one row past the copied ones).  A run-time
        pitch: twice a tile (the host keeps ``(halo + 1) * pitch <= TILE``)."""
        if self.dynamic:
            return 2 * self.tile
        return (self.tile_rows + self.match.bases[k].halo + 1) * self.pitch


def plan_stencil_kernel(group: FusionGroupOp, soc: SoC, name: str,
                        marked: bool = True, match: StencilMatch | None = None,
                        adapt: Callable[[StencilKernel], None] | None = None
                        ) -> StencilKernel | None:
    """``group`` as a stencil kernel, or None when it is not one (not marked by the
    ``stencil-windows`` pass; ``marked=False``: a grouping probe, matched here) or
    its compute stage is not a plain elementwise tile program.  ``match``: the caller's
    match of the group (a channel stencil's, ``channel_kernel``), and ``adapt`` its
    changes to the kernel before the buffers are assigned (raising NotVectorizable
    refuses it)."""
    m = match or (match_stencil(group) if group.attributes.get("stencil") or not marked
                  else None)
    if m is None:
        return None
    info = analyze(group)
    if info.schedule != "flat":
        return None
    for arg, outer in zip(group.body.blocks[0].args, group.inputs, strict=True):
        arg.name_hint = arg.name_hint or value_name(outer)
    low = VecLowering(group, info, soc, RULES)
    low.run()
    inputs = [KernelInput(a, low.get(a)) for a in group.body.blocks[0].args]
    outputs = _outputs(low, group)
    if any(o.kind != FULL for o in outputs) or \
            any(i.vv.cls not in (FULL, SCALAR) for i in inputs):
        return None
    base_types = [b.value.type.element for b in m.bases]  # type: ignore[attr-defined]
    # the offset table is int32 (CreateVecIndex, Muls); one table: one element size
    if not soc.supports("arith", "i32") or len({t.itemsize for t in base_types}) != 1:
        return None
    names = [low.prog.unique(value_name(b.value) or "src") for b in m.bases]
    k = StencilKernel(name, group, m, low.prog, inputs, outputs, [], names, base_types)
    for index, v in m.per_plane.items():
        t = v.type
        k.planes_in.append(PlaneInput(index, low.prog.unique(value_name(v) or "perPlane"),
                                      t.element, t.shape[-3]))  # type: ignore[attr-defined]
    _set_pitch(k)
    k.gathers = []
    for w in m.windows:  # the shift from the base's first copied row and column
        drow, dcol = w.row - m.bases[w.base].rows[0], w.col - m.bases[w.base].cols[0]
        k.gathers.append(Gathered(w.index, w.base, drow * k.pitch + dcol, drow, dcol))
    try:  # the SoC's tables decide whether Gather/Duplicate take these types
        _share_equal_windows(k)
        _place_gathers(k)
        _place_duplicates(k)
        if adapt is not None:
            adapt(k)
    except NotVectorizable:
        return None
    k.phys = assign(low.prog)
    # the TPipe's 64 buffers: the program's, two per halo queue, the offset table, one
    # per per-plane input of run-time count, one for those of static count (a channel
    # loop's: ChannelPlan.pipe_buffers)
    dyn = sum(p.count == DYN for p in k.planes_in)
    used = pipe_buffers(k.phys) + 2 * len(k.base_names) + 1 + dyn + \
        (len(k.planes_in) > dyn) + (k.channels.pipe_buffers if k.channels else 0)
    sized = _size_dynamic(k, soc) if k.dynamic else _size(k, soc)
    return k if used <= MAX_PIPE_BUFFERS and sized else None


def _set_pitch(k: StencilKernel) -> None:
    sizes = [b.itemsize for b in k.prog.buffers if b.kind == "tile"]
    k.unit = 32 // min(sizes + [t.itemsize for t in k.base_types])
    if k.dynamic:
        return  # the host computes it from the run-time widths
    widest = max([k.cols] + [span(k, b) for b in k.match.bases])
    k.pitch = -(-widest // k.unit) * k.unit


def span(k: StencilKernel, b: StencilBase) -> int:
    """Columns of a row of base ``b`` the tile copies (static space): from its windows'
    first column to the last one's end; not the whole row (a blur of ``x[:, :10]`` of a
    wide ``x`` reads 12 columns of each row)."""
    return k.cols + b.cols[1] - b.cols[0]


def _share_equal_windows(k: StencilKernel) -> None:
    """Windows of one base at one shift (a window sliced twice, ``img[i, j]`` inside
    ``img[i-5:i+6, j-5:j+6]``) are one buffer: one ``Gather``."""
    first: dict[tuple[int, int, int], Buf] = {}
    keep: list[Gathered] = []
    for g in k.gathers:
        buf = k.inputs[g.index].vv.buf
        assert buf is not None
        same = first.setdefault((g.base, g.drow, g.dcol), buf)
        if same is buf:
            keep.append(g)
            continue
        for ins in k.prog.instrs:
            ins.srcs = tuple(Ref(same, s.row) if isinstance(s, Ref) and s.buf is buf else s
                             for s in ins.srcs)
            if isinstance(ins.dst, Ref) and ins.dst.buf is buf:
                raise NotVectorizable("a window written in the kernel", k.group.loc)
        k.prog.buffers.remove(buf)  # no queue, no slot: nothing reads it now
    k.gathers = keep


def _place_gathers(k: StencilKernel) -> None:
    """Each window's ``Gather`` right before the first instruction reading it; the window
    buffers become temporaries (they live from their ``Gather`` on)."""
    itemsize = k.base_types[0].itemsize
    first = {g.index: _first_reads(k, g.index) for g in k.gathers}
    for g in sorted(k.gathers, key=lambda g: -(first[g.index] or 0)):
        at = first[g.index]
        if at is None:
            continue
        buf = k.inputs[g.index].vv.buf
        assert buf is not None
        shift = f"({g.drow} * PITCH + {g.dcol}) * {itemsize}" if k.dynamic else \
            str(g.shift * itemsize)
        ins = Instr("Gather", Ref(buf), (k.base_names[g.base] + "Halo", "idx"),
                    (f"static_cast<uint32_t>({shift})",), "tile", loc=k.group.loc)
        _insert(k, at, ins)


def _first_reads(k: StencilKernel, index: int) -> int | None:
    """The first instruction reading input ``index`` (now a temporary); None, and the
    buffer dropped, when nothing reads it."""
    buf = k.inputs[index].vv.buf
    assert buf is not None
    buf.role = "calc"
    reads = [i for i, ins in enumerate(k.prog.instrs) if buf in ins.reads()]
    if not reads:
        k.prog.buffers.remove(buf)
    return reads[0] if reads else None


def _place_duplicates(k: StencilKernel) -> None:
    """A per-plane input is the plane's value filled over the tile (``Duplicate`` of a
    scalar read from UB) right before its first use."""
    for p in k.planes_in:
        at = _first_reads(k, p.index)
        if at is None:
            continue
        buf = k.inputs[p.index].vv.buf
        assert buf is not None
        # collapsed images and channels: the value of the plane's channel
        plane = "0" if p.count <= 1 else "plane % PLANES" if k.match.collapsed else "plane"
        ins = Instr("Duplicate", Ref(buf), (f"{p.name}Vals.GetValue({plane})",), (), "tile",
                    loc=k.group.loc)
        _insert(k, at, ins)


def _insert(k: StencilKernel, at: int, ins: Instr) -> None:
    if k.prog.check is not None:
        k.prog.check(ins)
    k.prog.instrs.insert(at, ins)


def _bytes(k: StencilKernel, rows: int) -> int:
    """UB bytes for tiles of ``rows`` output rows: the program's buffers (outputs double
    buffered), the offset table and each base's double-buffered halo."""
    k.tile_rows = rows
    tile = -(-(rows * k.pitch) // TILE_QUANTUM) * TILE_QUANTUM
    cap = colcap(tile, 8)
    total = sum(p.bytes(tile, cap) for p in k.phys) + tile * 4
    for b, t in enumerate(k.base_types):
        total += 2 * (-(-(k.halo_elements(b) * t.itemsize) // 32) * 32)
    return total + sum(p.ub_bytes for p in k.planes_in)


def _size(k: StencilKernel, soc: SoC) -> bool:
    """Pick the tile rows (the most that fit, no fewer than ``MIN_TILE_HALO`` halos
    when the rows allow, spread over the blocks) and the block split; False when not
    even one row fits."""
    halo = max(b.halo for b in k.match.bases)
    most = min(k.rows, MAX_ROWS - halo - 1)
    if most < 1 or _bytes(k, 1) > soc.init_buffer_bytes:
        return False
    lo, hi = 1, most  # the most rows that fit (the bytes grow with the rows)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _bytes(k, mid) <= soc.init_buffer_bytes else (lo, mid - 1)
    planes = k.unit_planes
    spread = -(-planes * k.rows // soc.vector_blocks)
    rows = min(lo, max(spread, MIN_TILE_HALO * halo, 1))
    rows = -(-k.rows // -(-k.rows // rows))  # equal tiles per plane
    _bytes(k, rows)
    k.tile = -(-(rows * k.pitch) // TILE_QUANTUM) * TILE_QUANTUM
    k.units = planes * k.tiles_per_plane
    k.per_block = -(-k.units // soc.vector_blocks)
    k.blocks = -(-k.units // k.per_block)
    return True


def _dynamic_bytes(k: StencilKernel, tile: int) -> int:
    """UB bytes of a run-time stencil kernel with tiles of ``tile`` elements (halo
    buffers of two tiles each, double buffered)."""
    cap = colcap(tile, 8)
    total = sum(p.bytes(tile, cap) for p in k.phys) + tile * 4
    total += sum(p.ub_bytes for p in k.planes_in)
    if k.channels is not None:
        total += k.channels.reserved(tile)
    return total + sum(2 * 2 * tile * t.itemsize for t in k.base_types)


def _size_dynamic(k: StencilKernel, soc: SoC) -> bool:
    """The largest tile (multiple of ``TILE_QUANTUM``) that fits; the host picks the
    rows per tile from it and the run-time pitch (``host_stencil``)."""
    tile = TILE_QUANTUM
    if _dynamic_bytes(k, tile) > soc.init_buffer_bytes:
        return False
    while _dynamic_bytes(k, tile + TILE_QUANTUM) <= soc.init_buffer_bytes:
        tile += TILE_QUANTUM
    k.tile = tile
    # a column tile (host_stencil) must keep one output column beside the windows' reach
    return widest_pitch(k) - reach(k) >= 1


def reach(k: StencilKernel) -> int:
    """Columns a tile copies past its own output columns (its windows' column spread)."""
    return max(b.cols[1] - b.cols[0] for b in k.match.bases)


def widest_pitch(k: StencilKernel) -> int:
    """The widest UB row of a run-time stencil kernel's tile: one whose tile holds
    ``MIN_TILE_HALO`` halos of rows (at most 1/4 extra input reads) and whose halo rows
    fit the halo buffer; wider rows are cut into column tiles (``host_stencil``)."""
    halo = max(b.halo for b in k.match.bases)
    rows = max(halo + 1, MIN_TILE_HALO * halo)
    return k.tile // rows // k.unit * k.unit


__all__ = ["ChannelPlan", "PlaneInput", "StencilKernel", "plan_stencil_kernel", "reach", "span",
           "widest_pitch"]
