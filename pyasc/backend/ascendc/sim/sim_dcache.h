// ascend-sim: the scalar unit's data cache and DataCacheCleanAndInvalid.
//
// Facts (asc-devkit docs/zh/api/SIMD-API/基础API/缓存控制/DataCacheCleanAndInvalid.md and
// include/basic_api/kernel_operator_cache_intf.h): the scalar unit reaches GM through a
// per-core data cache, DMA (DataCopy) does not. A scalar GM write stays in the cache until
// DataCacheCleanAndInvalid writes the dirty line back ("clean") and drops it ("invalid");
// write-back is by whole 64-byte line, so "cores writing different addresses of one line
// overwrite each other at random, unlike a CPU" (the docs' example 3), flush or not.
//
// The model keeps each block's dirty lines (state in sim_state.h) and stops with a
// violation when:
//   * a block ends with a dirty line: nothing flushed it, and the host or the next kernel
//     reads GM, not this cache (reported at the last SetValue into the line);
//   * two blocks of one launch write one line, at least one of them by SetValue (checked
//     after the launch, beside the byte-exact write race of sim_launch.h);
//   * a block's DataCopy reads or writes GM bytes of a line its own cache holds dirty (the
//     DMA reads stale GM; the later write-back overwrites what the DMA wrote).
// Written data goes to GM at once (host memory), so results are exact whenever the rules hold.
//
// Forms by arch, as the header declares them (__NPU_ARCH__ guards of
// impl/basic_api/kernel_operator_cache_intf_impl.h): <T, CacheLine, DcciDst> on 2201 and 3002;
// <T, CacheLine> on 2201, 2002 and 3002; neither on 1001 (dav-c100: the docs list the Atlas
// training series as unsupported; its own tensor-dump code writes GM by scalar stores with no
// flush, so the model treats its scalar stores as reaching GM directly).
#pragma once

#include <algorithm>

#include "sim_state.h"

#ifndef PYASC_SIM_NPU_ARCH
#define PYASC_SIM_NPU_ARCH 2201  // __NPU_ARCH__ of the configured SoC (910B: dav-c220)
#endif
#define PYASC_SIM_DCACHE (PYASC_SIM_NPU_ARCH != 1001)

namespace AscendC {

template <typename T>
class GlobalTensor;

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

}  // namespace AscendC

namespace pyasc_sim {

// The start of the 64-byte line holding GM address p: lines count from the start of the
// kernel argument holding p (device buffers are 512-byte aligned); from address 0 outside a
// launch.
inline uintptr_t line_of(uintptr_t p) {
  const LaunchCtx* ctx = t_block != nullptr ? t_block->ctx : nullptr;
  const GmRegion* r = ctx != nullptr ? ctx->find(p) : nullptr;
  const uintptr_t base = r != nullptr ? r->lo : 0;
  return base + (p - base) / kLine * kLine;
}

inline uint64_t byte_mask(uintptr_t from, uintptr_t to) {  // bits [from, to) of a line, to <= 64
  const uint64_t upper = to >= kLine ? ~uint64_t{0} : (uint64_t{1} << to) - 1;
  return upper & ~((uint64_t{1} << from) - 1);
}

// A scalar store of `bytes` at p (GlobalTensor::SetValue).
inline void dcache_store(uintptr_t p, uint64_t bytes, const char* api, const SrcLoc& loc) {
  if (!PYASC_SIM_DCACHE || t_block == nullptr) return;
  for (uintptr_t at = p, end = p + bytes; at < end;) {
    const uintptr_t line = line_of(at);
    const uintptr_t stop = std::min<uintptr_t>(end, line + kLine);
    t_block->dcache.write(line, byte_mask(at - line, stop - line), api, loc);
    at = stop;
  }
}

// A DMA access of GM bytes [lo, hi) by this block: stale if its own cache holds them dirty.
inline void dcache_dma(uintptr_t lo, uintptr_t hi, bool writes, const char* api, const SrcLoc& loc) {
  if (t_block != nullptr && t_block->mix != nullptr && lo != hi) mix_gm(*t_block, lo, hi, writes, api, loc);
  if (!PYASC_SIM_DCACHE || t_block == nullptr || t_block->dcache.dirty.empty() || lo == hi) return;
  const auto* d = t_block->dcache.first_dirty(line_of(lo), hi);
  if (d == nullptr) return;
  fail(api, loc, fmt("%s GM bytes of a 64-byte line that this block's data cache holds dirty from "
                     "GlobalTensor::SetValue at %s:%d; %s: call DataCacheCleanAndInvalid after the "
                     "scalar writes", writes ? "writes" : "reads", d->second.loc.file ? d->second.loc.file : "?",
                     d->second.loc.line,
                     writes ? "its later write-back overwrites what the DMA wrote" : "the DMA reads stale GM"));
}

// The end of a block: every scalar GM write must have been cleaned.
inline void dcache_at_block_end(const BlockState& b) {
  if (!PYASC_SIM_DCACHE || b.dcache.dirty.empty()) return;
  const auto* d = b.dcache.first_dirty(0, UINTPTR_MAX);
  const GmRegion* r = b.ctx != nullptr ? b.ctx->find(d->first) : nullptr;
  const uintptr_t base = r != nullptr ? r->lo : 0;
  fail("GlobalTensor::SetValue", d->second.loc,
       fmt("scalar GM write still in the data cache at kernel end (line at byte %llu of argument %d, "
           "%zu dirty lines): no DataCacheCleanAndInvalid after the last scalar GM write, so the host "
           "or the next kernel reads stale GM",
           static_cast<unsigned long long>(d->first - base), r != nullptr ? r->arg : -1, b.dcache.dirty.size()));
}

}  // namespace pyasc_sim

namespace AscendC {

template <typename T, CacheLine entireType>
void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, pyasc_sim::SrcLoc loc = {}) {
  static_assert(sizeof(T) != 0 && PYASC_SIM_NPU_ARCH != 1001,
                "DataCacheCleanAndInvalid: not declared on dav-c100 (kernel_operator_cache_intf_impl.h)");
  pyasc_sim::BlockState& b = pyasc_sim::block("DataCacheCleanAndInvalid", loc);
  pyasc_sim::count(pyasc_sim::Ctr::dcache_flush_calls);
  if (entireType == CacheLine::ENTIRE_DATA_CACHE) {  // the address is ignored (docs)
    b.dcache.dirty.clear();
    return;
  }
  // SINGLE_CACHE_LINE: "only from the address to the 64-byte boundary" of its line.
  const uintptr_t p = reinterpret_cast<uintptr_t>(dst.GetPhyAddr());
  const uintptr_t line = pyasc_sim::line_of(p);
  auto it = b.dcache.dirty.find(line);
  if (it == b.dcache.dirty.end()) return;
  it->second.bytes &= ~pyasc_sim::byte_mask(p - line, pyasc_sim::kLine);
  if (it->second.bytes == 0) b.dcache.dirty.erase(it);
}


// CACHELINE_ALL/OUT keep the cache coherent with GM; the UB and atomic targets are not modeled
// (ATOMIC is "not yet supported" on A2/A3/310B/310P per the docs).
template <typename T, CacheLine entireType, DcciDst dcciDst>
void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, pyasc_sim::SrcLoc loc = {}) {
  static_assert(sizeof(T) != 0 && (PYASC_SIM_NPU_ARCH == 2201 || PYASC_SIM_NPU_ARCH == 3002),
                "DataCacheCleanAndInvalid<T, CacheLine, DcciDst>: not declared for this __NPU_ARCH__ "
                "(kernel_operator_cache_intf_impl.h: 2201, 3002; 2002 has only <T, CacheLine>)");
  static_assert(dcciDst == DcciDst::CACHELINE_ALL || dcciDst == DcciDst::CACHELINE_OUT,
                "DataCacheCleanAndInvalid: only the GM targets CACHELINE_ALL/CACHELINE_OUT are modeled");
  DataCacheCleanAndInvalid<T, entireType>(dst, loc);
}

}  // namespace AscendC
