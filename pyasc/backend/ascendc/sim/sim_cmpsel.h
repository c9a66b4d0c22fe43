// ascend-sim: Compare, Select, ReduceSum/ReduceMax/ReduceMin (count form) and Sigmoid.
//
// Compare writes one bit per element (bit i%8 of byte i/8); its count path computes only
// whole 256-byte repeats, so count*sizeof(T) % 256 != 0 is a violation. Select picks src0
// where the mask bit is 1. ReduceSum follows the 910B count form: a binary tree inside each
// 256-byte repeat, repeats accumulated in order, rounding to T after every addition.
#pragma once

#include <algorithm>
#include <vector>

#include "sim_cast.h"

namespace pyasc_sim {

inline bool mask_bit(const uint8_t* mask, uint64_t i) { return (mask[i / 8] >> (i % 8)) & 1u; }

template <class T>
inline bool compare_one(T a, T b, AscendC::CMPMODE m) {
  using M = AscendC::CMPMODE;
  switch (m) {
    case M::LT: return a < b;
    case M::GT: return a > b;
    case M::EQ: return a == b;
    case M::LE: return a <= b;
    case M::GE: return a >= b;
    case M::NE: return a != b;
  }
  return false;
}

// Round an intermediate to T's precision, as an adder working in T would.
template <class T>
inline calc_t<T> in_t(calc_t<T> v) { return static_cast<calc_t<T>>(static_cast<T>(v)); }

// Binary-tree sum of the n (<= one repeat) elements at p.
template <class T>
calc_t<T> tree_sum(const uint8_t* p, uint64_t n) {
  calc_t<T> v[kRepeat / sizeof(T)];
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<calc_t<T>>(load<T>(p + i * sizeof(T)));
  for (uint64_t m = n; m > 1; m = (m + 1) / 2) {
    for (uint64_t i = 0; i < m / 2; ++i) v[i] = in_t<T>(v[2 * i] + v[2 * i + 1]);
    if (m % 2 != 0) v[m / 2] = v[m - 1];
  }
  return v[0];
}

// sharedTmpBuffer elements ReduceMax/ReduceMin need (the formula of the ReduceMax docs,
// with firstMaxRepeat = ceil(count / elementsPerRepeat)).
inline uint64_t reduce_tmp_elems(uint64_t count, uint64_t size, bool with_index) {
  const uint64_t per_blk = kBlock / size, per_rep = kRepeat / size;
  auto ceil_to = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
  const uint64_t it1 = std::max<uint64_t>(1, (count + per_rep - 1) / per_rep) * 2;
  if (!with_index) return ceil_to(it1, per_blk);
  const uint64_t it2_start = ceil_to(it1, per_blk), it2_out = (it1 + per_rep - 1) / per_rep * 2;
  const uint64_t it2_end = ceil_to(it2_out, per_blk);
  if (it2_out <= 2) return it2_start + it2_end;
  const uint64_t it3_out = (it2_out + per_rep - 1) / per_rep * 2;
  return it2_start + it2_end + ceil_to(it3_out, per_blk);
}

template <class T, bool kMax>
void reduce_extreme(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const AscendC::LocalTensor<T>& tmp, int32_t count, bool cal_index, const char* api,
                    Ctr counter, const SrcLoc& loc) {
  PYASC_SIM_DTYPES(ReduceMax / ReduceMin, T, half, float);
  check_count(count, api, loc);
  if (count == 0) return;  // NOP on 910B
  const uint8_t* s = ub_operand(src.ref_, uint64_t(count) * sizeof(T), kBlock, api, "src", loc);
  ub_operand(tmp.ref_, reduce_tmp_elems(count, sizeof(T), cal_index) * sizeof(T), kBlock, api,
             "sharedTmpBuffer (size per the ReduceMax docs)", loc);
  const uint32_t out = cal_index ? 2 * sizeof(T) : sizeof(T);
  uint8_t* d = ub_operand(dst.ref_, out, out, api, "dst", loc);
  uint64_t best = 0;
  float best_v = static_cast<float>(load<T>(s));
  for (uint64_t i = 1; i < uint64_t(count); ++i) {
    const float v = static_cast<float>(load<T>(s + i * sizeof(T)));
    if (kMax ? v > best_v : v < best_v) best_v = v, best = i;
  }
  if (cal_index && sizeof(T) == 2 && best > 0xFFFF) {
    fail(api, loc, fmt("index %llu does not fit the uint16_t index of a half reduction",
                       static_cast<unsigned long long>(best)));
  }
  std::memcpy(d, s + best * sizeof(T), sizeof(T));
  if (cal_index) {  // the index is stored as the bit pattern of an unsigned integer of sizeof(T)
    if constexpr (sizeof(T) == 2) store<uint16_t>(d + 2, static_cast<uint16_t>(best));
    else store<uint32_t>(d + 4, static_cast<uint32_t>(best));
  }
  note_vec(counter, static_cast<uint64_t>(count));
}

}  // namespace pyasc_sim

namespace AscendC {

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                               CMPMODE cmpMode, uint32_t count, SrcLoc loc = {}) {
  static_assert(std::is_same_v<U, uint8_t>, "Compare: dst must be a LocalTensor<uint8_t> bit mask");
  PYASC_SIM_DTYPES(Compare, T, half, float, int32_t);
  const char* api = "Compare";
  if (std::is_same_v<T, int32_t> && cmpMode != CMPMODE::EQ) {
    pyasc_sim::fail(api, loc, "int32_t Compare supports only CMPMODE::EQ on dav-c220");
  }
  const uint64_t bytes = uint64_t{count} * sizeof(T);
  if (bytes % pyasc_sim::kRepeat != 0) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt(
        "count*sizeof(T) = %llu bytes is not a multiple of 256: the hardware runs %llu whole repeats "
        "and silently drops the last %llu elements", static_cast<unsigned long long>(bytes),
        static_cast<unsigned long long>(bytes / pyasc_sim::kRepeat),
        static_cast<unsigned long long>(bytes % pyasc_sim::kRepeat / sizeof(T))));
  }
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, count / 8, pyasc_sim::kBlock, api, "dst", loc);
  const uint8_t* a = pyasc_sim::ub_operand(src0.ref_, bytes, pyasc_sim::kBlock, api, "src0", loc);
  const uint8_t* b = pyasc_sim::ub_operand(src1.ref_, bytes, pyasc_sim::kBlock, api, "src1", loc);
  std::vector<uint8_t> bits(count / 8, 0);
  for (uint32_t i = 0; i < count; ++i) {
    const auto x = static_cast<pyasc_sim::calc_t<T>>(pyasc_sim::load<T>(a + i * sizeof(T)));
    const auto y = static_cast<pyasc_sim::calc_t<T>>(pyasc_sim::load<T>(b + i * sizeof(T)));
    if (pyasc_sim::compare_one(x, y, cmpMode)) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  if (!bits.empty()) std::memcpy(d, bits.data(), bits.size());
  pyasc_sim::note_vec(pyasc_sim::Ctr::Compare_calls, count);
}

namespace detail_select {
template <typename T, typename U, typename Pick>
void run(const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& src0, uint32_t count,
         Pick pick, const SrcLoc& loc) {
  PYASC_SIM_DTYPES(Select, T, half, float);
  static_assert(pyasc_sim::one_of<U, uint8_t, uint16_t, uint32_t, uint64_t>,
                "Select: selMask must be uint8_t, uint16_t, uint32_t or uint64_t");
  const char* api = "Select";
  const uint64_t bytes = uint64_t{count} * sizeof(T);
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, bytes, pyasc_sim::kBlock, api, "dst", loc);
  const uint8_t* m = pyasc_sim::ub_operand(mask.ref_, (count + 7) / 8, pyasc_sim::kBlock, api, "selMask", loc);
  const uint8_t* a = pyasc_sim::ub_operand(src0.ref_, bytes, pyasc_sim::kBlock, api, "src0", loc);
  for (uint32_t i = 0; i < count; ++i) {
    const T x = pyasc_sim::load<T>(a + i * sizeof(T));
    pyasc_sim::store<T>(d + i * sizeof(T), pyasc_sim::mask_bit(m, i) ? x : pick(i));
  }
  pyasc_sim::note_vec(pyasc_sim::Ctr::Select_calls, count);
}

inline void check_mode(SELMODE got, SELMODE want, const char* form, const SrcLoc& loc) {
  if (got == SELMODE::VSEL_CMPMASK_SPR) {
    pyasc_sim::fail("Select", loc, "VSEL_CMPMASK_SPR (mask from the CMPMASK register) is not modeled; "
                                   "pass the mask tensor with VSEL_TENSOR_TENSOR_MODE");
  }
  if (got != want) pyasc_sim::fail("Select", loc, pyasc_sim::fmt("the %s form needs SELMODE %d", form, int(want)));
}
}  // namespace detail_select

// dst[i] = mask bit i ? src0[i] : src1[i]
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, SrcLoc loc = {}) {
  detail_select::check_mode(selMode, SELMODE::VSEL_TENSOR_TENSOR_MODE, "tensor-tensor", loc);
  const uint8_t* b = pyasc_sim::ub_operand(src1.ref_, uint64_t{count} * sizeof(T), pyasc_sim::kBlock, "Select", "src1", loc);
  detail_select::run(dst, selMask, src0, count, [b](uint32_t i) { return pyasc_sim::load<T>(b + i * sizeof(T)); }, loc);
}

// dst[i] = mask bit i ? src0[i] : src1 (scalar)
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                              T src1, SELMODE selMode, uint32_t count, SrcLoc loc = {}) {
  detail_select::check_mode(selMode, SELMODE::VSEL_TENSOR_SCALAR_MODE, "scalar-src1", loc);
  detail_select::run(dst, selMask, src0, count, [src1](uint32_t) { return src1; }, loc);
}

template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, const int32_t count, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(ReduceSum, T, half, float);
  const char* api = "ReduceSum";
  pyasc_sim::check_count(count, api, loc);
  if (count == 0) return;  // NOP on 910B
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, uint64_t(count) * sizeof(T), pyasc_sim::kBlock, api, "src", loc);
  pyasc_sim::ub_operand(sharedTmpBuffer.ref_, 0, pyasc_sim::kBlock, api, "sharedTmpBuffer", loc);
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, sizeof(T), sizeof(T), api, "dst", loc);
  const uint64_t per_rep = pyasc_sim::kRepeat / sizeof(T);
  pyasc_sim::calc_t<T> acc = 0;
  for (uint64_t r = 0; r * per_rep < uint64_t(count); ++r) {
    const uint64_t n = std::min<uint64_t>(per_rep, count - r * per_rep);
    const auto part = pyasc_sim::tree_sum<T>(s + r * pyasc_sim::kRepeat, n);
    acc = r == 0 ? part : pyasc_sim::in_t<T>(acc + part);
  }
  pyasc_sim::store<T>(d, static_cast<T>(acc));
  pyasc_sim::note_vec(pyasc_sim::Ctr::ReduceSum_calls, count);
}

template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                                 const int32_t count, bool calIndex = 0, SrcLoc loc = {}) {
  pyasc_sim::reduce_extreme<T, true>(dst, src, sharedTmpBuffer, count, calIndex, "ReduceMax",
                                     pyasc_sim::Ctr::ReduceMax_calls, loc);
}

template <typename T>
__aicore__ inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                                 const int32_t count, bool calIndex = 0, SrcLoc loc = {}) {
  pyasc_sim::reduce_extreme<T, false>(dst, src, sharedTmpBuffer, count, calIndex, "ReduceMin",
                                      pyasc_sim::Ctr::ReduceMin_calls, loc);
}

// Advanced API (adv_api/activation/sigmoid.h): 1 / (1 + exp(-x)).
template <typename T, bool isReuseSource = false>
__aicore__ inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,
                               SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(Sigmoid, T, half, float);
  pyasc_sim::map1(dst, src, calCount, [](float x) { return 1.0f / (1.0f + std::exp(-x)); }, "Sigmoid",
                  pyasc_sim::Ctr::Sigmoid_calls, loc);
}

template <typename T, bool isReuseSource = false>
__aicore__ inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                               const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, SrcLoc loc = {}) {
  pyasc_sim::ub_operand(sharedTmpBuffer.ref_, 0, pyasc_sim::kBlock, "Sigmoid", "sharedTmpBuffer", loc);
  Sigmoid<T, isReuseSource>(dst, src, calCount, loc);
}

}  // namespace AscendC
