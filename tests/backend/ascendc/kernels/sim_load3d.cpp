// Hand-written cube kernels for ascend-sim's LoadData 3D v2 (img2col) model. The feature map
// comes from GM as NHWC (H*W pixels x C channels) and becomes NC1HWC0 in L1 through one
// Nd2Nz copy (channels zero-padded to C0). The img2col window then goes
//   conv_a:  to L0A (Zz, M = pixels, K = (c1, kh, kw, c0)); B = the reordered weights
//            (O x K, loaded as Zn); C = the window's (pixels x O) convolution;
//   conv_b:  to L0B (Zn, K_mmad = pixels, N = K); A = a random (rows x pixels) matrix;
//            C = A @ cols (the weight-gradient product);
//   conv_t:  to L0A transposed (b16; M = K, K_mmad = pixels); B = (N x pixels) given
//            transposed; C = cols^T @ B^T.
// Each C is written as float32 (rows x cols) and compared with numpy in test_sim_load3d.py.
// The violations at the end carry `VIOLATION: <kernel>` comments.
#include "kernel_operator.h"
using namespace AscendC;

inline constexpr IsResetLoad3dConfig kRegisters = {false, false};

struct Geo {  // the kernels' scalar arguments
  int32_t h, w, c, fh, fw, sh, sw, dh, dw, pl, pr, pt, pb, m_start, m_ext, k_start, k_ext, other;
};

__aicore__ inline uint32_t align(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// NHWC in GM -> NC1HWC0 in L1 at offset 0 (C1 planes of H*W rows of C0 elements).
template <class T>
__aicore__ inline LocalTensor<T> feature_map(GM_ADDR x, const Geo& g) {
  GlobalTensor<T> xg;
  xg.SetGlobalBuffer((__gm__ T*)x, g.h * g.w * g.c);
  LocalTensor<T> x1(TPosition::A1, 0, 131072 / sizeof(T));
  DataCopy(x1, xg, Nd2NzParams(1, g.h * g.w, g.c, 0, g.c, g.h * g.w, 1, 0));
  return x1;
}

// The img2col window, with the feature map described by SetFmatrix (fp16 kernels) or by
// the parameters themselves (the default config, fp32 kernels).
template <class T>
__aicore__ inline void img2col(const LocalTensor<T>& dst, const LocalTensor<T>& x1, const Geo& g, bool transpose) {
  constexpr uint32_t c0 = 32 / sizeof(T);
  const uint8_t pad[4] = {uint8_t(g.pl), uint8_t(g.pr), uint8_t(g.pt), uint8_t(g.pb)};
  LoadData3DParamsV2<T> p(pad, g.h, g.w, align(g.c, c0), g.k_ext, g.m_ext, g.k_start, g.m_start, g.sw, g.sh, g.fw,
                          g.fh, g.dw, g.dh, transpose, false, T(0));
  if constexpr (sizeof(T) == 2) {
    SetFmatrix(g.h, g.w, pad, FmatrixMode::FMATRIX_LEFT);
    SetLoadDataPaddingValue(T(0));
    p.l1H = 1;  // ignored with kRegisters: the registers hold the feature map
    LoadData<T, kRegisters>(dst, x1, p);
  } else {
    LoadData(dst, x1, p);
  }
}

// (rows x k) given row-major in GM, transposed into L0B as Zn of a (k x rows) B: rows = N.
template <class T>
__aicore__ inline void b_transposed(const LocalTensor<T>& b2, GlobalTensor<T> bg, uint32_t rows, uint32_t k,
                                    uint32_t ld) {
  constexpr uint32_t c0 = 32 / sizeof(T);
  LocalTensor<T> b1(TPosition::B1, 262144, 65536 / sizeof(T));
  DataCopy(b1, bg, Nd2NzParams(1, rows, k, 0, ld, align(rows, 16), 1, 0));
  SetFlag<HardEvent::MTE2_MTE1>(1);
  WaitFlag<HardEvent::MTE2_MTE1>(1);
  LoadData(b2, b1, LoadData2DParams(0, align(k, c0) / c0 * (align(rows, 16) / 16), 1, 0, 0, false, 0));
}

// (rows x k) given row-major in GM into L0A as Zz.
template <class T>
__aicore__ inline void a_plain(const LocalTensor<T>& a2, GlobalTensor<T> ag, uint32_t rows, uint32_t k) {
  constexpr uint32_t c0 = 32 / sizeof(T);
  const uint32_t mp = align(rows, 16), kp = align(k, c0);
  LocalTensor<T> a1(TPosition::A1, 262144, 65536 / sizeof(T));
  DataCopy(a1, ag, Nd2NzParams(1, rows, k, 0, k, mp, 1, 0));
  SetFlag<HardEvent::MTE2_MTE1>(1);
  WaitFlag<HardEvent::MTE2_MTE1>(1);
  for (uint32_t i = 0; i < mp / 16; ++i) {
    LoadData(a2[i * kp * 16], a1[i * 16 * c0], LoadData2DParams(0, kp / c0, mp / 16, 0, 0, false, 0));
  }
}

// C (m x n, float32) = L0A x L0B, written row-major to y.
template <class T>
__aicore__ inline void finish(GM_ADDR y, const LocalTensor<T>& a2, const LocalTensor<T>& b2, uint32_t m, uint32_t n,
                              uint32_t k) {
  GlobalTensor<float> yg;
  yg.SetGlobalBuffer((__gm__ float*)y, m * n);
  LocalTensor<float> c1(TPosition::CO1, 0, 32768);
  SetFlag<HardEvent::MTE1_M>(0);
  WaitFlag<HardEvent::MTE1_M>(0);
  Mmad(c1, a2, b2, MmadParams(m, n, k, 0, false, true));
  SetFlag<HardEvent::M_FIX>(0);
  WaitFlag<HardEvent::M_FIX>(0);
  Fixpipe(yg, c1, FixpipeParamsV220(n, m, align(m, 16), n, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0));
}

#define GEO_ARGS                                                                                               \
  int32_t h, int32_t w, int32_t c, int32_t fh, int32_t fw, int32_t sh, int32_t sw, int32_t dh, int32_t dw,      \
      int32_t pl, int32_t pr, int32_t pt, int32_t pb, int32_t m_start, int32_t m_ext, int32_t k_start,          \
      int32_t k_ext, int32_t other
#define GEO Geo{h, w, c, fh, fw, sh, sw, dh, dw, pl, pr, pt, pb, m_start, m_ext, k_start, k_ext, other}

// other = O; wt is (O x K_total) row-major (the reordered, channel-padded weights).
template <class T>
__aicore__ inline void conv_a(GM_ADDR x, GM_ADDR wt, GM_ADDR y, const Geo& g, uint32_t ktotal) {
  LocalTensor<T> x1 = feature_map<T>(x, g);
  GlobalTensor<T> wg;
  wg.SetGlobalBuffer((__gm__ T*)wt, g.other * ktotal);
  LocalTensor<T> a2(TPosition::A2, 0, 65536 / sizeof(T)), b2(TPosition::B2, 0, 65536 / sizeof(T));
  b_transposed<T>(b2, wg[g.k_start], g.other, g.k_ext, ktotal);
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  img2col<T>(a2, x1, g, false);
  finish<T>(y, a2, b2, g.m_ext, g.other, g.k_ext);
}

// other = rows of A; a is (rows x m_ext) row-major.
template <class T>
__aicore__ inline void conv_b(GM_ADDR x, GM_ADDR a, GM_ADDR y, const Geo& g) {
  LocalTensor<T> x1 = feature_map<T>(x, g);
  GlobalTensor<T> ag;
  ag.SetGlobalBuffer((__gm__ T*)a, g.other * g.m_ext);
  LocalTensor<T> a2(TPosition::A2, 0, 65536 / sizeof(T)), b2(TPosition::B2, 0, 65536 / sizeof(T));
  a_plain<T>(a2, ag, g.other, g.m_ext);
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  img2col<T>(b2, x1, g, false);
  finish<T>(y, a2, b2, g.other, g.k_ext, g.m_ext);
}

// other = N; bt is (N x m_ext) row-major.
__aicore__ inline void conv_t(GM_ADDR x, GM_ADDR bt, GM_ADDR y, const Geo& g) {
  LocalTensor<half> x1 = feature_map<half>(x, g);
  GlobalTensor<half> bg;
  bg.SetGlobalBuffer((__gm__ half*)bt, g.other * g.m_ext);
  LocalTensor<half> a2(TPosition::A2, 0, 32768), b2(TPosition::B2, 0, 32768);
  b_transposed<half>(b2, bg, g.other, g.m_ext, g.m_ext);
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  img2col<half>(a2, x1, g, true);
  finish<half>(y, a2, b2, g.k_ext, g.other, g.m_ext);
}

extern "C" __global__ __aicore__ void conv_a_f16(GM_ADDR x, GM_ADDR wt, GM_ADDR y, GEO_ARGS, int32_t ktotal) {
  conv_a<half>(x, wt, y, GEO, ktotal);
}
extern "C" __global__ __aicore__ void conv_a_f32(GM_ADDR x, GM_ADDR wt, GM_ADDR y, GEO_ARGS, int32_t ktotal) {
  conv_a<float>(x, wt, y, GEO, ktotal);
}
extern "C" __global__ __aicore__ void conv_b_f16(GM_ADDR x, GM_ADDR a, GM_ADDR y, GEO_ARGS) {
  conv_b<half>(x, a, y, GEO);
}
extern "C" __global__ __aicore__ void conv_b_f32(GM_ADDR x, GM_ADDR a, GM_ADDR y, GEO_ARGS) {
  conv_b<float>(x, a, y, GEO);
}
extern "C" __global__ __aicore__ void conv_t_f16(GM_ADDR x, GM_ADDR bt, GM_ADDR y, GEO_ARGS) {
  conv_t(x, bt, y, GEO);
}

// ---- violations: a 4 x 4 x 16 half map, 3 x 3 filter, a 16-pixel window -------------------
#define SETUP                                                                \
  GlobalTensor<half> xg;                                                     \
  xg.SetGlobalBuffer((__gm__ half*)x, 256);                                  \
  LocalTensor<half> x1(TPosition::A1, 0, 256), a2(TPosition::A2, 0, 4096);   \
  LocalTensor<int8_t> x8(TPosition::A1, 0, 512);                             \
  LocalTensor<int8_t> b8(TPosition::B2, 0, 8192);                            \
  const uint8_t pad[4] = {1, 1, 1, 1};                                       \
  DataCopy(x1, xg, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
#define SYNC                      \
  SetFlag<HardEvent::MTE2_MTE1>(0); \
  WaitFlag<HardEvent::MTE2_MTE1>(0);
#define PARAMS(c, k_ext, m_start, m_ext) \
  LoadData3DParamsV2<half>(pad, 4, 4, c, k_ext, m_ext, 0, m_start, 1, 1, 3, 3, 1, 1, false, false, half(0))
#define KERNEL(name) extern "C" __global__ __aicore__ void name(GM_ADDR x)

KERNEL(l3d_no_mte2_mte1) {
  SETUP
  LoadData(a2, x1, PARAMS(16, 144, 0, 16));  // VIOLATION: l3d_no_mte2_mte1
}

KERNEL(l3d_channel_size) {
  SETUP SYNC
  LoadData(a2, x1, PARAMS(12, 144, 0, 16));  // VIOLATION: l3d_channel_size
}

KERNEL(l3d_partial_c0) {
  SETUP SYNC
  LoadData(a2, x1, PARAMS(8, 72, 0, 16));  // VIOLATION: l3d_partial_c0
}

KERNEL(l3d_past_last_pixel) {
  SETUP SYNC
  LoadData(a2, x1, PARAMS(16, 144, 8, 16));  // VIOLATION: l3d_past_last_pixel
}

KERNEL(l3d_no_fmatrix) {
  SETUP SYNC
  LoadData<half, kRegisters>(a2, x1, PARAMS(16, 144, 0, 16));  // VIOLATION: l3d_no_fmatrix
}

KERNEL(l3d_k_start) {
  SETUP SYNC
  LoadData3DParamsV2<half> p = PARAMS(16, 64, 0, 16);
  p.kStartPt = 8;
  LoadData(a2, x1, p);  // VIOLATION: l3d_k_start
}

KERNEL(l3d_b8_to_l0b) {
  SETUP SYNC
  LoadData3DParamsV2<int8_t> p(pad, 4, 4, 32, 32, 16, 0, 0, 1, 1, 1, 1, 1, 1, false, false, int8_t(0));
  LoadData(b8, x8, p);  // VIOLATION: l3d_b8_to_l0b
}

KERNEL(l3d_l0a_overflow) {
  SETUP SYNC
  LocalTensor<half> small(TPosition::A2, 0, 1024);
  LoadData(small, x1, PARAMS(16, 144, 0, 16));  // VIOLATION: l3d_l0a_overflow
}
