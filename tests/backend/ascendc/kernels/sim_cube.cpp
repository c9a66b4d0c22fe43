// Hand-written cube kernels (dav-c220 basic API) for the ascend-sim cube model: correct
// single-tile and K-loop matmuls whose results the tests compare with numpy, and one kernel
// per synchronisation or memory rule that real hardware breaks silently. Each offending call
// carries a `VIOLATION: <kernel>` comment; the tests check that ascend-sim names that line.
#include "kernel_operator.h"
using namespace AscendC;

// Load A (m x k, ND, row pitch lda) and B (k x n with row pitch ldb, or n x k when TRANS_B)
// through L1 into L0A (Zz; ND when m == 1, the GEMV layout) and L0B (Zn), with the flags.
template <class T, bool TRANS_B>
__aicore__ inline void load_operands(const GlobalTensor<T>& ag, const GlobalTensor<T>& bg, LocalTensor<T>& a1,
                                     LocalTensor<T>& b1, LocalTensor<T>& a2, LocalTensor<T>& b2, uint32_t m,
                                     uint32_t n, uint32_t k, uint32_t lda, uint32_t ldb) {
  constexpr uint32_t c0 = 32 / sizeof(T);
  const uint32_t mp = (m + 15) / 16 * 16, np = (n + 15) / 16 * 16, kp = (k + c0 - 1) / c0 * c0;
  if (m == 1) {
    DataCopy(a1, ag, Nd2NzParams(1, 1, k, 0, lda, 1, 1, 0));
  } else {
    DataCopy(a1, ag, Nd2NzParams(1, m, k, 0, lda, mp, 1, 0));
  }
  if (TRANS_B) {
    DataCopy(b1, bg, Nd2NzParams(1, n, k, 0, ldb, np, 1, 0));
  } else {
    DataCopy(b1, bg, Nd2NzParams(1, k, n, 0, ldb, kp, 1, 0));
  }
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  if (m == 1) {
    LoadData(a2, a1, LoadData2DParams(0, (kp * sizeof(T) + 511) / 512, 1, 0, 0, false, 0));
  } else {
    for (uint32_t i = 0; i < mp / 16; ++i) {
      LoadData(a2[i * kp * 16], a1[i * 16 * c0], LoadData2DParams(0, kp / c0, mp / 16, 0, 0, false, 0));
    }
  }
  if (TRANS_B) {
    LoadData(b2, b1, LoadData2DParams(0, (kp / c0) * (np / 16), 1, 0, 0, false, 0));
  } else {
    for (uint32_t i = 0; i < kp / 16; ++i) {
      LoadData(b2[i * np * 16], b1[i * 256], LoadData2DParams(0, np / 16, kp / 16, 0, 0, true, 0));
    }
  }
}

// C (m x n) = A (m x k) . B in one tile; `kMmad` is the k given to Mmad (k, or more to
// show that Nd2Nz zero-fills the D padding).
template <class T, class TC, class TL0C, bool TRANS_B>
__aicore__ inline void one_tile(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t m, uint32_t n, uint32_t k,
                                QuantMode_t q, uint32_t kMmad) {
  GlobalTensor<T> ag, bg;
  GlobalTensor<TC> cg;
  ag.SetGlobalBuffer((__gm__ T*)a, m * k);
  bg.SetGlobalBuffer((__gm__ T*)b, k * n);
  cg.SetGlobalBuffer((__gm__ TC*)c, m * n);
  LocalTensor<T> a1(TPosition::A1, 0, 16384 / sizeof(T)), b1(TPosition::B1, 65536, 16384 / sizeof(T));
  LocalTensor<T> a2(TPosition::A2, 0, 16384 / sizeof(T)), b2(TPosition::B2, 0, 16384 / sizeof(T));
  LocalTensor<TL0C> c1(TPosition::CO1, 0, 16384);
  load_operands<T, TRANS_B>(ag, bg, a1, b1, a2, b2, m, n, k, k, TRANS_B ? k : n);
  SetFlag<HardEvent::MTE1_M>(0);
  WaitFlag<HardEvent::MTE1_M>(0);
  Mmad(c1, a2, b2, MmadParams(m, n, kMmad, 0, false, true));
  SetFlag<HardEvent::M_FIX>(0);
  WaitFlag<HardEvent::M_FIX>(0);
  Fixpipe(cg, c1, FixpipeParamsV220(n, m, (m + 15) / 16 * 16, n, false, q, 0, 1, 0, 0, 0));
}

#define TILE_KERNEL(name, T, TC, TL0C, TRANS_B, Q)                                                  \
  extern "C" __global__ __aicore__ void name(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t m, int32_t n, \
                                             int32_t k, int32_t kMmad) {                            \
    one_tile<T, TC, TL0C, TRANS_B>(a, b, c, m, n, k, Q, kMmad);                                     \
  }
TILE_KERNEL(mm_f16, half, half, float, false, QuantMode_t::F322F16)
TILE_KERNEL(mm_f16_f32, half, float, float, false, QuantMode_t::NoQuant)
TILE_KERNEL(mm_bf16, bfloat16_t, bfloat16_t, float, false, QuantMode_t::F322BF16)
TILE_KERNEL(mm_f16_bt, half, half, float, true, QuantMode_t::F322F16)
TILE_KERNEL(mm_f32_bt, float, float, float, true, QuantMode_t::NoQuant)
TILE_KERNEL(mm_i8_bt, int8_t, int32_t, int32_t, true, QuantMode_t::NoQuant)

// K loop accumulating in L0C (cmatrixInitVal only on the first step), single-buffered.
extern "C" __global__ __aicore__ void mm_kloop(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t m, int32_t n, int32_t k,
                                               int32_t ks) {
  GlobalTensor<half> ag, bg, cg;
  ag.SetGlobalBuffer((__gm__ half*)a, m * k);
  bg.SetGlobalBuffer((__gm__ half*)b, k * n);
  cg.SetGlobalBuffer((__gm__ half*)c, m * n);
  LocalTensor<half> a1(TPosition::A1, 0, 8192), b1(TPosition::B1, 65536, 8192);
  LocalTensor<half> a2(TPosition::A2, 0, 8192), b2(TPosition::B2, 0, 8192);
  LocalTensor<float> c1(TPosition::CO1, 0, 16384);
  for (int32_t k0 = 0; k0 < k; k0 += ks) {
    const int32_t cur = k - k0 < ks ? k - k0 : ks;
    if (k0 > 0) WaitFlag<HardEvent::MTE1_MTE2>(0);
    if (k0 > 0) WaitFlag<HardEvent::M_MTE1>(0);
    load_operands<half, false>(ag[k0], bg[k0 * n], a1, b1, a2, b2, m, n, cur, k, n);
    SetFlag<HardEvent::MTE1_MTE2>(0);
    SetFlag<HardEvent::MTE1_M>(0);
    WaitFlag<HardEvent::MTE1_M>(0);
    if (k0 > 0) PipeBarrier<PIPE_M>();
    Mmad(c1, a2, b2, MmadParams(m, n, cur, 0, false, k0 == 0));
    SetFlag<HardEvent::M_MTE1>(0);
  }
  WaitFlag<HardEvent::MTE1_MTE2>(0);
  WaitFlag<HardEvent::M_MTE1>(0);
  SetFlag<HardEvent::M_FIX>(0);
  WaitFlag<HardEvent::M_FIX>(0);
  Fixpipe(cg, c1, FixpipeParamsV220(n, m, (m + 15) / 16 * 16, n, false, QuantMode_t::F322F16, 0, 1, 0, 0, 0));
}

// ---- violations: 16 x 16 x 16 half, a b c --------------------------------------------------
#define SETUP                                                                   \
  GlobalTensor<half> ag, bg, cg;                                                \
  ag.SetGlobalBuffer((__gm__ half*)a, 256);                                     \
  bg.SetGlobalBuffer((__gm__ half*)b, 256);                                     \
  cg.SetGlobalBuffer((__gm__ half*)c, 256);                                     \
  LocalTensor<half> a1(TPosition::A1, 0, 256), b1(TPosition::B1, 512, 256);     \
  LocalTensor<half> a2(TPosition::A2, 0, 256), b2(TPosition::B2, 0, 256);       \
  LocalTensor<float> c1(TPosition::CO1, 0, 256);
#define COPY_IN                                              \
  DataCopy(a1, ag, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0)); \
  DataCopy(b1, bg, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
#define LOAD_B LoadData(b2, b1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));
#define MMAD Mmad(c1, a2, b2, MmadParams(16, 16, 16, 0, false, true));
#define FIXPIPE Fixpipe(cg, c1, FixpipeParamsV220(16, 16, 16, 16, false, QuantMode_t::F322F16, 0, 1, 0, 0, 0));
#define KERNEL(name) extern "C" __global__ __aicore__ void name(GM_ADDR a, GM_ADDR b, GM_ADDR c)

KERNEL(no_mte2_mte1) {
  SETUP COPY_IN
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));  // VIOLATION: no_mte2_mte1
}

KERNEL(no_mte1_m) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  LOAD_B
  MMAD  // VIOLATION: no_mte1_m
}

KERNEL(no_m_fix) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  LOAD_B
  SetFlag<HardEvent::MTE1_M>(0);
  WaitFlag<HardEvent::MTE1_M>(0);
  MMAD
  FIXPIPE  // VIOLATION: no_m_fix
}

// Misplaced flag: the wait comes before the second copy, so MTE1 is not ordered after it.
KERNEL(misplaced_flag) {
  SETUP
  DataCopy(a1, ag, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  DataCopy(b1, bg, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  LOAD_B  // VIOLATION: misplaced_flag
}

// Write after read: MTE2 refills L1 while MTE1 may still be reading it (no MTE1_MTE2).
KERNEL(l1_overwrite) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  DataCopy(a1, ag, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));  // VIOLATION: l1_overwrite
}

// Accumulating Mmad right after another on a 1 x 1 fractal tile needs PipeBarrier<PIPE_M>.
KERNEL(no_m_barrier) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  LOAD_B
  SetFlag<HardEvent::MTE1_M>(0);
  WaitFlag<HardEvent::MTE1_M>(0);
  MMAD
  Mmad(c1, a2, b2, MmadParams(16, 16, 16, 0, false, false));  // VIOLATION: no_m_barrier
}

KERNEL(wait_unset) {
  SETUP
  WaitFlag<HardEvent::M_FIX>(1);  // VIOLATION: wait_unset
}

KERNEL(set_twice) {
  SETUP
  SetFlag<HardEvent::FIX_M>(2);
  SetFlag<HardEvent::FIX_M>(2);  // VIOLATION: set_twice
}

KERNEL(l1_overflow) {
  LocalTensor<half> big(TPosition::B1, 256 * 1024, 128 * 1024);  // VIOLATION: l1_overflow
}

KERNEL(l0c_overflow) {
  LocalTensor<float> acc(TPosition::CO1, 64 * 1024, 32 * 1024);  // VIOLATION: l0c_overflow
}

// Two fractals into an L0A tensor of one fractal: an overflow into the neighbouring buffer.
KERNEL(l0a_overflow) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 2, 0, 0, 0, false, 0));  // VIOLATION: l0a_overflow
}

KERNEL(transpose_b32) {
  LocalTensor<float> f1(TPosition::B1, 0, 128), f2(TPosition::B2, 0, 128);
  LoadData(f2, f1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));  // VIOLATION: transpose_b32
}

KERNEL(fixpipe_quant) {
  SETUP COPY_IN
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData(a2, a1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
  LOAD_B
  SetFlag<HardEvent::MTE1_M>(0);
  WaitFlag<HardEvent::MTE1_M>(0);
  MMAD
  SetFlag<HardEvent::M_FIX>(0);
  WaitFlag<HardEvent::M_FIX>(0);
  Fixpipe(cg, c1, FixpipeParamsV220(16, 16, 16, 16, false));  // VIOLATION: fixpipe_quant
}

KERNEL(vector_on_l1) {
  SETUP
  Adds(a1, a1, (half)1, 16);  // VIOLATION: vector_on_l1
}
