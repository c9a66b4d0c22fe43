// A hand-written conv2d cube kernel of the L1-im2col route (pyasc/backend/ascendc/
// conv_plan.py): x NHWC in GM, the reordered weights wt (O x C1*fh*fw*C0) resident in L1 and
// L0B, per work item (image, band of output rows) one Nd2Nz copy of the band's input rows
// (with the halo) into L1 as NC1HWC0, then per M tile of the band's pixels LoadData 3D
// (img2col) into L0A, Mmad into L0C and Fixpipe to y (NHWC: pixels x O). L1 bands and
// L0A/L0C tiles are double-buffered with pre-armed flags. The tiling comes from the plan, as
// kernel arguments. pyasc does not emit this kernel yet: it is the reference the lowering
// will follow, run on ascend-sim by test_sim_conv.py.
#include "kernel_operator.h"
using namespace AscendC;

struct Conv {
  int32_t n, h, w, c, o, fh, fw, sh, sw, dh, dw, pl, pr, pt, pb, oh, ow, band_rows, bands, base_m, ktot;
};

__aicore__ inline int32_t align16(int32_t v) { return (v + 15) / 16 * 16; }
__aicore__ inline int32_t imin(int32_t a, int32_t b) { return a < b ? a : b; }
__aicore__ inline int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }

template <HardEvent E>
__aicore__ inline void arm() {
  SetFlag<E>(0);
  SetFlag<E>(1);
}
template <HardEvent E>
__aicore__ inline void drain() {
  WaitFlag<E>(0);
  WaitFlag<E>(1);
}

template <class T, class TO>
__aicore__ inline void conv_l1(GM_ADDR x, GM_ADDR wt, GM_ADDR y, const Conv& g, QuantMode_t q, bool relu) {
  constexpr int32_t c0 = 32 / sizeof(T);
  const int32_t o16 = align16(g.o), c1 = (g.c + c0 - 1) / c0, items = g.n * g.bands;
  if (GetBlockIdx() >= items) return;
  const int32_t max_rows = imin(g.h, (g.band_rows - 1) * g.sh + (g.fh - 1) * g.dh + 1);
  const uint32_t band = c1 * max_rows * g.w * c0, a_tile = g.base_m * g.ktot, c_tile = g.base_m * o16;
  const uint32_t w_elems = o16 * g.ktot;
  GlobalTensor<T> xg, wg;
  GlobalTensor<TO> yg;
  xg.SetGlobalBuffer((__gm__ T*)x, g.n * g.h * g.w * g.c);
  wg.SetGlobalBuffer((__gm__ T*)wt, g.o * g.ktot);
  yg.SetGlobalBuffer((__gm__ TO*)y, g.n * g.oh * g.ow * g.o);
  LocalTensor<T> w1(TPosition::B1, 0, w_elems), x1(TPosition::A1, w_elems * sizeof(T), 2 * band);
  LocalTensor<T> b2(TPosition::B2, 0, w_elems), a2(TPosition::A2, 0, 2 * a_tile);
  LocalTensor<float> acc(TPosition::CO1, 0, 2 * c_tile);
  DataCopy(w1, wg, Nd2NzParams(1, g.o, g.ktot, 0, g.ktot, o16, 1, 0));
  SetFlag<HardEvent::MTE2_MTE1>(2);
  WaitFlag<HardEvent::MTE2_MTE1>(2);
  LoadData(b2, w1, LoadData2DParams(0, g.ktot / c0 * (o16 / 16), 1, 0, 0, false, 0));
  SetFlag<HardEvent::MTE1_M>(2);
  WaitFlag<HardEvent::MTE1_M>(2);
  arm<HardEvent::MTE1_MTE2>();
  arm<HardEvent::M_MTE1>();
  arm<HardEvent::FIX_M>();
  int32_t step = 0, tile = 0;
  for (int32_t item = GetBlockIdx(); item < items; item += GetBlockNum(), ++step) {
    const int32_t img = item / g.bands, r0 = (item % g.bands) * g.band_rows, r1 = imin(g.oh, r0 + g.band_rows);
    const int32_t lo = r0 * g.sh - g.pt, hi = (r1 - 1) * g.sh + (g.fh - 1) * g.dh - g.pt;
    const int32_t s = imax(0, lo), e = imin(g.h - 1, hi), rows = e - s + 1, slot = step & 1;
    WaitFlag<HardEvent::MTE1_MTE2>(slot);
    DataCopy(x1[slot * band], xg[(img * g.h + s) * g.w * g.c],
             Nd2NzParams(1, rows * g.w, g.c, 0, g.c, rows * g.w, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(slot);
    WaitFlag<HardEvent::MTE2_MTE1>(slot);
    const uint8_t pad[4] = {uint8_t(g.pl), uint8_t(g.pr), uint8_t(s - lo), uint8_t(hi - e)};
    const int32_t pixels = (r1 - r0) * g.ow;
    for (int32_t m0 = 0; m0 < pixels; m0 += g.base_m, ++tile) {
      const int32_t m = imin(g.base_m, pixels - m0), t = tile & 1;
      WaitFlag<HardEvent::M_MTE1>(t);
      LoadData(a2[t * a_tile], x1[slot * band],
               LoadData3DParamsV2<T>(pad, rows, g.w, c1 * c0, g.ktot, m, 0, m0, g.sw, g.sh, g.fw, g.fh, g.dw, g.dh,
                                     false, false, T(0)));
      SetFlag<HardEvent::MTE1_M>(t);
      WaitFlag<HardEvent::MTE1_M>(t);
      WaitFlag<HardEvent::FIX_M>(t);
      Mmad(acc[t * c_tile], a2[t * a_tile], b2, MmadParams(m, g.o, g.ktot, 0, false, true));
      SetFlag<HardEvent::M_MTE1>(t);
      SetFlag<HardEvent::M_FIX>(t);
      WaitFlag<HardEvent::M_FIX>(t);
      Fixpipe(yg[(int64_t(img) * g.oh * g.ow + r0 * g.ow + m0) * g.o], acc[t * c_tile],
              FixpipeParamsV220(g.o, m, align16(m), g.o, relu, q, 0, 1, 0, 0, 0));
      SetFlag<HardEvent::FIX_M>(t);
    }
    SetFlag<HardEvent::MTE1_MTE2>(slot);
  }
  drain<HardEvent::MTE1_MTE2>();
  drain<HardEvent::M_MTE1>();
  drain<HardEvent::FIX_M>();
}

#define CONV_ARGS                                                                                              \
  int32_t n, int32_t h, int32_t w, int32_t c, int32_t o, int32_t fh, int32_t fw, int32_t sh, int32_t sw,        \
      int32_t dh, int32_t dw, int32_t pl, int32_t pr, int32_t pt, int32_t pb, int32_t oh, int32_t ow,           \
      int32_t band_rows, int32_t bands, int32_t base_m, int32_t ktot, int32_t relu
#define CONV Conv{n, h, w, c, o, fh, fw, sh, sw, dh, dw, pl, pr, pt, pb, oh, ow, band_rows, bands, base_m, ktot}

extern "C" __global__ __aicore__ void conv_l1_f16(GM_ADDR x, GM_ADDR wt, GM_ADDR y, CONV_ARGS) {
  conv_l1<half, half>(x, wt, y, CONV, QuantMode_t::F322F16, relu != 0);
}
extern "C" __global__ __aicore__ void conv_l1_f32(GM_ADDR x, GM_ADDR wt, GM_ADDR y, CONV_ARGS) {
  conv_l1<float, float>(x, wt, y, CONV, QuantMode_t::NoQuant, relu != 0);
}
