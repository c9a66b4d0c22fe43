// ascend-sim: Gather (count form) and CreateVecIndex, the vector unit's in-UB shifts.
//
// Facts (asc-devkit, dav_c220, tagged [V] in shared/ascendc-reference.md section 1.3):
// `Gather(dst, src, srcOffset, srcBaseAddr, count)` reads element k of dst from the byte
// address src + srcBaseAddr + srcOffset[k] (kernel_operator_vec_gather_impl.h: the impl
// passes `srcLocal + srcBaseAddr` to vgather); T is half/bfloat16/int16/uint16/float/
// int32/uint32; dst, src and srcOffset start 32-byte aligned; every offset keeps the
// element aligned and inside the UB. On dav-c220 the count form issues
// `count / (256 / sizeof(T))` full repeats through a `uint8_t` (and the tail as one more
// repeat): kernel_operator_vec_gather_intf_impl.h, `const uint8_t repeatTime = count /
// elementCountSingleRepeat` [V]; a count of 256 repeats or more wraps and gathers too
// few elements on hardware, so the model refuses it. `CreateVecIndex(dst, first, count)` writes first,
// first+1, ... (half/int16/float/int32). The model checks each source element against
// src's owning buffer, so a stencil reading past its halo rows is a violation.
#pragma once

#include "sim_vec.h"

namespace AscendC {

template <typename T>
__aicore__ inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(CreateVecIndex, T, half, int16_t, float, int32_t);
  const char* api = "CreateVecIndex";
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, uint64_t{count} * sizeof(T), pyasc_sim::kBlock, api, "dst", loc);
  for (uint32_t i = 0; i < count; ++i) {
    pyasc_sim::store<T>(d + uint64_t{i} * sizeof(T), static_cast<T>(static_cast<double>(firstValue) + i));
  }
  pyasc_sim::note_vec(pyasc_sim::Ctr::CreateVecIndex_calls, count);
}

template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                              const uint32_t srcBaseAddr, const uint32_t count, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(Gather, T, half, bfloat16_t, int16_t, uint16_t, float, int32_t, uint32_t);
  const char* api = "Gather";
  const uint32_t per_repeat = sizeof(T) == 2 ? 128 : 64;  // 256-byte repeats
  if (count / per_repeat > 255) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("count %u is %u full repeats of %u elements; the repeat count is a "
                                             "uint8_t (at most 255): split the Gather", count, count / per_repeat,
                                             per_repeat));
  }
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, uint64_t{count} * sizeof(T), pyasc_sim::kBlock, api, "dst", loc);
  const uint8_t* off = pyasc_sim::ub_operand(srcOffset.ref_, uint64_t{count} * 4, pyasc_sim::kBlock, api, "srcOffset", loc);
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, 0, pyasc_sim::kBlock, api, "src", loc);
  const uint64_t room = src.ref_.buf_hi - src.ref_.off;  // bytes from src to the end of its buffer
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t at = uint64_t{srcBaseAddr} + pyasc_sim::load<uint32_t>(off + uint64_t{i} * 4);
    if (at % sizeof(T) != 0 || at + sizeof(T) > room) {
      pyasc_sim::fail(api, loc, pyasc_sim::fmt("element %u reads byte %llu of src, %s (src holds %llu bytes)", i,
                                               static_cast<unsigned long long>(at),
                                               at % sizeof(T) != 0 ? "not aligned to sizeof(T)" : "beyond its buffer",
                                               static_cast<unsigned long long>(room)));
    }
    std::memcpy(d + uint64_t{i} * sizeof(T), s + at, sizeof(T));
  }
  pyasc_sim::note_vec(pyasc_sim::Ctr::Gather_calls, count);
}

}  // namespace AscendC
