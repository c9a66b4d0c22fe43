// ascend-sim: the cube path of dav-c220 (910B): GM -> L1 (DataCopy with Nd2NzParams),
// L1 -> L0A/L0B (LoadData 2D), Mmad into L0C, L0C -> GM (Fixpipe, NZ -> ND).
//
// Layouts (shared/ascendc-cube-reference.md section 2): with C0 = 32 / sizeof(T) and
// fractals of 16 x C0 elements (512 bytes), L1 holds NZ, L0A holds Zz (M1, K1, M0, K0), L0B
// holds Zn (K1, N1, N0, K0) and L0C holds Nz (N1, M1, 16, 16) of fp32/int32 with an M
// stride of ceil(m/16)*16. Mmad with m == 1 is a GEMV: it reads L0A as an ND row. Every
// call is an operation of its pipe (MTE2, MTE1, M, FIX) whose L1/L0 accesses are checked
// for ordering (sim_sync.h); operands must lie inside their tensors (no overflow).
#pragma once

#include <algorithm>

#include "sim_sync.h"

enum QuantMode_t : uint8_t {  // supplied by the compiler on bisheng; spelled QuantMode_t::X
  NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8,
};

enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE,
  KERNEL_TYPE_MIX_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX,
};
#define KERNEL_TASK_TYPE_DEFAULT(value) (void)(value)

namespace AscendC {

inline void InitSocState() {}

struct Nd2NzParams {
  Nd2NzParams() {}
  Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
              const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
              const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
      : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
        srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
        dstNzMatrixStride(dstNzMatrixStrideIn) {}
  uint16_t ndNum = 0;
  uint16_t nValue = 0;
  uint16_t dValue = 0;
  uint16_t srcNdMatrixStride = 0;
  uint16_t srcDValue = 0;
  uint16_t dstNzC0Stride = 0;
  uint16_t dstNzNStride = 0;
  uint16_t dstNzMatrixStride = 0;
};

// The members are declared in another order than the constructor takes them, as in CANN.
struct LoadData2DParams {
  LoadData2DParams() {}
  LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                   const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn,
                   const uint8_t addrModeIn)
      : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
        repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
  uint16_t startIndex = 0;
  uint16_t dstGap = 0;
  uint16_t srcStride = 0;
  bool ifTranspose = 0;
  uint8_t repeatTimes = 0;
  uint8_t sid = 0;
  uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct MmadParams {
  MmadParams() {}
  MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn,
             const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
      : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
        enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
  MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
             const bool cmatrixSourceIn, const bool cmatrixInitValIn)
      : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
        cmatrixInitVal(cmatrixInitValIn) {}
  uint16_t m = 0;
  uint16_t n = 0;
  uint16_t k = 0;
  bool isBias = false;
  int32_t fmOffset = 0;
  bool enSsparse = false;
  bool enWinogradA = false;
  bool enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false;
  bool cmatrixSource = false;
  bool cmatrixInitVal = true;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
  CO2Layout format;
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
inline constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
  FixpipeParamsV220() {}
  FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                    const uint32_t dstStrideIn, const bool reluEnIn)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
  FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                    const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                    const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                    const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
        deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
        dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn) {}
  uint16_t nSize = 0;
  uint16_t mSize = 0;
  uint16_t srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint64_t deqScalar;
  uint16_t ndNum = 1;
  uint16_t srcNdStride = 0;
  uint16_t dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};

}  // namespace AscendC

namespace pyasc_sim {

inline void check_range(uint32_t v, uint32_t lo, uint32_t hi, const char* field, const char* api,
                        const SrcLoc& loc) {
  if (v < lo || v > hi) fail(api, loc, fmt("%s = %u is outside its range [%u, %u]", field, v, lo, hi));
}

inline void check_nd2nz(const AscendC::Nd2NzParams& p, uint32_t c0, const char* api, const SrcLoc& loc) {
  check_range(p.ndNum, 0, 4095, "ndNum", api, loc);
  check_range(p.nValue, 0, 16384, "nValue", api, loc);
  check_range(p.srcDValue, 1, 65535, "srcDValue", api, loc);
  check_range(p.dstNzC0Stride, 1, 16384, "dstNzC0Stride", api, loc);
  check_range(p.dstNzNStride, 1, 16384, "dstNzNStride", api, loc);
  check_range(p.dstNzMatrixStride, 0, 16384, "dstNzMatrixStride", api, loc);
  // Two C0-column blocks whose rows overlap: the documented "undefined order" of writes.
  if (p.dValue > c0 && p.dstNzC0Stride < uint32_t{p.nValue - 1} * p.dstNzNStride + 1) {
    fail(api, loc, fmt("dstNzC0Stride %u is smaller than the %u rows one C0 block occupies: the NZ blocks "
                       "overlap", p.dstNzC0Stride, (p.nValue - 1) * p.dstNzNStride + 1));
  }
}

// Convert an L0C value to the Fixpipe destination type with quantPre (RINT = nearest even).
template <class T, class U>
inline T fixpipe_convert(U v, QuantMode_t q, bool relu, const char* api, const SrcLoc& loc) {
  if (relu && v < U(0)) v = U(0);
  if constexpr (std::is_same_v<T, U>) {
    if (q != QuantMode_t::NoQuant) fail(api, loc, "a same-type Fixpipe (float->float, int32->int32) needs NoQuant");
    return v;
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>) {
    if (q != QuantMode_t::F322F16) fail(api, loc, "float -> half needs quantPre F322F16");
    return half(v);
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>) {
    if (q != QuantMode_t::F322BF16) fail(api, loc, "float -> bfloat16_t needs quantPre F322BF16");
    return bfloat16_t(v);
  } else {
    fail(api, loc, fmt("quantization %s <- %s (DEQF16/QF322B8_PRE/REQ8) is not modeled by ascend-sim",
                       type_name<T>(), type_name<U>()));
  }
}

}  // namespace pyasc_sim

namespace AscendC {

// GM (ND) -> L1 (NZ), MTE2. D (column) padding up to C0 is zero-filled; rows past nValue
// are not written.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(DataCopy Nd2Nz, T, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, half, bfloat16_t,
                   float);
  const char* api = "DataCopy(Nd2Nz)";
  constexpr uint32_t c0 = 32 / sizeof(T);
  pyasc_sim::check_nd2nz(p, c0, api, loc);
  if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;
  const uint32_t blocks = (p.dValue + c0 - 1) / c0;
  const uint64_t last = uint64_t{p.ndNum - 1u} * p.dstNzMatrixStride + uint64_t{blocks - 1} * p.dstNzC0Stride * c0 +
                        uint64_t{p.nValue - 1u} * p.dstNzNStride * c0 + c0;
  uint8_t* d = pyasc_sim::cube_operand(dst.ref_, pyasc_sim::Mem::L1, last * sizeof(T), pyasc_sim::kBlock, api,
                                       "dst", loc);
  const uint32_t op = pyasc_sim::begin_op(PIPE_MTE2, api, loc);
  for (uint32_t i = 0; i < p.ndNum; ++i) {
    for (uint32_t r = 0; r < p.nValue; ++r) {
      const uint64_t row = uint64_t{i} * p.srcNdMatrixStride + uint64_t{r} * p.srcDValue;
      const uintptr_t s = src[row].range(uint64_t{p.dValue} * sizeof(T), api, "src", loc);
      for (uint32_t b = 0; b < blocks; ++b) {
        const uint64_t at = uint64_t{i} * p.dstNzMatrixStride + uint64_t{b} * p.dstNzC0Stride * c0 +
                            uint64_t{r} * p.dstNzNStride * c0;
        const uint64_t byte = dst.ref_.off + at * sizeof(T);
        pyasc_sim::access(pyasc_sim::Mem::L1, byte, byte + pyasc_sim::kBlock, op, true);
        const uint32_t n = std::min(c0, p.dValue - b * c0);
        std::memcpy(d + at * sizeof(T), reinterpret_cast<const uint8_t*>(s) + b * pyasc_sim::kBlock, n * sizeof(T));
        std::memset(d + (at + n) * sizeof(T), 0, (c0 - n) * sizeof(T));
      }
    }
  }
  pyasc_sim::count(pyasc_sim::Ctr::gm_to_l1_bytes, uint64_t{p.ndNum} * p.nValue * p.dValue * sizeof(T));
}

// L1 -> L0A / L0B, MTE1: `repeatTimes` fractals of 512 bytes; ifTranspose (b16 only)
// transposes each 16 x 16 fractal.
template <typename T>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(LoadData, T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float);
  const char* api = "LoadData";
  using pyasc_sim::Mem;
  constexpr uint32_t kFrac = 512;
  if (p.ifTranspose && sizeof(T) != 2) pyasc_sim::fail(api, loc, "ifTranspose is supported for b16 types only");
  if (p.addrMode != 0) pyasc_sim::fail(api, loc, "addrMode 1 (decrement) is not modeled by ascend-sim");
  if (p.repeatTimes == 0) return;
  const Mem dm = dst.ref_.mem == Mem::L0B ? Mem::L0B : Mem::L0A;
  const uint64_t dbytes = (uint64_t{p.repeatTimes - 1u} * (p.dstGap + 1u) + 1) * kFrac;
  const uint64_t sbytes = (p.startIndex + uint64_t{p.repeatTimes - 1u} * p.srcStride + 1) * kFrac;
  uint8_t* d = pyasc_sim::cube_operand(dst.ref_, dm, dbytes, kFrac, api, "dst", loc);
  const uint8_t* s = pyasc_sim::cube_operand(src.ref_, Mem::L1, sbytes, pyasc_sim::kBlock, api, "src", loc);
  const uint32_t op = pyasc_sim::begin_op(PIPE_MTE1, api, loc);
  for (uint32_t i = 0; i < p.repeatTimes; ++i) {
    const uint64_t so = (p.startIndex + uint64_t{i} * p.srcStride) * kFrac;
    const uint64_t dof = uint64_t{i} * (p.dstGap + 1u) * kFrac;
    pyasc_sim::access(Mem::L1, src.ref_.off + so, src.ref_.off + so + kFrac, op, false);
    pyasc_sim::access(dm, dst.ref_.off + dof, dst.ref_.off + dof + kFrac, op, true);
    if (!p.ifTranspose) {
      std::memmove(d + dof, s + so, kFrac);
      continue;
    }
    for (uint32_t r = 0; r < 16; ++r) {
      for (uint32_t c = 0; c < 16; ++c) std::memcpy(d + dof + (r * 16 + c) * 2, s + so + (c * 16 + r) * 2, 2);
    }
  }
  pyasc_sim::count(dm == Mem::L0A ? pyasc_sim::Ctr::l1_to_l0a_bytes : pyasc_sim::Ctr::l1_to_l0b_bytes,
                   uint64_t{p.repeatTimes} * kFrac);
}

// C (L0C, Nz) = [C +] A (L0A, Zz; ND when m == 1) x B (L0B, Zn), pipe M. Products are exact
// in float for half/bf16, rounded to float for float inputs (HF32 off); sums run over k in
// order in float (int32 wrapping for int8).
template <typename T, typename U, typename S>
void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& p,
          SrcLoc loc = {}) {
  static_assert((std::is_same_v<U, half> && std::is_same_v<S, half> && std::is_same_v<T, float>) ||
                    (std::is_same_v<U, bfloat16_t> && std::is_same_v<S, bfloat16_t> && std::is_same_v<T, float>) ||
                    (std::is_same_v<U, float> && std::is_same_v<S, float> && std::is_same_v<T, float>) ||
                    (std::is_same_v<U, int8_t> && std::is_same_v<S, int8_t> && std::is_same_v<T, int32_t>),
                "Mmad: (fm, filter, dst) must be (half, half, float), (bfloat16_t, bfloat16_t, float), "
                "(float, float, float) or (int8_t, int8_t, int32_t) on dav-c220");
  const char* api = "Mmad";
  using pyasc_sim::Mem;
  if (p.cmatrixSource) pyasc_sim::fail(api, loc, "cmatrixSource (bias table) is not modeled by ascend-sim");
  if (p.m == 0 || p.n == 0 || p.k == 0) return;
  constexpr uint32_t k0 = 32 / sizeof(U);
  const uint32_t m = p.m, n = p.n, k = p.k;
  const uint32_t kpad = (p.kDirectionAlign && std::is_same_v<U, float>) ? (k + 15) / 16 * 16 : (k + k0 - 1) / k0 * k0;
  const uint32_t k1 = kpad / k0, m1 = (m + 15) / 16, n1 = (n + 15) / 16;
  const bool gemv = m == 1;
  const bool init = p.cmatrixInitVal && !p.isBias;
  const uint64_t abytes = gemv ? uint64_t{kpad} * sizeof(U) : uint64_t{m1} * k1 * 512;
  const uint64_t bbytes = uint64_t{k1} * n1 * 512, cbytes = uint64_t{n1} * m1 * 1024;
  const uint8_t* a = pyasc_sim::cube_operand(fm.ref_, Mem::L0A, abytes, 512, api, "fm", loc);
  const uint8_t* b = pyasc_sim::cube_operand(filter.ref_, Mem::L0B, bbytes, 512, api, "filter", loc);
  uint8_t* c = pyasc_sim::cube_operand(dst.ref_, Mem::L0C, cbytes, 1024, api, "dst", loc);
  const uint32_t op = pyasc_sim::begin_op(PIPE_M, api, loc);
  pyasc_sim::access(Mem::L0A, fm.ref_.off, fm.ref_.off + abytes, op, false);
  pyasc_sim::access(Mem::L0B, filter.ref_.off, filter.ref_.off + bbytes, op, false);
  if (!init) pyasc_sim::access(Mem::L0C, dst.ref_.off, dst.ref_.off + cbytes, op, false, m1 * n1 < 10);
  pyasc_sim::access(Mem::L0C, dst.ref_.off, dst.ref_.off + cbytes, op, true);
  using Acc = std::conditional_t<std::is_same_v<T, float>, float, uint32_t>;
  std::vector<Acc> av(uint64_t{m} * k), bv(uint64_t{k} * n);
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t kk = 0; kk < k; ++kk) {
      const uint64_t at = gemv ? kk : ((i / 16) * k1 + kk / k0) * 16 * k0 + (i % 16) * k0 + kk % k0;
      av[uint64_t{i} * k + kk] = static_cast<Acc>(pyasc_sim::load<U>(a + at * sizeof(U)));
    }
  }
  for (uint32_t kk = 0; kk < k; ++kk) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t at = ((kk / k0) * n1 + j / 16) * 16 * k0 + (j % 16) * k0 + kk % k0;
      bv[uint64_t{kk} * n + j] = static_cast<Acc>(pyasc_sim::load<S>(b + at * sizeof(S)));
    }
  }
  std::vector<Acc> row(n);
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t at = ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16;
      row[j] = init ? Acc(0) : static_cast<Acc>(pyasc_sim::load<T>(c + at * sizeof(T)));
    }
    for (uint32_t kk = 0; kk < k; ++kk) {
      const Acc x = av[uint64_t{i} * k + kk];
      const Acc* brow = &bv[uint64_t{kk} * n];
      for (uint32_t j = 0; j < n; ++j) row[j] += x * brow[j];
    }
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t at = ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16;
      pyasc_sim::store<T>(c + at * sizeof(T), static_cast<T>(row[j]));
    }
  }
  pyasc_sim::count(pyasc_sim::Ctr::Mmad_calls);
  pyasc_sim::count(pyasc_sim::Ctr::cube_macs, uint64_t{m} * n * k);
  pyasc_sim::count(pyasc_sim::Ctr::cube_padded_macs, uint64_t{m1} * 16 * n1 * 16 * kpad);
}

// L0C (Nz) -> GM (ND), pipe FIX: nSize x mSize elements, converted per quantPre, ReLU first.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p, SrcLoc loc = {}) {
  static_assert(config.format == CO2Layout::ROW_MAJOR, "Fixpipe: ascend-sim models NZ2ND (CFG_ROW_MAJOR) only");
  static_assert((std::is_same_v<U, float> &&
                 pyasc_sim::one_of<T, int8_t, uint8_t, half, bfloat16_t, float>) ||
                    (std::is_same_v<U, int32_t> && pyasc_sim::one_of<T, int8_t, uint8_t, half, int32_t>),
                "Fixpipe L0C->GM on dav-c220: float -> int8_t/uint8_t/half/bfloat16_t/float, "
                "int32_t -> int8_t/uint8_t/half/int32_t");
  const char* api = "Fixpipe";
  using pyasc_sim::Mem;
  if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;
  pyasc_sim::check_range(p.nSize, 1, 4095, "nSize", api, loc);
  pyasc_sim::check_range(p.mSize, 1, 8192, "mSize", api, loc);
  if (p.srcStride < p.mSize) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("srcStride %u is less than mSize %u: the L0C column blocks would "
                                             "overlap (set it to mSize rounded up to 16)", p.srcStride, p.mSize));
  }
  const uint32_t n1 = (p.nSize + 15) / 16;
  const uint64_t span = (uint64_t{p.ndNum - 1u} * p.srcNdStride * 256 + (uint64_t{n1 - 1} * p.srcStride + p.mSize) * 16);
  const uint8_t* s = pyasc_sim::cube_operand(src.ref_, Mem::L0C, span * sizeof(U), 64, api, "src", loc);
  const uint32_t op = pyasc_sim::begin_op(PIPE_FIX, api, loc);
  pyasc_sim::access(Mem::L0C, src.ref_.off, src.ref_.off + span * sizeof(U), op, false);
  for (uint32_t i = 0; i < p.ndNum; ++i) {
    for (uint32_t j = 0; j < p.mSize; ++j) {
      const uint64_t first = uint64_t{i} * p.dstNdStride + uint64_t{j} * p.dstStride;
      const uintptr_t d = dst[first].range(uint64_t{p.nSize} * sizeof(T), api, "dst", loc);
      for (uint32_t c = 0; c < p.nSize; ++c) {
        const uint64_t at = uint64_t{i} * p.srcNdStride * 256 + (uint64_t{c / 16} * p.srcStride + j) * 16 + c % 16;
        const U v = pyasc_sim::load<U>(s + at * sizeof(U));
        pyasc_sim::store<T>(reinterpret_cast<uint8_t*>(d) + c * sizeof(T),
                            pyasc_sim::fixpipe_convert<T, U>(v, p.quantPre, p.reluEn, api, loc));
      }
      pyasc_sim::t_block->record_write(d, d + uint64_t{p.nSize} * sizeof(T), api, loc);
      if (pyasc_sim::t_block->mix != nullptr) {
        pyasc_sim::mix_gm(*pyasc_sim::t_block, d, d + uint64_t{p.nSize} * sizeof(T), true, api, loc);
      }
    }
  }
  pyasc_sim::count(pyasc_sim::Ctr::l0c_to_gm_bytes, uint64_t{p.ndNum} * p.mSize * p.nSize * sizeof(T));
}

}  // namespace AscendC
