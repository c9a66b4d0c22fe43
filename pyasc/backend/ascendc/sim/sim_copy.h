// ascend-sim: DataCopy and DataCopyPad between GM and UB.
//
// DataCopy (count form) moves whole 32-byte blocks: a count whose byte size is not a
// multiple of 32, or an unaligned UB address, is a violation (hardware truncates silently).
// DataCopyPad moves arbitrary byte lengths; in UB each block is padded to 32 bytes.
#pragma once

#include "sim_pipe.h"

namespace AscendC {

struct DataCopyParams {
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;  // 32-byte blocks
  union {
    uint16_t srcStride = 0;  // gap between blocks, 32-byte blocks
    uint16_t srcGap;
  };
  union {
    uint16_t dstStride = 0;
    uint16_t dstGap;
  };
  DataCopyParams() = default;
  DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

struct DataCopyExtParams {
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes
  uint32_t srcStride = 0;  // GM->UB: bytes; UB->GM: 32-byte blocks
  uint32_t dstStride = 0;  // GM->UB: 32-byte blocks; UB->GM: bytes
  uint32_t rsv = 0;
  DataCopyExtParams() = default;
  DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
  bool isPad = false;
  uint8_t leftPadding = 0;   // elements
  uint8_t rightPadding = 0;  // elements
  T paddingValue = T(0);
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
      : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

}  // namespace AscendC

namespace pyasc_sim {

inline constexpr uint32_t kMaxPadBlocks = 4095;

inline void check_whole_blocks(uint64_t bytes, const char* api, const SrcLoc& loc) {
  if (bytes % kBlock != 0) {
    fail(api, loc, fmt("count*sizeof(T) = %llu bytes is not a multiple of 32: the hardware silently "
                       "truncates the copy to %llu bytes; use DataCopyPad for the tail",
                       static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(bytes / kBlock * kBlock)));
  }
}

template <class T>
inline void check_gm_aligned(uintptr_t addr, const char* api, const SrcLoc& loc) {
  if (addr % sizeof(T) != 0) fail(api, loc, fmt("GM address is not aligned to sizeof(T) = %zu", sizeof(T)));
}

inline void note_copy_in(const UbRef& dst, uint64_t bytes) {
  count(Ctr::gm_to_ub_bytes, bytes);
  count(Ctr::copy_in_calls);
  if (dst.slot == nullptr || dst.slot->que_num < 2) count(Ctr::copy_in_single_buffered_calls);
}

inline void note_copy_out(uintptr_t lo, uint64_t bytes, const char* api, const SrcLoc& loc) {
  count(Ctr::ub_to_gm_bytes, bytes);
  dcache_dma(lo, lo + bytes, true, api, loc);
  if (t_block != nullptr) t_block->record_write(lo, lo + bytes, api, loc);
}

template <class T>
inline void check_pad_params(const AscendC::DataCopyExtParams& p, const char* api, const SrcLoc& loc) {
  PYASC_SIM_DTYPES(DataCopyPad, T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t,
                   uint32_t, float, int64_t, uint64_t, double);
  if (p.blockCount > kMaxPadBlocks) fail(api, loc, fmt("blockCount %u exceeds 4095", p.blockCount));
  if (p.blockLen % sizeof(T) != 0) {
    fail(api, loc, fmt("blockLen %u bytes is not a multiple of sizeof(T) = %zu", p.blockLen, sizeof(T)));
  }
}

template <class T>
inline void fill_value(uint8_t* p, uint64_t elems, T v) {
  for (uint64_t i = 0; i < elems; ++i) store<T>(p + i * sizeof(T), v);
}

}  // namespace pyasc_sim

namespace AscendC {

// ---- count form ------------------------------------------------------------------------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, SrcLoc loc = {}) {
  const char* api = "DataCopy";
  const uint64_t bytes = uint64_t{count} * sizeof(T);
  pyasc_sim::check_whole_blocks(bytes, api, loc);
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, bytes, pyasc_sim::kBlock, api, "dst", loc);
  const uintptr_t s = src.range(bytes, api, "src", loc);
  pyasc_sim::dcache_dma(s, s + bytes, false, api, loc);
  pyasc_sim::check_gm_aligned<T>(s, api, loc);
  std::memcpy(d, reinterpret_cast<const void*>(s), bytes);
  pyasc_sim::note_copy_in(dst.ref_, bytes);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, SrcLoc loc = {}) {
  const char* api = "DataCopy";
  const uint64_t bytes = uint64_t{count} * sizeof(T);
  pyasc_sim::check_whole_blocks(bytes, api, loc);
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, bytes, pyasc_sim::kBlock, api, "src", loc);
  const uintptr_t d = dst.range(bytes, api, "dst", loc);
  pyasc_sim::check_gm_aligned<T>(d, api, loc);
  std::memcpy(reinterpret_cast<void*>(d), s, bytes);
  pyasc_sim::count(pyasc_sim::Ctr::copy_out_calls);
  pyasc_sim::note_copy_out(d, bytes, api, loc);
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, SrcLoc loc = {}) {
  const char* api = "DataCopy";
  const uint64_t bytes = uint64_t{count} * sizeof(T);
  pyasc_sim::check_whole_blocks(bytes, api, loc);
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, bytes, pyasc_sim::kBlock, api, "dst", loc);
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, bytes, pyasc_sim::kBlock, api, "src", loc);
  std::memmove(d, s, bytes);
  pyasc_sim::count(pyasc_sim::Ctr::ub_to_ub_bytes, bytes);
}

// ---- DataCopyParams form (32-byte block units; strides are gaps between blocks) --------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p, SrcLoc loc = {}) {
  const char* api = "DataCopy";
  if (p.blockCount == 0 || p.blockLen == 0) return;
  const uint64_t blk = uint64_t{p.blockLen} * 32, n = p.blockCount;
  const uint64_t s_step = blk + uint64_t{p.srcStride} * 32, d_step = blk + uint64_t{p.dstStride} * 32;
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, (n - 1) * d_step + blk, pyasc_sim::kBlock, api, "dst", loc);
  const uintptr_t s = src.range((n - 1) * s_step + blk, api, "src", loc);
  pyasc_sim::dcache_dma(s, s + (n - 1) * s_step + blk, false, api, loc);
  pyasc_sim::check_gm_aligned<T>(s, api, loc);
  for (uint64_t i = 0; i < n; ++i) std::memcpy(d + i * d_step, reinterpret_cast<const void*>(s + i * s_step), blk);
  pyasc_sim::note_copy_in(dst.ref_, n * blk);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, SrcLoc loc = {}) {
  const char* api = "DataCopy";
  if (p.blockCount == 0 || p.blockLen == 0) return;
  const uint64_t blk = uint64_t{p.blockLen} * 32, n = p.blockCount;
  const uint64_t s_step = blk + uint64_t{p.srcStride} * 32, d_step = blk + uint64_t{p.dstStride} * 32;
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, (n - 1) * s_step + blk, pyasc_sim::kBlock, api, "src", loc);
  const uintptr_t d = dst.range((n - 1) * d_step + blk, api, "dst", loc);
  pyasc_sim::check_gm_aligned<T>(d, api, loc);
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(reinterpret_cast<void*>(d + i * d_step), s + i * s_step, blk);
    pyasc_sim::note_copy_out(d + i * d_step, blk, api, loc);
  }
  pyasc_sim::count(pyasc_sim::Ctr::copy_out_calls);
}

// ---- DataCopyPad ------------------------------------------------------------------------
// GM->UB: block i is read from src + i*(blockLen + srcStride) bytes and laid out in UB as
// [leftPadding][blockLen bytes][rightPadding][dummy up to 32 bytes], blocks dstStride 32-byte
// blocks apart. Pads hold paddingValue if isPad, else stale UB bytes; the dummy repeats the
// block's first element when both paddings are 0 (docs), else it is paddingValue or stale.
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad, SrcLoc loc = {}) {
  const char* api = "DataCopyPad";
  pyasc_sim::check_pad_params<T>(p, api, loc);
  const uint64_t left = uint64_t{pad.leftPadding} * sizeof(T), right = uint64_t{pad.rightPadding} * sizeof(T);
  if (left > 32 || right > 32) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("leftPadding/rightPadding of %llu/%llu bytes exceed 32 bytes",
                                             static_cast<unsigned long long>(left),
                                             static_cast<unsigned long long>(right)));
  }
  if (sizeof(T) == 8 && pad.isPad && pyasc_sim::load<uint64_t>(reinterpret_cast<const uint8_t*>(&pad.paddingValue)) != 0) {
    pyasc_sim::fail(api, loc, "paddingValue must be 0 for 64-bit types");
  }
  if (p.blockCount == 0 || p.blockLen == 0) return;
  const uint64_t n = p.blockCount, len = p.blockLen;
  const uint64_t ub_blk = pyasc_sim::round_up(left + len + right, pyasc_sim::kBlock);
  const uint64_t d_step = ub_blk + uint64_t{p.dstStride} * 32, s_step = len + p.srcStride;
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, (n - 1) * d_step + ub_blk, pyasc_sim::kBlock, api, "dst", loc);
  const uintptr_t s = src.range((n - 1) * s_step + len, api, "src", loc);
  pyasc_sim::dcache_dma(s, s + (n - 1) * s_step + len, false, api, loc);
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* blk = d + i * d_step;
    std::memset(blk, PYASC_SIM_UB_FILL, ub_blk);  // what the hardware leaves "random"
    std::memcpy(blk + left, reinterpret_cast<const void*>(s + i * s_step), len);
    if (pad.isPad) {
      pyasc_sim::fill_value<T>(blk, pad.leftPadding, pad.paddingValue);
      pyasc_sim::fill_value<T>(blk + left + len, pad.rightPadding, pad.paddingValue);
    }
    const uint64_t dummy = (ub_blk - left - len - right) / sizeof(T);
    if (left == 0 && right == 0) {
      pyasc_sim::fill_value<T>(blk + len, dummy, pyasc_sim::load<T>(blk));
    } else if (pad.isPad) {
      pyasc_sim::fill_value<T>(blk + left + len + right, dummy, pad.paddingValue);
    }
  }
  pyasc_sim::note_copy_in(dst.ref_, n * len);
}

// UB->GM: block i is read from UB at src + i*(roundup(blockLen, 32) + srcStride*32) and
// written to dst + i*(blockLen + dstStride) bytes; only blockLen bytes reach GM.
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p, SrcLoc loc = {}) {
  const char* api = "DataCopyPad";
  pyasc_sim::check_pad_params<T>(p, api, loc);
  if (p.blockCount == 0 || p.blockLen == 0) return;
  const uint64_t n = p.blockCount, len = p.blockLen;
  const uint64_t s_step = pyasc_sim::round_up(len, pyasc_sim::kBlock) + uint64_t{p.srcStride} * 32;
  const uint64_t d_step = len + p.dstStride;
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, (n - 1) * s_step + len, pyasc_sim::kBlock, api, "src", loc);
  const uintptr_t d = dst.range((n - 1) * d_step + len, api, "dst", loc);
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(reinterpret_cast<void*>(d + i * d_step), s + i * s_step, len);
    pyasc_sim::note_copy_out(d + i * d_step, len, api, loc);
  }
  pyasc_sim::count(pyasc_sim::Ctr::copy_out_calls);
}

}  // namespace AscendC
