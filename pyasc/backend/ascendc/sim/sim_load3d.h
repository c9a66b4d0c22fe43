// ascend-sim: LoadData 3D v2 (img2col, L1 -> L0A / L0B on MTE1), SetFmatrix and
// SetLoadDataPaddingValue of dav-c220 (910B).
//
// The source in L1 is one NC1HWC0 feature map ([C1][l1H][l1W][C0], C0 = 32 / sizeof(T)).
// The instruction builds a window of its img2col matrix: rows M = output pixels
// (oh * Wout + ow), columns K = (c1, kh, kw, c0), K = C1 * filterH * filterW * C0, and writes
// rows [mStartPt, mStartPt + mExtension) x columns [kStartPt, kStartPt + kExtension) as
//   L0A, no transpose: Zz of the window (M1, K1, 16, C0);
//   L0A, enTranspose (b16): Zz of its transpose (K1, M1, C0, 16);
//   L0B (always "transposed"): Zn of the window taken as a (K_mmad = pixels) x (N_mmad = K)
//        matrix, i.e. rows of C0 (b16) or 8 (b32) pixels per K column.
// Taps outside the image (padList [left, right, top, bottom]) read the pad value.
// This follows the CANN Python reference load_data_l12l0/scripts/load3d.py
// (nc1hwc0_im2col, move_to_l0a, move_to_l0b) and LoadData_3D.md (ranges, channelSize set,
// kExtension/kStartPt multiples, L0B always transposed, no b8 on L0B) [V]. Not modeled
// (a violation says so): channelSize values that are not a multiple of C0 (their L1 layout
// is not in the reference), enTranspose for b32, the repeat mode, filterSize*, pad rows of a
// ragged last M fractal (left unwritten here [I]), and windows that pass the last pixel [I].
#pragma once

#include "sim_cube.h"

namespace AscendC {

struct IsResetLoad3dConfig {
  constexpr IsResetLoad3dConfig(const bool isSetFMatrixIn, const bool isSetPaddingIn)
      : isSetFMatrix(isSetFMatrixIn), isSetPadding(isSetPaddingIn) {}
  bool isSetFMatrix = true;
  bool isSetPadding = true;
};
inline constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

enum class FmatrixMode : uint8_t { FMATRIX_LEFT = 0, FMATRIX_RIGHT = 1 };

template <typename T>
struct LoadData3DParamsV2 {
  LoadData3DParamsV2() {}
  LoadData3DParamsV2(const uint8_t padListIn[4], const uint16_t l1HIn, const uint16_t l1WIn,
                     const uint16_t channelSizeIn, const uint16_t kExtensionIn, const uint16_t mExtensionIn,
                     const uint16_t kStartPtIn, const uint16_t mStartPtIn, const uint8_t strideWIn,
                     const uint8_t strideHIn, const uint8_t filterWIn, const uint8_t filterHIn,
                     const uint8_t dilationFilterWIn, const uint8_t dilationFilterHIn, const bool enTransposeIn,
                     const bool enSmallKIn, const T padValueIn)
      : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
        kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
        filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
        enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn) {
    for (int i = 0; i < 4; ++i) padList[i] = padListIn[i];
  }
  uint8_t padList[4] = {0, 0, 0, 0};
  uint16_t l1H = 0, l1W = 0, channelSize = 0, kExtension = 0, mExtension = 0, kStartPt = 0, mStartPt = 0;
  uint8_t strideW = 1, strideH = 1, filterW = 1, filterH = 1, dilationFilterW = 1, dilationFilterH = 1;
  bool enTranspose = false;
  bool enSmallK = false;
  T padValue = T(0);
  bool filterSizeW = false, filterSizeH = false, fMatrixCtrl = false;
};

// Writes a feature-map register (a scalar-unit register write, in program order).
inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& mode,
                       SrcLoc loc = {}) {
  pyasc_sim::Fmatrix& f = pyasc_sim::block("SetFmatrix", loc).cube->fmatrix[static_cast<int>(mode)];
  f.set = true;
  f.h = l1H;
  f.w = l1W;
  for (int i = 0; i < 4; ++i) f.pad[i] = padList[i];
}

template <typename T>
void SetLoadDataPaddingValue(const T padValue, SrcLoc loc = {}) {
  static_assert(sizeof(T) <= 4, "SetLoadDataPaddingValue: b8/b16/b32 values only");
  pyasc_sim::CubeState& cs = *pyasc_sim::block("SetLoadDataPaddingValue", loc).cube;
  cs.pad_bits = 0;
  std::memcpy(&cs.pad_bits, &padValue, sizeof(T));
  cs.pad_set = true;
}

}  // namespace AscendC

namespace pyasc_sim {

// The img2col geometry one LoadData 3D call works on, after the checks.
struct Img2col {
  uint32_t c0, h, w, c1, fh, fw, sh, sw, dh, dw, pl, pt, oh, ow, ktotal;
};

inline bool channel_size_allowed(uint32_t c, uint32_t bytes) {
  if (bytes == 2) return c == 4 || c == 8 || (c >= 16 && (c % 16 == 0 || c % 16 == 4 || c % 16 == 8));
  if (bytes == 4) return c == 4 || (c >= 8 && (c % 8 == 0 || c % 8 == 4));
  return c == 4 || c == 8 || c == 16 || (c >= 32 && (c % 32 == 0 || c % 32 == 4 || c % 32 == 8 || c % 32 == 16));
}

template <typename T>
Img2col img2col_geometry(const AscendC::LoadData3DParamsV2<T>& p, const Fmatrix& f, const char* api,
                         const SrcLoc& loc) {
  const uint32_t c0 = 32 / sizeof(T);
  check_range(f.h, 1, 32767, "l1H", api, loc);
  check_range(f.w, 1, 32767, "l1W", api, loc);
  check_range(p.strideW, 1, 63, "strideW", api, loc);
  check_range(p.strideH, 1, 63, "strideH", api, loc);
  check_range(p.dilationFilterW, 1, 255, "dilationFilterW", api, loc);
  check_range(p.dilationFilterH, 1, 255, "dilationFilterH", api, loc);
  if (!channel_size_allowed(p.channelSize, sizeof(T))) {
    fail(api, loc, fmt("channelSize %u is not an allowed value for a %u-byte type (LoadData_3D.md)",
                       p.channelSize, unsigned(sizeof(T))));
  }
  if (p.channelSize % c0 != 0) {
    fail(api, loc, fmt("channelSize %u is not a multiple of C0 = %u: the L1 layout of a partial C0 block is not "
                       "modeled by ascend-sim (pad the channels to C0)", p.channelSize, c0));
  }
  if (p.filterSizeW || p.filterSizeH || p.enSmallK) {
    fail(api, loc, "filterSizeW/filterSizeH/enSmallK are not modeled by ascend-sim");
  }
  Img2col g{c0, f.h, f.w, p.channelSize / c0, p.filterH, p.filterW, p.strideH, p.strideW, p.dilationFilterH,
            p.dilationFilterW, f.pad[0], f.pad[2], 0, 0, 0};
  const int64_t hp = int64_t{f.h} + f.pad[2] + f.pad[3], wp = int64_t{f.w} + f.pad[0] + f.pad[1];
  const int64_t kh = int64_t{g.fh - 1} * g.dh + 1, kw = int64_t{g.fw - 1} * g.dw + 1;
  if (hp < kh || wp < kw) fail(api, loc, "the dilated filter is larger than the padded feature map: no output");
  g.oh = static_cast<uint32_t>((hp - kh) / g.sh + 1);
  g.ow = static_cast<uint32_t>((wp - kw) / g.sw + 1);
  g.ktotal = g.c1 * g.fh * g.fw * c0;
  return g;
}

template <typename T>
void check_window(const AscendC::LoadData3DParamsV2<T>& p, const Img2col& g, const char* api, const SrcLoc& loc) {
  const uint32_t m_end = uint32_t{p.mStartPt} + p.mExtension, k_end = uint32_t{p.kStartPt} + p.kExtension;
  if (p.kStartPt % g.c0 != 0) fail(api, loc, fmt("kStartPt %u is not a multiple of C0 = %u", p.kStartPt, g.c0));
  if (k_end > g.ktotal) {
    fail(api, loc, fmt("the K window [%u, %u) passes the img2col width C1*filterH*filterW*C0 = %u", p.kStartPt,
                       k_end, g.ktotal));
  }
  if (k_end < g.ktotal && p.kExtension % g.c0 != 0) {
    fail(api, loc, fmt("kExtension %u is not a multiple of %u and does not reach the last K fractal", p.kExtension,
                       g.c0));
  }
  if (m_end > g.oh * g.ow) {
    fail(api, loc, fmt("the M window [%u, %u) passes the %u x %u = %u output pixels", p.mStartPt, m_end, g.oh, g.ow,
                       g.oh * g.ow));
  }
  if (sizeof(T) != 4 && m_end < g.oh * g.ow && p.mExtension % 16 != 0) {
    fail(api, loc, fmt("mExtension %u is not a multiple of 16 and does not reach the last pixel", p.mExtension));
  }
}

// Element offset in the destination of img2col entry (mi, ki) of the window.
inline uint64_t load3d_dst_index(Mem dm, bool transpose, uint32_t bytes, uint32_t c0, uint32_t m1, uint32_t k1,
                                 uint32_t mi, uint32_t ki) {
  if (dm == Mem::L0B) {  // rows of `r` pixels per K column; K padded to 16 columns
    const uint32_t r = bytes == 2 ? 16 : 8, kp = (k1 * c0 + 15) / 16 * 16;
    return (uint64_t{mi / r} * kp + ki) * r + mi % r;
  }
  if (transpose) return (uint64_t{ki / 16} * m1 + mi / 16) * 256 + (ki % 16) * 16 + mi % 16;
  return (uint64_t{mi / 16} * k1 + ki / c0) * 16 * c0 + (mi % 16) * c0 + ki % c0;
}

// Record the L1 reads: per C1 plane touched, the input rows the M window's taps reach.
template <typename T>
void load3d_reads(const AscendC::LoadData3DParamsV2<T>& p, const Img2col& g, uint64_t base, uint32_t op) {
  const int64_t first = p.mStartPt / g.ow, last = (uint32_t{p.mStartPt} + p.mExtension - 1) / g.ow;
  const int64_t lo = std::max<int64_t>(0, first * g.sh - g.pt);
  const int64_t hi = std::min<int64_t>(g.h - 1, last * g.sh + int64_t{g.fh - 1} * g.dh - g.pt);
  if (lo > hi) return;
  const uint32_t per_c1 = g.fh * g.fw * g.c0;
  const uint64_t row = uint64_t{g.w} * g.c0 * sizeof(T);
  for (uint32_t c1 = p.kStartPt / per_c1; c1 <= (uint32_t{p.kStartPt} + p.kExtension - 1) / per_c1; ++c1) {
    const uint64_t plane = base + uint64_t{c1} * g.h * row;
    access(Mem::L1, plane + lo * row, plane + (hi + 1) * row, op, false);
  }
}

}  // namespace pyasc_sim

namespace AscendC {

// L1 (NC1HWC0) -> L0A (Zz) / L0B (Zn), img2col on MTE1 (see the file comment).
template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<T>& p,
              SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(LoadData 3D, T, int8_t, uint8_t, half, bfloat16_t, float, int32_t, uint32_t);
  const char* api = "LoadData(3D)";
  using pyasc_sim::Mem;
  pyasc_sim::CubeState& cs = *pyasc_sim::block(api, loc).cube;
  if (defaultConfig.isSetFMatrix) SetFmatrix(p.l1H, p.l1W, p.padList, FmatrixMode::FMATRIX_LEFT, loc);
  if (defaultConfig.isSetPadding) SetLoadDataPaddingValue(p.padValue, loc);
  const pyasc_sim::Fmatrix& f = cs.fmatrix[p.fMatrixCtrl ? 1 : 0];
  if (!f.set) pyasc_sim::fail(api, loc, "the feature-map register it reads was never set (call SetFmatrix)");
  if (f.h == 0 || f.w == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0) return;
  if (p.filterW == 0 || p.filterH == 0) return;
  const Mem dm = dst.ref_.mem == Mem::L0B ? Mem::L0B : Mem::L0A;
  if (dm == Mem::L0B && sizeof(T) == 1) pyasc_sim::fail(api, loc, "L1 -> L0B does not support b8 types");
  const bool transpose = dm == Mem::L0A && p.enTranspose;
  if (transpose && sizeof(T) != 2) {
    pyasc_sim::fail(api, loc, "enTranspose into L0A is modeled for b16 types only (b8: unsupported, b32: not modeled)");
  }
  const pyasc_sim::Img2col g = pyasc_sim::img2col_geometry(p, f, api, loc);
  pyasc_sim::check_window(p, g, api, loc);
  const uint32_t c0 = g.c0, m1 = (p.mExtension + 15u) / 16, k1 = (p.kExtension + c0 - 1) / c0;
  const uint32_t rows = sizeof(T) == 2 ? 16 : 8;  // L0B: pixels per row of a K column
  const uint64_t dbytes = dm == Mem::L0B ? uint64_t{(p.mExtension + rows - 1) / rows * rows} *
                                               ((k1 * c0 + 15) / 16 * 16) * sizeof(T)
                                         : uint64_t{m1} * k1 * 512;
  const uint64_t fmbytes = uint64_t{g.c1} * g.h * g.w * 32;
  uint8_t* d = pyasc_sim::cube_operand(dst.ref_, dm, dbytes, 512, api, "dst", loc);
  const uint8_t* s = pyasc_sim::cube_operand(src.ref_, Mem::L1, fmbytes, pyasc_sim::kBlock, api, "src", loc);
  if (!defaultConfig.isSetPadding && !cs.pad_set && (f.pad[0] | f.pad[1] | f.pad[2] | f.pad[3]) != 0) {
    pyasc_sim::fail(api, loc, "padding is on but the pad value register was never set (SetLoadDataPaddingValue)");
  }
  T pad;
  std::memcpy(&pad, &cs.pad_bits, sizeof(T));
  const uint32_t op = pyasc_sim::begin_op(PIPE_MTE1, api, loc);
  pyasc_sim::load3d_reads(p, g, src.ref_.off, op);
  pyasc_sim::access(dm, dst.ref_.off, dst.ref_.off + dbytes, op, true);
  const uint32_t taps = g.fh * g.fw;
  for (uint32_t mi = 0; mi < p.mExtension; ++mi) {
    const uint32_t pix = p.mStartPt + mi, oy = pix / g.ow, ox = pix % g.ow;
    for (uint32_t ki = 0; ki < p.kExtension; ++ki) {
      const uint32_t k = p.kStartPt + ki, cc = k % c0, tap = (k / c0) % taps, c1 = k / (c0 * taps);
      const int64_t iy = int64_t{oy} * g.sh + int64_t{tap / g.fw} * g.dh - g.pt;
      const int64_t ix = int64_t{ox} * g.sw + int64_t{tap % g.fw} * g.dw - g.pl;
      T v = pad;
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) {
        v = pyasc_sim::load<T>(s + (((uint64_t{c1} * g.h + iy) * g.w + ix) * c0 + cc) * sizeof(T));
      }
      const uint64_t at = pyasc_sim::load3d_dst_index(dm, transpose, sizeof(T), c0, m1, k1, mi, ki);
      pyasc_sim::store<T>(d + at * sizeof(T), v);
    }
  }
  pyasc_sim::count(dm == Mem::L0A ? pyasc_sim::Ctr::l1_to_l0a_bytes : pyasc_sim::Ctr::l1_to_l0b_bytes, dbytes);
}

}  // namespace AscendC
