"""The tiling and the counts of a conv2d whose im2col is built in L1 -> L0A by
``LoadData`` 3D v2 (img2col) instead of a column matrix in GM.

The route (docs/ascendc-backend.md, "Convolutions"; the kernel: ``emit_conv``): the input
as NHWC in GM becomes NC1HWC0 in L1 by one ``Nd2NzParams`` copy per band of output rows
(its input rows with the filter's halo, channels zero-padded to C0); ``LoadData`` 3D
writes the band's img2col window into L0A as Zz (M = output pixels, K = (c1, kh, kw,
c0)); the weights, given as (O, fh, fw, C), become (K x O) in L0B (Zn) for the whole
kernel; ``Mmad`` gives (pixels x O) in L0C and ``Fixpipe`` writes it as NHWC rows. Output
pixels are the cube's M because ``LoadData`` 3D into L0B always transposes: there the
pixels become Mmad's K (the weight-gradient product), so an (O x pixels) NCHW result
cannot come from it.

:func:`plan_conv_l1` picks the band height and the M tile from the SoC's L1/L0 sizes
and the cube core count, or says why the shape does not fit; :func:`conv_l1_counts` are
the bytes the kernel moves, which ascend-sim's counters equal (tests check it).
Everything here is [I]: the instruction semantics are the reference's [V] facts, the
schedule never ran on an NPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyasc.backend.ascendc.soc import CubeUnit

ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4}


@dataclass(frozen=True)
class ConvGeometry:
    """One groups == 1 conv2d: x (n, c, h, w), w (o, c, fh, fw), stride, dilation and
    padding (left, right, top, bottom), operand dtype name."""

    n: int
    c: int
    h: int
    w: int
    o: int
    fh: int
    fw: int
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dtype: str = "f16"

    @property
    def oh(self) -> int:
        """Output rows."""
        extent = (self.fh - 1) * self.dilation[0] + 1
        return (self.h + self.pads[2] + self.pads[3] - extent) // self.stride[0] + 1

    @property
    def ow(self) -> int:
        """Output columns."""
        extent = (self.fw - 1) * self.dilation[1] + 1
        return (self.w + self.pads[0] + self.pads[1] - extent) // self.stride[1] + 1

    def in_rows(self, r0: int, r1: int) -> tuple[int, int, int, int]:
        """(first input row, rows, pad above, pad below) that output rows [r0, r1) read."""
        lo = r0 * self.stride[0] - self.pads[2]
        hi = (r1 - 1) * self.stride[0] + (self.fh - 1) * self.dilation[0] - self.pads[2]
        s, e = max(0, lo), min(self.h - 1, hi)
        return s, e - s + 1, s - lo, hi - e


@dataclass(frozen=True)
class ConvL1Plan:
    """The schedule: ``bands`` bands of ``band_rows`` output rows per image (work items
    n x bands over ``blocks`` cube cores), M tiles of ``base_m`` pixels, ping-pong L1
    bands and L0A/L0C tiles, the weights resident in L1.  When the weights fit L0B
    (``b_resident``) they stay there; otherwise each M tile runs over N blocks of
    ``base_n`` output channels and, inside, K blocks of ``base_k`` img2col columns
    (accumulated in L0C), each block's weights loaded L1 -> L0B into a ping-pong slot.
    Weights that do not fit L1 (``stream``) come from GM per work item in *panels* of
    ``base_n`` output channels over all of K (two L1 panel buffers, ping-pong): the N
    blocks are then the outer loop of an item, its M tiles inside."""

    geo: ConvGeometry
    c0: int
    ktot: int          # C1 * fh * fw * C0: the img2col width (Mmad's K)
    band_rows: int
    bands: int
    base_m: int
    base_k: int        # img2col columns per Mmad (a multiple of C0; ktot: no K loop)
    base_n: int        # output channels per L0C tile (a multiple of 16; o16: no N loop)
    blocks: int
    l1_bytes: int      # peak L1 use: two input bands and the weights (or two panels)
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    stream: bool = False   # weights larger than L1: per item, panels of base_n channels
    group_blocks: int = 0  # streamed: N blocks per work item (0: all of O)

    @property
    def group_n(self) -> int:
        """Output channels per work item: all of them, or (streamed) a group of N blocks."""
        return self.group_blocks * self.base_n if self.group_blocks else self.o16

    @property
    def groups(self) -> int:
        """Work items per band: the channel groups (1 unless streamed)."""
        return -(-self.geo.o // self.group_n)

    @property
    def panel_elems(self) -> int:
        """Elements of one L1 weight buffer: all the weights, or one panel (streaming)."""
        return (self.base_n if self.stream else self.o16) * self.ktot

    @property
    def c1(self) -> int:
        """Channel blocks of C0."""
        return self.ktot // (self.geo.fh * self.geo.fw * self.c0)

    @property
    def o16(self) -> int:
        """Output channels rounded up to a 16-column fractal."""
        return -(-self.geo.o // 16) * 16

    @property
    def b_resident(self) -> bool:
        """All the weights stay in L0B: no K or N loop, one L1 -> L0B load per core."""
        return not self.stream and self.base_k >= self.ktot and self.base_n >= self.o16

    @property
    def n_blocks(self) -> int:
        """N blocks (of ``base_n`` output channels) per M tile."""
        return -(-self.geo.o // self.base_n)


def _limits(g: ConvGeometry) -> str | None:
    """Why LoadData 3D's documented ranges exclude ``g`` (None: they do not)."""
    if g.dtype not in ITEMSIZE:
        return f"{g.dtype} operands (LoadData 3D into L0A is used for f16/bf16/f32 here)"
    if max(g.stride) > 63 or max(g.dilation) > 255 or max(g.fh, g.fw) > 255:
        return "stride > 63, dilation > 255 or a filter side > 255 (LoadData 3D's ranges)"
    extent = ((g.fw - 1) * g.dilation[1] + 1, (g.fh - 1) * g.dilation[0] + 1)
    if max(g.pads) > 255 or max(g.pads[:2]) >= extent[0] or max(g.pads[2:]) >= extent[1]:
        return "a padding > 255 or as wide as the dilated filter (a band of pad only)"
    if g.oh < 1 or g.ow < 1:
        return "no output pixels"
    if g.c * g.fh * g.fw > 65535:
        return "C * fh * fw > 65535 (the weights' Nd2Nz row pitch)"
    return None


def plan_conv_l1(g: ConvGeometry, cube: CubeUnit) -> ConvL1Plan | str:
    """The plan of ``g`` on ``cube``, or the reason the L1 route does not take it."""
    why = _limits(g)
    if why is not None:
        return why
    size, c0 = ITEMSIZE[g.dtype], cube.c0[g.dtype]
    c1 = -(-g.c // c0)
    ktot = c1 * g.fh * g.fw * c0
    o16 = -(-g.o // 16) * 16
    w_bytes = o16 * ktot * size
    if o16 * c0 > 16384:
        return "more than 16384 / C0 output channels (the weights' Nd2Nz matrix stride)"
    if _band_rows(g, c1, cube.l1_usable_bytes - w_bytes, cube.cores) == 0:
        return _plan_streamed(g, c0, c1, ktot, cube)
    rows = _band_rows(g, c1, cube.l1_usable_bytes - w_bytes, cube.cores)
    bands = -(-g.oh // rows)
    tiles = _l0_tiles(ktot, o16, size, c0, -(-rows * g.ow // 16) * 16, cube)
    if tiles is None:
        return "one 16-pixel M tile of a C0-wide K block does not fit half of L0A / L0C"
    base_m, base_k, base_n = tiles
    resident = base_k == ktot and base_n == o16
    return ConvL1Plan(g, c0, ktot, rows, bands, base_m, base_k, base_n,
                      min(cube.cores, g.n * bands), 2 * _max_band(g, c1, rows) + w_bytes,
                      2 * base_m * base_k * size,
                      w_bytes if resident else 2 * base_k * base_n * size,
                      2 * base_m * base_n * 4)


def _max_band(g: ConvGeometry, c1: int, rows: int) -> int:
    """L1 bytes of a band buffer of ``rows`` output rows: the input rows of an inner
    band (the kernel's slot size; a padded band holds fewer)."""
    span = (rows - 1) * g.stride[0] + (g.fh - 1) * g.dilation[0] + 1
    return c1 * min(g.h, span) * g.w * 32


def _plan_streamed(g: ConvGeometry, c0: int, c1: int, ktot: int,
                   cube: CubeUnit) -> ConvL1Plan | str:
    """The plan of weights larger than L1: panels of ``base_n`` channels (two fit L1 next
    to two bands), and the split of the work into items of (image, band, group of N
    blocks) that moves the fewest GM bytes while giving every cube core an item: an
    item reads its band (x, once per group) and its group's weights (once per band)."""
    size = ITEMSIZE[g.dtype]
    panel = _panel(g, c1, ktot, size, cube)
    if panel == 0:
        return "one 16-channel weight panel pair does not fit L1 next to two one-row bands"
    max_rows = _band_rows(g, c1, cube.l1_usable_bytes - 2 * panel * ktot * size, 1)
    tiles = _l0_tiles(ktot, panel, size, c0, -(-max_rows * g.ow // 16) * 16, cube, False)
    if tiles is None:
        return "one 16-pixel M tile of a C0-wide K block does not fit half of L0A / L0C"
    base_m, base_k, base_n = tiles
    n_blocks = -(-g.o // base_n)
    w_bytes, best = g.o * g.c * g.fh * g.fw * size, None
    for rows in range(1, max_rows + 1):
        bands = -(-g.oh // rows)
        x_read = sum(g.in_rows(r0, min(g.oh, r0 + rows))[1] for r0 in range(0, g.oh, rows))
        for per in range(1, n_blocks + 1):
            groups = -(-n_blocks // per)
            items = g.n * bands * groups
            gm = g.n * (bands * w_bytes + groups * x_read * g.w * g.c * size)
            key = (items < min(cube.cores, g.n * -(-g.oh // 1) * n_blocks), gm, -rows)
            if best is None or key < best[0]:
                best = (key, rows, bands, per, items)
    assert best is not None
    _, rows, bands, per, items = best
    return ConvL1Plan(g, c0, ktot, rows, bands, base_m, base_k, base_n,
                      min(cube.cores, items), 2 * _max_band(g, c1, rows) +
                      2 * base_n * ktot * size, 2 * base_m * base_k * size,
                      2 * base_k * base_n * size, 2 * base_m * base_n * 4, True, per)


def _panel(g: ConvGeometry, c1: int, ktot: int, size: int, cube: CubeUnit) -> int:
    """Output channels per streamed weight panel (a multiple of 16): as many as two
    panels fit L1 next to two bands of one output row (0: not even 16)."""
    room = cube.l1_usable_bytes - 2 * _band_bytes(g, c1, 0, 1)
    panel = min(-(-g.o // 16) * 16, room // (2 * ktot * size) // 16 * 16)
    return max(panel, 0)


def _l0_tiles(ktot: int, o16: int, size: int, c0: int, max_m: int, cube: CubeUnit,
              resident: bool = True) -> tuple[int, int, int] | None:
    """(base_m, base_k, base_n): all the weights resident in L0B when they fit it with a
    16-pixel M tile (the largest M tile then), else the ping-pong blocks that move the
    fewest L1 -> L0 bytes per output pixel (A is loaded once per N block: ``o16 /
    base_n``; the weights once per M tile: ``o16 / base_m``), the K block at least
    ``8 * C0`` (fewer, longer Mmads) if any such block fits, and at most 255 fractal
    rows (LoadData 2D's repeat); None if not even a 16 x C0 tile fits."""
    def m_fit(k: int, n: int) -> int:
        m = min(cube.l0a_bytes // (2 * k * size), cube.l0c_bytes // (2 * n * 4), max_m)
        return m // 16 * 16

    if resident and o16 * ktot * size <= cube.l0b_bytes and m_fit(ktot, o16) >= 16:
        return m_fit(ktot, o16), ktot, o16
    for k_floor in (min(ktot, 8 * c0), c0):   # a shorter K block only if none fits
        best = None
        for n in range(16, min(o16, 4080) + 1, 16):
            top = min(ktot, cube.l0b_bytes // (2 * n * size), 255 * c0) // c0 * c0
            for k in range(top, k_floor - 1, -c0):
                m = m_fit(k, n)
                key = (o16 / n + o16 / m, -k) if m >= 16 else None
                if key is not None and (best is None or key < best[0]):
                    best = (key, (m, k, n))
        if best is not None:
            return best[1]
    return None


def _band_bytes(g: ConvGeometry, c1: int, r0: int, r1: int) -> int:
    """L1 bytes of the NC1HWC0 input rows of output rows [r0, r1) (32-byte C0 vectors)."""
    return c1 * g.in_rows(r0, r1)[1] * g.w * 32


def _band_rows(g: ConvGeometry, c1: int, budget: int, cores: int) -> int:
    """Output rows per band: as many as two bands fit ``budget`` and one Nd2Nz copy
    (at most 16384 rows of the NHWC matrix) allows, but enough bands that the n x bands
    work items occupy every cube core; 0 if one row does not fit."""
    def fits(rows: int) -> bool:
        worst = min(g.h, (rows - 1) * g.stride[0] + (g.fh - 1) * g.dilation[0] + 1)  # inner band
        return 2 * c1 * worst * g.w * 32 <= budget and worst * g.w <= 16384

    if not fits(1):
        return 0
    rows = max(1, -(-g.oh // max(1, math.ceil(cores / g.n))))
    while not fits(rows):
        rows -= 1
    return rows


@dataclass(frozen=True)
class ConvCounts:
    """What one launch moves: GM bytes read (input bands with their halos, once per
    channel group; the (O, fh, fw, C) weights once per block, or streamed once per band)
    and written (y), L1 -> L0A/L0B bytes, MACs."""

    gm_read: int
    gm_written: int
    l1_to_l0a: int
    l1_to_l0b: int
    macs: int


def conv_l1_counts(p: ConvL1Plan, out_itemsize: int) -> ConvCounts:
    """The counts of the kernel of plan ``p`` (ascend-sim's counters are these)."""
    g, size = p.geo, ITEMSIZE[p.geo.dtype]
    x_read = sum(g.in_rows(r * p.band_rows, min(g.oh, (r + 1) * p.band_rows))[1]
                 for r in range(p.bands)) * g.w * g.c * size * g.n * p.groups
    a_bytes = m_tiles = 0   # per image: padded pixel rows of the M tiles, M tiles
    for r in range(p.bands):
        pixels = (min(g.oh, (r + 1) * p.band_rows) - r * p.band_rows) * g.ow
        tiles, last = divmod(pixels, p.base_m)
        a_bytes += tiles * p.base_m + (-(-last // 16) * 16 if last else 0)
        m_tiles += tiles + (last > 0)
    b_bytes = p.blocks * p.l0b_bytes if p.b_resident else m_tiles * g.n * p.ktot * p.o16 * size
    a_bytes *= p.ktot * size * g.n * p.n_blocks
    # the weights: once per core, or (streamed) once per work item
    w_reads = g.n * p.bands if p.stream else p.blocks
    return ConvCounts(gm_read=x_read + w_reads * g.o * g.c * g.fh * g.fw * size,
                      gm_written=g.n * g.oh * g.ow * g.o * out_itemsize,
                      l1_to_l0a=a_bytes, l1_to_l0b=b_bytes,
                      macs=g.n * g.oh * g.ow * g.o * p.ktot)


def conv_l1_estimate_s(p: ConvL1Plan, counts: ConvCounts, cube: CubeUnit) -> float:
    """A roofline estimate (not a measurement) of the kernel, as ``cube_cost`` makes
    them: the busiest core's padded MACs (its work items, each band's pixels in 16-row
    granules x O in 16 columns x K) at the cube's peak rate, against all GM bytes at the
    HBM bandwidth; the larger of the two."""
    g = p.geo
    items = -(-g.n * p.bands * p.groups // p.blocks)
    pixels = -(-p.band_rows * g.ow // 16) * 16
    macs = items * pixels * min(p.group_n, -(-g.o // 16) * 16) * p.ktot
    compute = macs / (cube.macs_per_cycle(g.dtype) * cube.clock_hz)
    return max(compute, (counts.gm_read + counts.gm_written) / cube.hbm_bytes_per_s)


def conv_route_estimate_s(p: ConvL1Plan, cube: CubeUnit) -> float:
    """The L1 route's estimate: the kernel (:func:`conv_l1_estimate_s`) plus the x, w
    and y transpose kernels around it (NCHW/OIHW to NHWC/OHWC and back: each array read
    and written once at the HBM bandwidth); launches not included."""
    g, size = p.geo, ITEMSIZE[p.geo.dtype]
    moved = 2 * (g.n * g.c * g.h * g.w + g.o * g.c * g.fh * g.fw + g.n * g.o * g.oh * g.ow)
    return conv_l1_estimate_s(p, conv_l1_counts(p, size), cube) + \
        moved * size / cube.hbm_bytes_per_s


__all__ = ["ConvCounts", "ConvGeometry", "ConvL1Plan", "conv_l1_counts", "conv_l1_estimate_s",
           "conv_route_estimate_s", "plan_conv_l1"]
