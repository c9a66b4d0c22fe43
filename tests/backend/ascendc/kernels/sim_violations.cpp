// One kernel per kind of AscendC rule that real hardware breaks silently. Each offending call
// carries a `VIOLATION: <kernel>` comment; the tests look the line up by that marker and
// check that ascend-sim reports the API and exactly that line.
#include "kernel_operator.h"
using namespace AscendC;

// Shared prologue: x holds n floats (n >= 64), one queue of two 256-byte buffers.
#define PROLOGUE                                      \
  TPipe pipe;                                         \
  TQue<QuePosition::VECIN, 2> q;                      \
  pipe.InitBuffer(q, 2, 256);                         \
  GlobalTensor<float> xg;                             \
  xg.SetGlobalBuffer((__gm__ float*)x, n);

extern "C" __global__ __aicore__ void unaligned_count(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopy(a, xg, 7);  // VIOLATION: unaligned_count
  q.FreeTensor(a);
}

extern "C" __global__ __aicore__ void unaligned_ub(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopy(a[2], xg, 8);  // VIOLATION: unaligned_ub
  q.FreeTensor(a);
}

extern "C" __global__ __aicore__ void compare_tail(GM_ADDR x, int32_t n) {
  PROLOGUE
  TBuf<TPosition::VECCALC> m;
  pipe.InitBuffer(m, 32);
  LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
  DataCopy(a, xg, 64);
  DataCopy(b, xg, 64);
  LocalTensor<uint8_t> mask = m.Get<uint8_t>();
  Compare(mask, a, b, CMPMODE::LT, 40);  // VIOLATION: compare_tail
  q.FreeTensor(a);
  q.FreeTensor(b);
}

extern "C" __global__ __aicore__ void ub_oversubscribed(GM_ADDR x, int32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> q1;
  TQue<QuePosition::VECOUT, 2> q2;
  pipe.InitBuffer(q1, 2, 64 * 1024);
  pipe.InitBuffer(q2, 2, 30 * 1024);  // VIOLATION: ub_oversubscribed
}

extern "C" __global__ __aicore__ void too_many_buffers(GM_ADDR x, int32_t n) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> bufs[65];
  for (int i = 0; i < 65; ++i) {
    pipe.InitBuffer(bufs[i], 32);  // VIOLATION: too_many_buffers
  }
}

extern "C" __global__ __aicore__ void unbalanced_queue(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();  // VIOLATION: unbalanced_queue
  DataCopy(a, xg, 64);
}

extern "C" __global__ __aicore__ void deque_empty(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopy(a, xg, 64);
  LocalTensor<float> b = q.DeQue<float>();  // VIOLATION: deque_empty
  q.FreeTensor(a);
  q.FreeTensor(b);
}

extern "C" __global__ __aicore__ void double_free(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  q.FreeTensor(a);
  q.FreeTensor(a);  // VIOLATION: double_free
}

extern "C" __global__ __aicore__ void gm_out_of_bounds(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopy(a, xg[n - 8], 16);  // VIOLATION: gm_out_of_bounds
  q.FreeTensor(a);
}

extern "C" __global__ __aicore__ void gm_past_argument(GM_ADDR x, int32_t n) {
  GlobalTensor<float> xg;
  xg.SetGlobalBuffer((__gm__ float*)x, n + 8);  // VIOLATION: gm_past_argument
}

extern "C" __global__ __aicore__ void cast_mode(GM_ADDR x, int32_t n) {
  PROLOGUE
  TQue<QuePosition::VECOUT, 1> qo;
  pipe.InitBuffer(qo, 1, 256);
  LocalTensor<float> a = q.AllocTensor<float>();
  LocalTensor<int32_t> b = qo.AllocTensor<int32_t>();
  DataCopy(a, xg, 64);
  Cast(b, a, RoundMode::CAST_NONE, 64);  // VIOLATION: cast_mode
  q.FreeTensor(a);
  qo.FreeTensor(b);
}

extern "C" __global__ __aicore__ void foreign_enque(GM_ADDR x, int32_t n) {
  PROLOGUE
  TQue<QuePosition::VECOUT, 2> other;
  pipe.InitBuffer(other, 2, 256);
  LocalTensor<float> a = q.AllocTensor<float>();
  other.EnQue(a);  // VIOLATION: foreign_enque
}

extern "C" __global__ __aicore__ void alloc_exhausted(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
  LocalTensor<float> c = q.AllocTensor<float>();  // VIOLATION: alloc_exhausted
  q.FreeTensor(a);
  q.FreeTensor(b);
  q.FreeTensor(c);
}

extern "C" __global__ __aicore__ void use_after_free(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopy(a, xg, 64);
  q.FreeTensor(a);
  Adds(a, a, 1.0f, 64);  // VIOLATION: use_after_free
}

extern "C" __global__ __aicore__ void enque_over_depth(GM_ADDR x, int32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  pipe.InitBuffer(q, 2, 256);
  LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
  q.EnQue(a);
  q.EnQue(b);  // VIOLATION: enque_over_depth
}

// Every block writes the first 64 floats: a race on hardware.
extern "C" __global__ __aicore__ void write_race(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  Duplicate(a, static_cast<float>(GetBlockIdx()), 64);
  DataCopy(xg, a, 64);  // VIOLATION: write_race
  q.FreeTensor(a);
}

extern "C" __global__ __aicore__ void pad_block_count(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  DataCopyPad(a, xg, DataCopyExtParams{4096, 4, 0, 0, 0}, DataCopyPadExtParams<float>{});  // VIOLATION: pad_block_count
  q.FreeTensor(a);
}

extern "C" __global__ __aicore__ void free_enqueued(GM_ADDR x, int32_t n) {
  PROLOGUE
  LocalTensor<float> a = q.AllocTensor<float>();
  q.EnQue(a);
  q.FreeTensor(a);  // VIOLATION: free_enqueued
}

extern "C" __global__ __aicore__ void second_pipe(GM_ADDR x, int32_t n) {
  TPipe pipe;
  TPipe other;  // VIOLATION: second_pipe
}

extern "C" __global__ __aicore__ void gm_scalar_out_of_bounds(GM_ADDR x, int32_t n) {
  GlobalTensor<float> xg;
  xg.SetGlobalBuffer((__gm__ float*)x, n);
  xg.SetValue(n, 1.0f);  // VIOLATION: gm_scalar_out_of_bounds
}

extern "C" __global__ __aicore__ void never_initialised(GM_ADDR x, int32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  LocalTensor<float> a = q.AllocTensor<float>();  // VIOLATION: never_initialised
}

extern "C" __global__ __aicore__ void gather_past_buffer(GM_ADDR x, int32_t n) {
  PROLOGUE
  TBuf<TPosition::VECCALC> t;
  pipe.InitBuffer(t, 256);
  LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
  LocalTensor<int32_t> idx = t.Get<int32_t>();
  CreateVecIndex(idx, static_cast<int32_t>(0), 64);
  Muls(idx, idx, static_cast<int32_t>(4), 64);
  // a stencil window shifted by one element reads one element past the 256-byte source
  Gather(b, a, idx.ReinterpretCast<uint32_t>(), static_cast<uint32_t>(4), 64);  // VIOLATION: gather_past_buffer
  q.FreeTensor(a);
  q.FreeTensor(b);
}

extern "C" __global__ __aicore__ void gather_unaligned(GM_ADDR x, int32_t n) {
  PROLOGUE
  TBuf<TPosition::VECCALC> t;
  pipe.InitBuffer(t, 256);
  LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
  LocalTensor<int32_t> idx = t.Get<int32_t>();
  CreateVecIndex(idx, static_cast<int32_t>(0), 64);
  Gather(b, a, idx.ReinterpretCast<uint32_t>(), static_cast<uint32_t>(0), 64);  // VIOLATION: gather_unaligned
  q.FreeTensor(a);
  q.FreeTensor(b);
}

extern "C" __global__ __aicore__ void gather_repeats(GM_ADDR x, int32_t n) {
  PROLOGUE
  TBuf<TPosition::VECCALC> t;
  pipe.InitBuffer(t, 2 * 16384 * 4);
  LocalTensor<float> a = q.AllocTensor<float>();
  LocalTensor<float> dst = t.Get<float>();
  LocalTensor<uint32_t> idx = t.Get<uint32_t>()[16384];
  // 16384 float32 elements are 256 repeats of 64: the uint8_t repeat count wraps to 0
  Gather(dst, a, idx, static_cast<uint32_t>(0), 16384);  // VIOLATION: gather_repeats
  q.FreeTensor(a);
}
