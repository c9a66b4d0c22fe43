// ascend-sim: GlobalTensor (host memory of a kernel argument) and LocalTensor (a window
// into the block's simulated Unified Buffer), with the operand checks every API uses.
#pragma once

#include "sim_dcache.h"
#include "sim_state.h"

namespace pyasc_sim {

enum class SlotState : uint8_t { FREE, OCCUPIED, ENQUE, DEQUE };

inline const char* state_name(SlotState s) {
  constexpr const char* names[] = {"free", "allocated", "enqueued", "dequeued"};
  return names[static_cast<int>(s)];
}

// One buffer of a TQue: its UB bytes, its state, and where it was last allocated.
struct Slot {
  uint32_t off = 0, len = 0;
  SlotState state = SlotState::FREE;
  uint8_t que_num = 0;  // buffers in the owning queue: 1 means the queue is single-buffered
  SrcLoc alloc_loc{};
};

// Where a LocalTensor lives: byte offset of element 0 and the extent of its owning buffer.
struct UbRef {
  uint8_t* ub = nullptr;
  uint32_t off = 0, buf_lo = 0, buf_hi = 0;
  const Slot* slot = nullptr;  // the TQue buffer, or nullptr for TBuf memory
  Mem mem = Mem::UB;           // L1/L0A/L0B/L0C for the static cube tensors (sim_cube.h)
};

// Check a UB operand that spans `bytes` from the tensor's start; returns its host address.
inline uint8_t* ub_operand(const UbRef& r, uint64_t bytes, uint32_t align, const char* api,
                           const char* role, const SrcLoc& loc) {
  if (r.ub == nullptr) fail(api, loc, fmt("%s is a LocalTensor that was never bound to a buffer", role));
  if (r.mem != Mem::UB) {
    fail(api, loc, fmt("%s is a %s tensor; this API takes Unified Buffer tensors (VECIN/VECOUT/VECCALC)",
                       role, mem_name(r.mem)));
  }
  if (r.slot != nullptr && r.slot->state == SlotState::FREE) {
    fail(api, loc, fmt("%s uses a queue buffer after FreeTensor (a later AllocTensor may reuse it)", role));
  }
  if (r.off % align != 0) {
    fail(api, loc, fmt("%s UB address %u is not %u-byte aligned", role, r.off, align));
  }
  if (r.off + bytes > r.buf_hi) {
    fail(api, loc, fmt("%s accesses %llu bytes at UB offset %u, beyond its buffer [%u, %u)", role,
                       static_cast<unsigned long long>(bytes), r.off, r.buf_lo, r.buf_hi));
  }
  return r.ub + r.off;
}

// The memory behind a static tensor `LocalTensor<T>(pos, addr, tileSize)` of a cube
// position: A1/B1/C1 (and TSCM/SHM) are L1, A2 is L0A, B2 is L0B, CO1 is L0C (910B).
inline Mem position_memory(AscendC::TPosition pos) {
  using P = AscendC::TPosition;
  switch (pos) {
    case P::A1: case P::B1: case P::C1: case P::TSCM: case P::SHM: return Mem::L1;
    case P::A2: return Mem::L0A;
    case P::B2: return Mem::L0B;
    case P::CO1: return Mem::L0C;
    default: return Mem::COUNT;
  }
}

// Bind `bytes` at byte `addr` of the position's memory; the tensor's extent is its buffer.
inline UbRef bind_static(AscendC::TPosition pos, uint32_t addr, uint64_t bytes, const SrcLoc& loc);

// Check a cube operand in memory `want` spanning `bytes`; returns its host address.
inline uint8_t* cube_operand(const UbRef& r, Mem want, uint64_t bytes, uint32_t align, const char* api,
                             const char* role, const SrcLoc& loc) {
  if (r.ub == nullptr) fail(api, loc, fmt("%s is a LocalTensor that was never bound to a buffer", role));
  if (r.mem != want) {
    fail(api, loc, fmt("%s is a %s tensor; this API takes a %s tensor here", role, mem_name(r.mem),
                       mem_name(want)));
  }
  if (r.off % align != 0) {
    fail(api, loc, fmt("%s %s address %u is not %u-byte aligned", role, mem_name(r.mem), r.off, align));
  }
  if (r.off + bytes > r.buf_hi) {
    fail(api, loc, fmt("%s accesses %llu bytes at %s offset %u, beyond its tensor [%u, %u): an overflow "
                       "into the neighbouring buffer", role, static_cast<unsigned long long>(bytes),
                       mem_name(r.mem), r.off, r.buf_lo, r.buf_hi));
  }
  return r.ub + r.off;
}

template <class T>
inline T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
inline void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace pyasc_sim

namespace AscendC {

using pyasc_sim::SrcLoc;

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;

  LocalTensor() = default;
  // A static tensor of `tileSize` elements at byte `addr` of a cube position's memory.
  LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, SrcLoc loc = {})
      : ref_(pyasc_sim::bind_static(pos, addr, uint64_t{tileSize} * sizeof(T), loc)), size_(tileSize) {}

  // A view starting `index` elements further (same buffer, same queue state).
  LocalTensor operator[](uint32_t index) const {
    LocalTensor v = *this;
    v.ref_.off += index * static_cast<uint32_t>(sizeof(T));
    v.size_ = index < size_ ? size_ - index : 0;
    return v;
  }
  T GetValue(uint32_t index, SrcLoc loc = {}) const {
    pyasc_sim::count(pyasc_sim::Ctr::ub_scalar_accesses);
    return pyasc_sim::load<T>(element(index, "LocalTensor::GetValue", loc));
  }
  void SetValue(uint32_t index, T value, SrcLoc loc = {}) const {
    pyasc_sim::count(pyasc_sim::Ctr::ub_scalar_accesses);
    pyasc_sim::store<T>(element(index, "LocalTensor::SetValue", loc), value);
  }
  uint32_t GetSize() const { return size_; }
  void SetSize(uint32_t size) { size_ = size; }
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> r;
    r.ref_ = ref_;
    r.size_ = static_cast<uint32_t>(uint64_t{size_} * sizeof(T) / sizeof(U));
    return r;
  }

  // Model internals (public so that LocalTensor<U> and the APIs can reach them).
  pyasc_sim::UbRef ref_{};
  uint32_t size_ = 0;

 private:
  uint8_t* element(uint32_t index, const char* api, const SrcLoc& loc) const {
    pyasc_sim::UbRef r = ref_;
    r.off += index * static_cast<uint32_t>(sizeof(T));
    return pyasc_sim::ub_operand(r, sizeof(T), 1, api, "tensor", loc);
  }
};

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;

  void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize, SrcLoc loc = {}) {
    bind(reinterpret_cast<uintptr_t>(buffer), bufferSize * sizeof(T), true, loc);
  }
  void SetGlobalBuffer(__gm__ T* buffer, SrcLoc loc = {}) {
    bind(reinterpret_cast<uintptr_t>(buffer), 0, false, loc);
  }
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor g = *this;
    g.addr_ += offset * sizeof(T);
    return g;
  }
  T GetValue(uint64_t index, SrcLoc loc = {}) const {
    pyasc_sim::count(pyasc_sim::Ctr::gm_scalar_read_bytes, sizeof(T));
    uintptr_t p = (*this)[index].range(sizeof(T), "GlobalTensor::GetValue", "tensor", loc);
    return pyasc_sim::load<T>(reinterpret_cast<const uint8_t*>(p));
  }
  void SetValue(uint64_t index, T value, SrcLoc loc = {}) const {
    const char* api = "GlobalTensor::SetValue";
    pyasc_sim::count(pyasc_sim::Ctr::gm_scalar_write_bytes, sizeof(T));
    uintptr_t p = (*this)[index].range(sizeof(T), api, "tensor", loc);
    pyasc_sim::store<T>(reinterpret_cast<uint8_t*>(p), value);
    if (pyasc_sim::t_block != nullptr) pyasc_sim::t_block->record_write(p, p + sizeof(T), api, loc);
    pyasc_sim::dcache_store(p, sizeof(T), api, loc);
  }
  uint64_t GetSize() const { return addr_ < hi_ ? (hi_ - addr_) / sizeof(T) : 0; }
  __gm__ T* GetPhyAddr() const { return reinterpret_cast<T*>(addr_); }

  // Model internal: check that `bytes` from this view lie inside the buffer; returns address.
  uintptr_t range(uint64_t bytes, const char* api, const char* role, const SrcLoc& loc) const {
    if (lo_ == 0) fail(api, loc, role, "is a GlobalTensor without SetGlobalBuffer");
    if (addr_ < lo_ || addr_ + bytes > hi_) {
      fail(api, loc, role,
           pyasc_sim::fmt("accesses GM bytes [%llu, %llu) of a buffer of %llu bytes (SetGlobalBuffer)",
                          static_cast<unsigned long long>(addr_ - lo_),
                          static_cast<unsigned long long>(addr_ - lo_ + bytes),
                          static_cast<unsigned long long>(hi_ - lo_)));
    }
    return addr_;
  }

 private:
  uintptr_t addr_ = 0, lo_ = 0, hi_ = 0;

  [[noreturn]] static void fail(const char* api, const SrcLoc& loc, const char* role,
                                const std::string& what) {
    pyasc_sim::fail(api, loc, std::string(role) + " " + what);
  }

  // Bounds come from the size given here, checked against the kernel argument it points into.
  void bind(uintptr_t p, uint64_t bytes, bool sized, const SrcLoc& loc) {
    const char* api = "SetGlobalBuffer";
    if (p == 0) fail(api, loc, "buffer", "is a null GM address");
    const pyasc_sim::LaunchCtx* ctx = pyasc_sim::t_block ? pyasc_sim::t_block->ctx : nullptr;
    if (ctx != nullptr && !ctx->regions.empty()) {
      const pyasc_sim::GmRegion* r = ctx->find(p);
      if (r == nullptr && sized && bytes == 0) r = ctx->find(p - 1);  // empty view at the end
      if (r == nullptr) fail(api, loc, "buffer", "address is not inside any kernel argument");
      if (!sized) bytes = r->hi - p;
      if (p + bytes > r->hi) {
        fail(api, loc, "buffer",
             pyasc_sim::fmt("of %llu bytes at byte %llu of argument %d overruns it (%llu bytes)",
                            static_cast<unsigned long long>(bytes),
                            static_cast<unsigned long long>(p - r->lo), r->arg,
                            static_cast<unsigned long long>(r->hi - r->lo)));
      }
    } else if (!sized) {
      bytes = UINTPTR_MAX - p;  // outside the launcher nothing bounds an unsized buffer
    }
    if (p % alignof(T) != 0) fail(api, loc, "buffer", "address is not aligned to sizeof(T)");
    addr_ = lo_ = p;
    hi_ = p + bytes;
  }
};

}  // namespace AscendC

namespace pyasc_sim {

inline UbRef bind_static(AscendC::TPosition pos, uint32_t addr, uint64_t bytes, const SrcLoc& loc) {
  const char* api = "LocalTensor";
  const Mem m = position_memory(pos);
  if (m == Mem::COUNT) {
    fail(api, loc, "static tensors are modeled for A1/B1/C1/A2/B2/CO1 only (use TQue/TBuf for UB)");
  }
  if (addr % kBlock != 0) fail(api, loc, fmt("%s address %u is not 32-byte aligned", mem_name(m), addr));
  if (addr + bytes > mem_bytes(m)) {
    fail(api, loc, fmt("%s overflow: %llu bytes at %u exceed its %u bytes", mem_name(m),
                       static_cast<unsigned long long>(bytes), addr, mem_bytes(m)));
  }
  BlockState& b = block(api, loc);
  CubeMem& cm = b.cube->memory(m);
  constexpr Ctr peaks[] = {Ctr::ub_peak_bytes, Ctr::l1_peak_bytes, Ctr::l0a_peak_bytes, Ctr::l0b_peak_bytes,
                           Ctr::l0c_peak_bytes};
  count_max(peaks[static_cast<int>(m)], addr + bytes);
  const uint32_t hi = static_cast<uint32_t>(addr + bytes);
  return UbRef{cm.bytes.data(), addr, addr, hi, nullptr, m};
}

}  // namespace pyasc_sim
