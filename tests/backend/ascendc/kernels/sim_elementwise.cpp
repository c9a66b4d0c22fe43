// Hand-written AscendC kernels in the shape the pyasc code generator emits (reference §1.1):
// extern "C" __global__ __aicore__ entry points, GM_ADDR pointers plus by-value tiling
// scalars, TPipe + TQue double buffering, DataCopy for whole 32-byte tiles and DataCopyPad
// for tails. Compiled against ascend-sim by tests/backend/ascendc/test_sim_*.py.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

// z = x + y over `total` floats, split across blocks in 32-byte-aligned chunks, tiles of
// `tile` floats (a multiple of 8), the last partial tile moved with DataCopyPad.
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, int32_t total, int32_t tile) {
  const int32_t per_block = (total + GetBlockNum() * 8 - 1) / (GetBlockNum() * 8) * 8;
  const int32_t start = per_block * GetBlockIdx();
  const int32_t len = total - start < per_block ? total - start : per_block;
  if (len <= 0) return;
  TPipe pipe;
  TQue<QuePosition::VECIN, BUFFER_NUM> qx, qy;
  TQue<QuePosition::VECOUT, BUFFER_NUM> qz;
  GlobalTensor<float> xg, yg, zg;
  xg.SetGlobalBuffer((__gm__ float*)x + start, len);
  yg.SetGlobalBuffer((__gm__ float*)y + start, len);
  zg.SetGlobalBuffer((__gm__ float*)z + start, len);
  pipe.InitBuffer(qx, BUFFER_NUM, tile * sizeof(float));
  pipe.InitBuffer(qy, BUFFER_NUM, tile * sizeof(float));
  pipe.InitBuffer(qz, BUFFER_NUM, tile * sizeof(float));
  for (int32_t off = 0; off < len; off += tile) {
    const int32_t n = len - off < tile ? len - off : tile;
    const DataCopyExtParams part{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0};
    const DataCopyPadExtParams<float> nopad{false, 0, 0, 0.0f};
    LocalTensor<float> a = qx.AllocTensor<float>();
    LocalTensor<float> b = qy.AllocTensor<float>();
    if (n == tile) {
      DataCopy(a, xg[off], n);
      DataCopy(b, yg[off], n);
    } else {
      DataCopyPad(a, xg[off], part, nopad);
      DataCopyPad(b, yg[off], part, nopad);
    }
    qx.EnQue(a);
    qy.EnQue(b);
    a = qx.DeQue<float>();
    b = qy.DeQue<float>();
    LocalTensor<float> c = qz.AllocTensor<float>();
    Add(c, a, b, n);
    qz.EnQue<float>(c);
    qx.FreeTensor(a);
    qy.FreeTensor(b);
    c = qz.DeQue<float>();
    if (n == tile) DataCopy(zg[off], c, n);
    else DataCopyPad(zg[off], c, part);
    qz.FreeTensor(c);
  }
}

// One single-block elementwise helper: out = f(in...) for n elements (n*sizeof(T) % 32 == 0).
template <typename T, int kIn, typename F>
__aicore__ inline void run_map(GM_ADDR* ins, GM_ADDR out, int32_t n, F f) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qin;
  TQue<QuePosition::VECOUT, 1> qout;
  pipe.InitBuffer(qin, kIn, n * sizeof(T));
  pipe.InitBuffer(qout, 1, n * sizeof(T));
  LocalTensor<T> src[kIn];
  for (int k = 0; k < kIn; ++k) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)ins[k], n);
    src[k] = qin.AllocTensor<T>();
    DataCopy(src[k], g, n);
  }
  LocalTensor<T> dst = qout.AllocTensor<T>();
  f(dst, src, n);
  GlobalTensor<T> og;
  og.SetGlobalBuffer((__gm__ T*)out, n);
  DataCopy(og, dst, n);
  qout.FreeTensor(dst);
  for (int k = 0; k < kIn; ++k) qin.FreeTensor(src[k]);
}

#define BINARY_KERNEL(NAME, T, API)                                                       \
  extern "C" __global__ __aicore__ void NAME(GM_ADDR a, GM_ADDR b, GM_ADDR out, int32_t n) { \
    GM_ADDR ins[2] = {a, b};                                                              \
    run_map<T, 2>(ins, out, n, [](LocalTensor<T>& d, LocalTensor<T>* s, int32_t c) { API(d, s[0], s[1], c); }); \
  }
BINARY_KERNEL(add_f16, half, Add)
BINARY_KERNEL(sub_f16, half, Sub)
BINARY_KERNEL(mul_f16, half, Mul)
BINARY_KERNEL(div_f16, half, Div)
BINARY_KERNEL(max_f16, half, Max)
BINARY_KERNEL(min_f16, half, Min)
BINARY_KERNEL(div_f32, float, Div)
BINARY_KERNEL(add_i32, int32_t, Add)
BINARY_KERNEL(mul_i16, int16_t, Mul)

#define UNARY_KERNEL(NAME, T, API)                                                        \
  extern "C" __global__ __aicore__ void NAME(GM_ADDR a, GM_ADDR out, int32_t n) {         \
    GM_ADDR ins[1] = {a};                                                                 \
    run_map<T, 1>(ins, out, n, [](LocalTensor<T>& d, LocalTensor<T>* s, int32_t c) { API(d, s[0], c); }); \
  }
UNARY_KERNEL(exp_f32, float, Exp)
UNARY_KERNEL(ln_f32, float, Ln)
UNARY_KERNEL(sqrt_f32, float, Sqrt)
UNARY_KERNEL(rsqrt_f32, float, Rsqrt)
UNARY_KERNEL(recip_f32, float, Reciprocal)
UNARY_KERNEL(relu_f32, float, Relu)
UNARY_KERNEL(abs_f32, float, Abs)
UNARY_KERNEL(sigmoid_f32, float, Sigmoid)
UNARY_KERNEL(exp_f16, half, Exp)
UNARY_KERNEL(sqrt_f16, half, Sqrt)
UNARY_KERNEL(relu_i32, int32_t, Relu)

#define SCALAR_KERNEL(NAME, T, API)                                                        \
  extern "C" __global__ __aicore__ void NAME(GM_ADDR a, GM_ADDR out, int32_t n, T s) {     \
    GM_ADDR ins[1] = {a};                                                                  \
    run_map<T, 1>(ins, out, n, [s](LocalTensor<T>& d, LocalTensor<T>* src, int32_t c) { API(d, src[0], s, c); }); \
  }
SCALAR_KERNEL(adds_f32, float, Adds)
SCALAR_KERNEL(muls_f32, float, Muls)
SCALAR_KERNEL(maxs_f32, float, Maxs)
SCALAR_KERNEL(mins_f32, float, Mins)
SCALAR_KERNEL(adds_f16, half, Adds)
SCALAR_KERNEL(muls_i32, int32_t, Muls)

// out[i] = value, for any n (Duplicate on a padded UB tile, DataCopyPad out).
template <typename T>
__aicore__ inline void fill_body(GM_ADDR out, int32_t n, T value) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, n * sizeof(T));
  LocalTensor<T> t = buf.Get<T>();
  Duplicate(t, value, n);
  GlobalTensor<T> og;
  og.SetGlobalBuffer((__gm__ T*)out, n);
  DataCopyPad(og, t, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0});
}
extern "C" __global__ __aicore__ void fill_f32(GM_ADDR out, int32_t n, float v) { fill_body<float>(out, n, v); }
extern "C" __global__ __aicore__ void fill_f16(GM_ADDR out, int32_t n, half v) { fill_body<half>(out, n, v); }
extern "C" __global__ __aicore__ void fill_bf16(GM_ADDR out, int32_t n, bfloat16_t v) { fill_body<bfloat16_t>(out, n, v); }
extern "C" __global__ __aicore__ void fill_i32(GM_ADDR out, int32_t n, int32_t v) { fill_body<int32_t>(out, n, v); }

// bf16 has no vector arithmetic on dav-c220: widen with Cast, compute in float, narrow.
// out = bf16(a * alpha + b)
extern "C" __global__ __aicore__ void axpy_bf16(GM_ADDR a, GM_ADDR b, GM_ADDR out, int32_t n, float alpha) {
  TPipe pipe;
  TQue<QuePosition::VECIN, BUFFER_NUM> qin;
  TQue<QuePosition::VECOUT, 1> qout;
  TBuf<TPosition::VECCALC> wide;
  pipe.InitBuffer(qin, BUFFER_NUM, n * sizeof(bfloat16_t));
  pipe.InitBuffer(qout, 1, n * sizeof(bfloat16_t));
  pipe.InitBuffer(wide, 2 * n * sizeof(float));
  GlobalTensor<bfloat16_t> ag, bg, og;
  ag.SetGlobalBuffer((__gm__ bfloat16_t*)a, n);
  bg.SetGlobalBuffer((__gm__ bfloat16_t*)b, n);
  og.SetGlobalBuffer((__gm__ bfloat16_t*)out, n);
  LocalTensor<bfloat16_t> la = qin.AllocTensor<bfloat16_t>(), lb = qin.AllocTensor<bfloat16_t>();
  DataCopy(la, ag, n);
  DataCopy(lb, bg, n);
  qin.EnQue(la);
  qin.EnQue(lb);
  la = qin.DeQue<bfloat16_t>();
  lb = qin.DeQue<bfloat16_t>();
  LocalTensor<float> fa = wide.Get<float>(), fb = fa[n];
  Cast(fa, la, RoundMode::CAST_NONE, n);
  Cast(fb, lb, RoundMode::CAST_NONE, n);
  Muls(fa, fa, alpha, n);
  Add(fa, fa, fb, n);
  LocalTensor<bfloat16_t> lo = qout.AllocTensor<bfloat16_t>();
  Cast(lo, fa, RoundMode::CAST_RINT, n);
  DataCopy(og, lo, n);
  qout.FreeTensor(lo);
  qin.FreeTensor(la);
  qin.FreeTensor(lb);
}

// Cast n elements of S to D with a runtime RoundMode; any n (DataCopyPad both ways).
template <typename D, typename S>
__aicore__ inline void cast_body(GM_ADDR x, GM_ADDR y, int32_t n, int32_t mode) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> bs, bd;
  pipe.InitBuffer(bs, n * sizeof(S));
  pipe.InitBuffer(bd, n * sizeof(D));
  GlobalTensor<S> xg;
  GlobalTensor<D> yg;
  xg.SetGlobalBuffer((__gm__ S*)x, n);
  yg.SetGlobalBuffer((__gm__ D*)y, n);
  LocalTensor<S> s = bs.Get<S>();
  LocalTensor<D> d = bd.Get<D>();
  DataCopyPad(s, xg, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(S)), 0, 0, 0},
              DataCopyPadExtParams<S>{false, 0, 0, S(0)});
  Cast(d, s, static_cast<RoundMode>(mode), n);  // CAST_CALL
  DataCopyPad(yg, d, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(D)), 0, 0, 0});
}
#define CAST_KERNEL(NAME, D, S) \
  extern "C" __global__ __aicore__ void NAME(GM_ADDR x, GM_ADDR y, int32_t n, int32_t mode) { cast_body<D, S>(x, y, n, mode); }
CAST_KERNEL(cast_f32_f16, half, float)
CAST_KERNEL(cast_f16_f32, float, half)
CAST_KERNEL(cast_f32_bf16, bfloat16_t, float)
CAST_KERNEL(cast_bf16_f32, float, bfloat16_t)
CAST_KERNEL(cast_f32_i32, int32_t, float)
CAST_KERNEL(cast_f16_i32, int32_t, half)
CAST_KERNEL(cast_i32_f32, float, int32_t)
CAST_KERNEL(cast_f32_f32, float, float)
CAST_KERNEL(cast_i64_f32, float, int64_t)
