"""AscendC text of the L1-im2col conv2d cube kernel (``conv_plan``).

Arguments: ``x`` NHWC (N, H, W, C), ``w`` OHWC (O, fh, fw, C) (both transposes of
NCHW / OIHW by ``xpose_kernel``), ``y`` (N, OH*OW, O) written as NHWC rows; then the
int32 parameters
:data:`PARAMS` (the geometry and the plan, computed on the host). Block ``b`` takes the
work items ``b, b + GetBlockNum(), ...``, an item being one band of output rows of one
image:

* once per block: the weights GM -> L1 as the NZ layout of (O x K), K = (c1, kh, kw, c0),
  one ``Nd2NzParams`` copy per channel block (its fh*fw taps are the ND matrices; the
  channel padding to C0 is Nd2Nz's zero fill); if they fit L0B, one contiguous
  ``LoadData`` 2D makes them Zn of the (K x O) B there for the whole kernel [V layouts,
  reference 3.1/4.1; the per-tap matrices I];
* per item: the band's input rows (with the filter's halo) GM -> L1 by one Nd2Nz copy of
  the (rows*W x C) NHWC matrix, whose NZ layout is NC1HWC0 [I];
* per M tile of the band's pixels and N block of ``baseN`` output channels (one block
  when the weights stay in L0B), per K block of ``baseK`` img2col columns (one block
  likewise): ``LoadData`` 3D v2 of the K block into L0A (Zz: M = pixels; the band's
  padding in padList, stride/dilation in the parameters) [V semantics, reference 4.2],
  unless the weights stay in L0B their (K block x N block) as Zn by ``LoadData`` 2D,
  ``Mmad`` accumulating into L0C (``cmatrixInitVal`` on the first K block only); then
  ``Fixpipe`` (ReLU, conversion) of the (m x nCur) tile to its columns of y (dstStride O).

L1 bands, the L0A/L0B block pairs and the L0C tiles are double-buffered; every hand-off
is an explicit flag as in ``emit_cube`` (forward ``MTE2_MTE1``, ``MTE1_M``, ``M_FIX``;
backward ``MTE1_MTE2``, ``M_MTE1``, ``FIX_M`` pre-armed and drained).  Nothing here ran on an NPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyasc.backend.ascendc.conv_plan import ConvL1Plan
from pyasc.backend.ascendc.cores import CUBE
from pyasc.backend.ascendc.cwriter import CWriter

PARAMS = ("n", "h", "w", "c", "o", "fh", "fw", "sh", "sw", "dh", "dw", "pl", "pr", "pt", "pb",
          "oh", "ow", "bandRows", "bands", "baseM", "baseK", "baseN")
"""The kernel's scalar parameters after ``x, wt, y`` (int32)."""

CTYPES = {"f16": "half", "bf16": "bfloat16_t", "f32": "float"}


@dataclass
class ConvKernel:
    """One conv2d cube kernel: its plan, the output dtype and Fixpipe's ReLU."""

    core: ClassVar[str] = CUBE
    name: str
    plan: ConvL1Plan
    out: str            # "f16", "bf16" or "f32"
    relu: bool = False

    @property
    def block_dim(self) -> int:
        """Cube cores launched."""
        return self.plan.blocks

    @property
    def quant(self) -> str:
        """Fixpipe's conversion of the float32 sums to ``out``."""
        return {"f16": "F322F16", "bf16": "F322BF16", "f32": "NoQuant"}[self.out]


def params(k: ConvKernel) -> tuple[str, ...]:
    """The kernel's int32 parameters: :data:`PARAMS`, and with streamed weights the
    output channels of a work item (``groupN``)."""
    return (*PARAMS, "groupN") if k.plan.stream else PARAMS


def param_values(k: ConvKernel) -> list[int]:
    """The values of :func:`params` for ``k``'s plan."""
    p, g = k.plan, k.plan.geo
    return [g.n, g.h, g.w, g.c, g.o, g.fh, g.fw, *g.stride, *g.dilation, *g.pads, g.oh, g.ow,
            p.band_rows, p.bands, p.base_m, p.base_k, p.base_n, *[p.group_n] * p.stream]


_SETUP = """\
constexpr int32_t C0 = {c0};
const int32_t o16 = (o + 15) / 16 * 16, c1 = (c + C0 - 1) / C0, taps = fh * fw;
const int32_t kTot = c1 * taps * C0, items = {items};
if (GetBlockIdx() >= items) return;
const int32_t span = (bandRows - 1) * sh + (fh - 1) * dh + 1, maxRows = span < h ? span : h;
const uint32_t band = c1 * maxRows * w * C0, wElems = {w_elems};
const bool bRes = {b_res};  // all the weights stay in L0B
const uint32_t aTile = baseM * baseK, bTile = baseK * baseN, cTile = baseM * baseN;
GlobalTensor<{t}> xGm, wGm;
GlobalTensor<{to}> yGm;
xGm.SetGlobalBuffer((__gm__ {t}*)x, n * h * w * c);
wGm.SetGlobalBuffer((__gm__ {t}*)wt, o * taps * c);
yGm.SetGlobalBuffer((__gm__ {to}*)y, {y_elems});
LocalTensor<{t}> w1(TPosition::B1, 0, wElems), x1(TPosition::A1, wElems * sizeof({t}), 2 * band);
LocalTensor<{t}> b2(TPosition::B2, 0, bRes ? wElems : 2 * bTile), a2(TPosition::A2, 0, 2 * aTile);
LocalTensor<float> acc(TPosition::CO1, 0, 2 * cTile);"""

# all the weights into L1 once per block (and into L0B when they fit it)
_W_RESIDENT = """\
for (int32_t cb = 0; cb < c1; ++cb) {
  const uint16_t d = c - cb * C0 < C0 ? c - cb * C0 : C0;
  DataCopy(w1[cb * taps * o16 * C0], wGm[cb * C0],
           Nd2NzParams(taps, o, d, c, taps * c, o16, 1, o16 * C0));
}
SetFlag<HardEvent::MTE2_MTE1>(2);
WaitFlag<HardEvent::MTE2_MTE1>(2);
if (bRes) {
  LoadData(b2, w1, LoadData2DParams(0, kTot / C0 * (o16 / 16), 1, 0, 0, false, 0));
  SetFlag<HardEvent::MTE1_M>(2);
  WaitFlag<HardEvent::MTE1_M>(2);
}"""

_PREARM = """\
for (int32_t e = 0; e < 2; ++e) {
  SetFlag<HardEvent::MTE1_MTE2>(e);
  SetFlag<HardEvent::M_MTE1>(e);
  SetFlag<HardEvent::FIX_M>(e);
}"""

# streamed weights: panel buffer ps is free (MTE1_MTE2 2 + ps) and loaded (MTE2_MTE1)
_PANEL_PREARM = """\
SetFlag<HardEvent::MTE1_MTE2>(2);
SetFlag<HardEvent::MTE1_MTE2>(3);
const uint32_t pElems = baseN * kTot;  // one weight panel: baseN channels, all of K
int32_t panel = 0;"""

_PANEL = """\
const int32_t nCur = o - n0 < baseN ? o - n0 : baseN, nPad = (nCur + 15) / 16 * 16;
const int32_t ps = panel & 1;
WaitFlag<HardEvent::MTE1_MTE2>(2 + ps);
for (int32_t cb = 0; cb < c1; ++cb) {
  const uint16_t d = c - cb * C0 < C0 ? c - cb * C0 : C0;
  DataCopy(w1[ps * pElems + cb * taps * baseN * C0], wGm[(int64_t)n0 * taps * c + cb * C0],
           Nd2NzParams(taps, nCur, d, c, taps * c, baseN, 1, baseN * C0));
}
SetFlag<HardEvent::MTE2_MTE1>(2 + ps);
WaitFlag<HardEvent::MTE2_MTE1>(2 + ps);"""

_ITEM = """\
const int32_t img = {bi} / bands, r0 = ({bi} % bands) * bandRows;
const int32_t r1 = r0 + bandRows < oh ? r0 + bandRows : oh;
const int32_t lo = r0 * sh - pt, hi = (r1 - 1) * sh + (fh - 1) * dh - pt;
const int32_t s = lo > 0 ? lo : 0, last = hi < h - 1 ? hi : h - 1;
const int32_t rows = last - s + 1, slot = step & 1;
WaitFlag<HardEvent::MTE1_MTE2>(slot);
DataCopy(x1[slot * band], xGm[(img * h + s) * w * c],
         Nd2NzParams(1, rows * w, c, 0, c, rows * w, 1, 0));
SetFlag<HardEvent::MTE2_MTE1>(slot);
WaitFlag<HardEvent::MTE2_MTE1>(slot);
const uint8_t pad[4] = {(uint8_t)pl, (uint8_t)pr, (uint8_t)(s - lo), (uint8_t)(hi - last)};
const int32_t pixels = (r1 - r0) * ow;"""

_MTILE = """\
const int32_t m = baseM < pixels - m0 ? baseM : pixels - m0, mPad = (m + 15) / 16 * 16;"""

_NBLOCK_START = """\
const int32_t nCur = o - n0 < baseN ? o - n0 : baseN, nPad = (nCur + 15) / 16 * 16, t = tile & 1;
WaitFlag<HardEvent::FIX_M>(t);"""

_TILE_START = """\
const int32_t t = tile & 1;
WaitFlag<HardEvent::FIX_M>(t);"""

# One K block: the img2col columns [k0, k0 + kb) of the M tile into L0A, the weights'
# (kb x nPad) block into L0B (Zn: per 16-channel column, kb / C0 fractals gathered with
# the L1 NZ layout's stride o16 / 16), Mmad accumulating in L0C after the first block.
# A tile of one pixel (an output of one column has one pixel per band) must not be a
# GEMV (Mmad with m == 1 reads L0A as ND; LoadData 3D wrote it Zz): its Mmad gets m = 2
# and the second row's result is never written out [I: the reference's workaround, as
# emit_cube's A^T tiles].
_KBLOCK = """\
const int32_t kb = kTot - k0 < baseK ? kTot - k0 : baseK, p = kStep & 1;
WaitFlag<HardEvent::M_MTE1>(p);
LoadData(a2[p * aTile], x1[slot * band],
         LoadData3DParamsV2<{t}>(pad, rows, w, c1 * C0, kb, m, k0, m0, sw, sh, fw, fh, dw, dh,
                                 false, false, ({t})0));
if (!bRes) {{
  for (int32_t j = 0; j < nPad / 16; ++j)
    LoadData(b2[p * bTile + j * 16 * C0], w1[{wsrc}],
             LoadData2DParams(0, kb / C0, {wrows} / 16, 0, nPad / 16 - 1, false, 0));
}}
SetFlag<HardEvent::MTE1_M>(p);
WaitFlag<HardEvent::MTE1_M>(p);
if (k0 > 0 && (mPad / 16) * (nPad / 16) < 10) PipeBarrier<PIPE_M>();
Mmad(acc[t * cTile], a2[p * aTile], bRes ? b2 : b2[p * bTile],
     MmadParams(m < 2 ? 2 : m, nCur, kb, 0, false, k0 == 0));
SetFlag<HardEvent::M_MTE1>(p);"""

_FIX_WAIT = """\
SetFlag<HardEvent::M_FIX>(t);
WaitFlag<HardEvent::M_FIX>(t);"""

FIXPIPE_Y = """\
Fixpipe(yGm[((int64_t)img * oh * ow + r0 * ow + m0) * o + n0], acc[t * cTile],
        FixpipeParamsV220(nCur, m, mPad, o, {relu}, QuantMode_t::{quant}, 0, 1, 0, 0, 0));"""
"""The (m x nCur) tile to its pixels and channels of the NHWC result (row pitch O)."""

_DRAIN = """\
for (int32_t e = 0; e < 2; ++e) {
  WaitFlag<HardEvent::MTE1_MTE2>(e);
  WaitFlag<HardEvent::M_MTE1>(e);
  WaitFlag<HardEvent::FIX_M>(e);
}"""

_PANEL_DRAIN = """\
WaitFlag<HardEvent::MTE1_MTE2>(2);
WaitFlag<HardEvent::MTE1_MTE2>(3);"""


def _lines(w: CWriter, text: str) -> None:
    for line in text.splitlines():
        w.line(line)


def emit_conv(w: CWriter, k: ConvKernel) -> None:
    """The definition of kernel ``k``."""
    t, to = CTYPES[k.plan.geo.dtype], CTYPES[k.out]
    sig = ", ".join(["GM_ADDR x", "GM_ADDR wt", "GM_ADDR y", *(f"int32_t {q}" for q in params(k))])
    w.raw(f"// {k.name}: conv2d on the cube, im2col in L1 (LoadData 3D) -> L0A, {t} -> float "
          f"in L0C -> {to}, NHWC in and out")
    with w.block(f'extern "C" __global__ __aicore__ void {k.name}({sig})'):
        emit_conv_body(w, k)


def emit_conv_body(w: CWriter, k: ConvKernel, fixpipe: str = FIXPIPE_Y,
                   y_elems: str = "n * oh * ow * o", tail: str = "") -> None:
    """The conv kernel's statements (``x``, ``wt``, ``y`` and :data:`PARAMS` in scope):
    ``fixpipe`` writes each finished L0C tile (``t``, ``tile``, ``m``, ``nCur`` ...) to
    ``y`` of ``y_elems`` elements; ``tail`` runs after the last item, before the drain.
    A MIX kernel (``conv_mix``) passes its workspace hand-off."""
    p = k.plan
    t, to = CTYPES[p.geo.dtype], CTYPES[k.out]
    _lines(w, _SETUP.format(c0=p.c0, t=t, to=to, y_elems=y_elems,
                            w_elems="2 * baseN * kTot" if p.stream else "o16 * kTot",
                            b_res="false" if p.stream else "baseK >= kTot && baseN >= o16",
                            items="n * bands * ((o + groupN - 1) / groupN)" if p.stream
                            else "n * bands"))
    if p.stream:  # work items: (image, band, group of N blocks)
        w.line("const int32_t nGroups = (o + groupN - 1) / groupN;")
    _lines(w, _PANEL_PREARM if p.stream else _W_RESIDENT)
    _lines(w, _PREARM)
    w.line("int32_t step = 0, tile = 0, kStep = 0;")
    items = "for (int32_t item = GetBlockIdx(); item < items; item += GetBlockNum(), ++step)"
    fix = fixpipe.format(relu="true" if k.relu else "false", quant=k.quant)
    with w.block(items):
        _lines(w, _ITEM.replace("{bi}", "item / nGroups" if p.stream else "item"))
        if p.stream:
            _streamed(w, t, fix)
        else:
            _resident(w, t, fix)
        w.line("SetFlag<HardEvent::MTE1_MTE2>(slot);")
    _lines(w, tail)
    _lines(w, _DRAIN)
    if p.stream:
        _lines(w, _PANEL_DRAIN)


def _tile(w: CWriter, t: str, fix: str, wsrc: str, wrows: str) -> None:
    """One L0C tile's K loop and its Fixpipe (``t``: the operand type)."""
    with w.block("for (int32_t k0 = 0; k0 < kTot; k0 += baseK, ++kStep)"):
        _lines(w, _KBLOCK.format(t=t, wsrc=wsrc, wrows=wrows))
    _lines(w, _FIX_WAIT)
    _lines(w, fix)
    w.line("SetFlag<HardEvent::FIX_M>(t);")


def _resident(w: CWriter, t: str, fix: str) -> None:
    """An item's tiles with all the weights in L1: M tiles, N blocks inside."""
    with w.block("for (int32_t m0 = 0; m0 < pixels; m0 += baseM)"):
        _lines(w, _MTILE)
        with w.block("for (int32_t n0 = 0; n0 < o; n0 += baseN, ++tile)"):
            _lines(w, _NBLOCK_START)
            _tile(w, t, fix, "(k0 / C0 * o16 + n0 + j * 16) * C0", "o16")


def _streamed(w: CWriter, t: str, fix: str) -> None:
    """An item's tiles with streamed weights: per N block its panel GM -> L1 (ping-pong
    with the next block's), then the M tiles against it."""
    w.line("const int32_t g0 = item % nGroups * groupN, gEnd = o < g0 + groupN ? o : "
           "g0 + groupN;")
    with w.block("for (int32_t n0 = g0; n0 < gEnd; n0 += baseN, ++panel)"):
        _lines(w, _PANEL)
        with w.block("for (int32_t m0 = 0; m0 < pixels; m0 += baseM, ++tile)"):
            _lines(w, _MTILE)
            _lines(w, _TILE_START)
            _tile(w, t, fix, "ps * pElems + (k0 / C0 * baseN + j * 16) * C0", "baseN")
        w.line("SetFlag<HardEvent::MTE1_MTE2>(2 + ps);")


def conv_source(k: ConvKernel) -> str:
    """A whole translation unit holding kernel ``k`` (for ascend-sim and tests)."""
    w = CWriter(f"{k.name}.cpp")
    w.raw('#include "kernel_operator.h"')
    w.raw("using namespace AscendC;")
    w.raw()
    emit_conv(w, k)
    return w.text()


__all__ = ["CTYPES", "FIXPIPE_Y", "PARAMS", "ConvKernel", "conv_source", "emit_conv",
           "emit_conv_body", "param_values", "params"]
