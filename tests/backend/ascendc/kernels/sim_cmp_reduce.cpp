// Hand-written AscendC kernels for Compare/Select, per-row reductions and DataCopyPad
// padding, in the shape the pyasc code generator emits. See sim_elementwise.cpp.
#include "kernel_operator.h"
using namespace AscendC;

// out = a > b ? a : b, and clipped = a > b ? a : lo (scalar src1); n*sizeof(float) % 256 == 0.
extern "C" __global__ __aicore__ void where_gt(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR clipped, int32_t n, float lo) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> qin;
  TQue<QuePosition::VECOUT, 2> qout;
  TBuf<TPosition::VECCALC> maskbuf;
  pipe.InitBuffer(qin, 2, n * sizeof(float));
  pipe.InitBuffer(qout, 2, n * sizeof(float));
  pipe.InitBuffer(maskbuf, n / 8);
  GlobalTensor<float> ag, bg, og, cg;
  ag.SetGlobalBuffer((__gm__ float*)a, n);
  bg.SetGlobalBuffer((__gm__ float*)b, n);
  og.SetGlobalBuffer((__gm__ float*)out, n);
  cg.SetGlobalBuffer((__gm__ float*)clipped, n);
  LocalTensor<float> la = qin.AllocTensor<float>(), lb = qin.AllocTensor<float>();
  DataCopy(la, ag, n);
  DataCopy(lb, bg, n);
  qin.EnQue(la);
  qin.EnQue(lb);
  la = qin.DeQue<float>();
  lb = qin.DeQue<float>();
  LocalTensor<uint8_t> mask = maskbuf.Get<uint8_t>();
  Compare(mask, la, lb, CMPMODE::GT, n);
  LocalTensor<float> lo_t = qout.AllocTensor<float>(), lc = qout.AllocTensor<float>();
  Select(lo_t, mask, la, lb, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
  Select(lc, mask, la, lo, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
  qout.EnQue(lo_t);
  qout.EnQue(lc);
  qin.FreeTensor(la);
  qin.FreeTensor(lb);
  lo_t = qout.DeQue<float>();
  lc = qout.DeQue<float>();
  DataCopy(og, lo_t, n);
  DataCopy(cg, lc, n);
  qout.FreeTensor(lo_t);
  qout.FreeTensor(lc);
}

// Compare modes as a 0/1 float vector: out[i] = cmp(a[i], b[i]) (mode = CMPMODE value).
extern "C" __global__ __aicore__ void compare_mode(GM_ADDR a, GM_ADDR b, GM_ADDR out, int32_t n, int32_t mode) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 3 * n * sizeof(float) + n / 8);
  LocalTensor<float> la = buf.Get<float>(), lb = la[n], lo = la[2 * n];
  LocalTensor<uint8_t> mask = la[3 * n].ReinterpretCast<uint8_t>();
  GlobalTensor<float> ag, bg, og;
  ag.SetGlobalBuffer((__gm__ float*)a, n);
  bg.SetGlobalBuffer((__gm__ float*)b, n);
  og.SetGlobalBuffer((__gm__ float*)out, n);
  DataCopy(la, ag, n);
  DataCopy(lb, bg, n);
  Compare(mask, la, lb, static_cast<CMPMODE>(mode), n);
  Duplicate(lb, 0.0f, n);
  Select(lo, mask, lb, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);  // bit 1 -> lb (0), else 1
  Muls(lo, lo, -1.0f, n);
  Adds(lo, lo, 1.0f, n);                                            // 1 where the bit is set
  DataCopy(og, lo, n);
}

// Per-row reductions of a (rows x cols) float matrix with any cols: each row arrives through
// DataCopyPad; sums/maxs/mins/argmax are gathered in UB and written with one DataCopyPad each.
extern "C" __global__ __aicore__ void row_reduce(GM_ADDR x, GM_ADDR sums, GM_ADDR maxs, GM_ADDR mins, GM_ADDR argmax,
                                                 int32_t rows, int32_t cols) {
  const int32_t row_bytes = (cols * 4 + 31) / 32 * 32;
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> qrow;
  TBuf<TPosition::VECCALC> work, outs, extreme;
  pipe.InitBuffer(qrow, 2, row_bytes);
  pipe.InitBuffer(work, row_bytes + 512);  // >= the ReduceMax sharedTmpBuffer formula for cols <= 8192
  pipe.InitBuffer(extreme, 32);
  const int32_t out_bytes = (rows * 4 + 31) / 32 * 32;
  pipe.InitBuffer(outs, 4 * out_bytes);
  LocalTensor<float> s_l = outs.Get<float>(), mx_l = s_l[out_bytes / 4], mn_l = s_l[2 * out_bytes / 4];
  LocalTensor<int32_t> am_l = s_l[3 * out_bytes / 4].ReinterpretCast<int32_t>();
  LocalTensor<float> w = work.Get<float>(), e = extreme.Get<float>();
  GlobalTensor<float> xg;
  xg.SetGlobalBuffer((__gm__ float*)x, rows * cols);
  for (int32_t r = 0; r < rows; ++r) {
    LocalTensor<float> row = qrow.AllocTensor<float>();
    DataCopyPad(row, xg[r * cols], DataCopyExtParams{1, static_cast<uint32_t>(cols * 4), 0, 0, 0},
                DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
    qrow.EnQue(row);
    row = qrow.DeQue<float>();
    ReduceSum(s_l[r], row, w, cols);
    ReduceMin(mn_l[r], row, w, cols);
    ReduceMax(e, row, w, cols, true);
    mx_l.SetValue(r, e.GetValue(0));
    am_l.SetValue(r, e.ReinterpretCast<int32_t>().GetValue(1));
    qrow.FreeTensor(row);
  }
  const DataCopyExtParams out_p{1, static_cast<uint32_t>(rows * 4), 0, 0, 0};
  GlobalTensor<float> sg, mxg, mng;
  GlobalTensor<int32_t> amg;
  sg.SetGlobalBuffer((__gm__ float*)sums, rows);
  mxg.SetGlobalBuffer((__gm__ float*)maxs, rows);
  mng.SetGlobalBuffer((__gm__ float*)mins, rows);
  amg.SetGlobalBuffer((__gm__ int32_t*)argmax, rows);
  DataCopyPad(sg, s_l, out_p);
  DataCopyPad(mxg, mx_l, out_p);
  DataCopyPad(mng, mn_l, out_p);
  DataCopyPad(amg, am_l, out_p);
}

// Sum of n halves (any n) into out[0]: ReduceSum rounds to half at every addition.
extern "C" __global__ __aicore__ void sum_f16(GM_ADDR x, GM_ADDR out, int32_t n) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf, res;
  pipe.InitBuffer(buf, n * sizeof(half));
  pipe.InitBuffer(res, 32);
  GlobalTensor<half> xg, og;
  xg.SetGlobalBuffer((__gm__ half*)x, n);
  og.SetGlobalBuffer((__gm__ half*)out, 1);
  LocalTensor<half> t = buf.Get<half>(), r = res.Get<half>();
  DataCopyPad(t, xg, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(half)), 0, 0, 0},
              DataCopyPadExtParams<half>{false, 0, 0, half(0)});
  ReduceSum(r, t, t, n);
  DataCopyPad(og, r, DataCopyExtParams{1, sizeof(half), 0, 0, 0});
}

// A (rows x cols) float matrix through DataCopyPad with padding: every UB row of
// `ub_cols` floats holds [left pads][cols values][right pads][dummy]; the whole UB image is
// copied back so the test can check the documented padding layout. src/dst strides used.
extern "C" __global__ __aicore__ void pad_image(GM_ADDR x, GM_ADDR img, int32_t rows, int32_t cols, int32_t src_gap,
                                                int32_t left, int32_t right, int32_t is_pad, float value,
                                                int32_t dst_gap_blocks) {
  const int32_t ub_cols = ((left + cols + right) * 4 + 31) / 32 * 8 + dst_gap_blocks * 8;
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, rows * ub_cols * 4);
  LocalTensor<float> t = buf.Get<float>();
  Duplicate(t, -7.0f, rows * ub_cols);  // make the gaps recognisable
  GlobalTensor<float> xg, ig;
  xg.SetGlobalBuffer((__gm__ float*)x);
  ig.SetGlobalBuffer((__gm__ float*)img, rows * ub_cols);
  DataCopyPad(t, xg,
              DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * 4),
                                static_cast<uint32_t>(src_gap * 4), static_cast<uint32_t>(dst_gap_blocks), 0},
              DataCopyPadExtParams<float>{is_pad != 0, static_cast<uint8_t>(left), static_cast<uint8_t>(right), value});
  DataCopy(ig, t, rows * ub_cols);
}

// UB->GM DataCopyPad with strides: rows of `cols` floats stored 32-byte padded in UB
// (plus src_gap_blocks) are scattered to GM rows `cols + dst_gap` floats apart.
extern "C" __global__ __aicore__ void pad_scatter(GM_ADDR x, GM_ADDR y, int32_t rows, int32_t cols,
                                                  int32_t src_gap_blocks, int32_t dst_gap) {
  const int32_t ub_cols = (cols * 4 + 31) / 32 * 8 + src_gap_blocks * 8;
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, rows * ub_cols * 4);
  LocalTensor<float> t = buf.Get<float>();
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x, rows * ub_cols);
  yg.SetGlobalBuffer((__gm__ float*)y);
  DataCopy(t, xg, rows * ub_cols);
  DataCopyPad(yg, t, DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * 4),
                                       static_cast<uint32_t>(src_gap_blocks), static_cast<uint32_t>(dst_gap * 4), 0});
}

// Strided block copies: `rows` GM rows of `blocks` 32-byte blocks, `src_gap` blocks apart,
// gathered densely into UB (DataCopyParams), copied UB->UB, written `dst_gap` blocks apart.
extern "C" __global__ __aicore__ void strided_copy(GM_ADDR x, GM_ADDR y, int32_t rows, int32_t blocks, int32_t src_gap,
                                                   int32_t dst_gap) {
  const int32_t n = rows * blocks * 8;
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 2 * n * sizeof(float));
  LocalTensor<float> a = buf.Get<float>(n), b = buf.GetWithOffset<float>(n, n * sizeof(float));
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x);
  yg.SetGlobalBuffer((__gm__ float*)y);
  DataCopy(a, xg, DataCopyParams(rows, blocks, src_gap, 0));
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  DataCopy(b, a, n);
  PipeBarrier<PIPE_V>();
  DataCopy(yg, b, DataCopyParams(rows, blocks, 0, dst_gap));
}

// Scalar code (what the generator emits for data-dependent loops): out[i] = x[idx[i]].
extern "C" __global__ __aicore__ void scalar_gather(GM_ADDR x, GM_ADDR idx, GM_ADDR out, int32_t n) {
  GlobalTensor<float> xg, og;
  GlobalTensor<int32_t> ig;
  xg.SetGlobalBuffer((__gm__ float*)x);
  ig.SetGlobalBuffer((__gm__ int32_t*)idx, n);
  og.SetGlobalBuffer((__gm__ float*)out, n);
  for (int32_t i = 0; i < n; ++i) {
    og.SetValue(i, xg.GetValue(ig.GetValue(i)));  // GATHER_READ
  }
  DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(og);  // scalar writes to GM
}

// The class style of the CANN samples: pipe and queues are members of a kernel object.
// y = sigmoid(x) in half, arg[0] = argmax(x) read from ReduceMax's uint16_t index bits.
class KernelSigmoidArgmax {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR arg, int32_t n) {
    n_ = n;
    xg_.SetGlobalBuffer((__gm__ half*)x, n);
    yg_.SetGlobalBuffer((__gm__ half*)y, n);
    ag_.SetGlobalBuffer((__gm__ int32_t*)arg, 1);
    pipe_.InitBuffer(qin_, 1, n * sizeof(half));
    pipe_.InitBuffer(qout_, 1, n * sizeof(half));
    pipe_.InitBuffer(tmp_, 1024);
    pipe_.InitBuffer(work_, n * sizeof(half));
  }
  __aicore__ inline void Process() {
    LocalTensor<half> in = qin_.AllocTensor<half>();
    DataCopy(in, xg_, n_);
    qin_.EnQue(in);
    in = qin_.DeQue<half>();
    LocalTensor<half> out = qout_.AllocTensor<half>();
    Sigmoid(out, in, tmp_.Get<uint8_t>(), n_);
    LocalTensor<half> w = work_.Get<half>();
    ReduceMax(w, in, w, n_, true);
    SetFlag<HardEvent::V_S>(EVENT_ID1);
    WaitFlag<HardEvent::V_S>(EVENT_ID1);
    ag_.SetValue(0, w.ReinterpretCast<uint16_t>().GetValue(1));
    DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE>(ag_);
    qout_.EnQue(out);
    qin_.FreeTensor(in);
    out = qout_.DeQue<half>();
    DataCopy(yg_, out, n_);
    qout_.FreeTensor(out);
  }

 private:
  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> qin_;
  TQue<QuePosition::VECOUT, 1> qout_;
  TBuf<TPosition::VECCALC> tmp_, work_;
  GlobalTensor<half> xg_, yg_;
  GlobalTensor<int32_t> ag_;
  int32_t n_ = 0;
};

extern "C" __global__ __aicore__ void sigmoid_argmax_f16(GM_ADDR x, GM_ADDR y, GM_ADDR arg, int32_t n) {
  KernelSigmoidArgmax op;
  op.Init(x, y, arg, n);
  op.Process();
}
