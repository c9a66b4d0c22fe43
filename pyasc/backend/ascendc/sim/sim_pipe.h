// ascend-sim: TPipe, TQue, TBuf, block indices and synchronisation.
//
// TPipe hands out 32-byte-aligned UB buffers (at most PYASC_SIM_MAX_BUFFERS of them, within
// the InitBuffer budget). TQue tracks each buffer through free -> allocated -> enqueued ->
// dequeued -> free and stops on any transition the hardware would hang or corrupt on.
#pragma once

#include "sim_tensor.h"

namespace pyasc_sim {

// The state shared by every TQue instantiation (template only over position and depth).
struct QueCore {
  SrcLoc decl;
  int32_t depth;
  uint8_t num = 0;
  uint32_t len = 0, cursor = 0;
  std::unique_ptr<Slot[]> slots;
  uint8_t fifo[PYASC_SIM_MAX_BUFFERS] = {};
  uint32_t head = 0, queued = 0;

  QueCore(const SrcLoc& d, int32_t dep) : decl(d), depth(dep) {}

  Slot* alloc(const SrcLoc& loc) {
    const char* api = "AllocTensor";
    if (num == 0) fail(api, loc, "the queue was never given buffers with TPipe::InitBuffer");
    for (uint32_t k = 0; k < num; ++k) {  // round-robin like TQueBind::AllocBuffer
      Slot& s = slots[(cursor + k) % num];
      if (s.state == SlotState::FREE) {
        cursor = (cursor + k + 1) % num;
        s.state = SlotState::OCCUPIED;
        s.alloc_loc = loc;
        return &s;
      }
    }
    std::string lines;
    for (uint32_t k = 0; k < num; ++k) lines += (k ? ", " : "") + std::to_string(slots[k].alloc_loc.line);
    fail(api, loc, fmt("all %u buffers of the queue are in use (allocated at lines %s); on hardware "
                       "AllocTensor would wait forever", num, lines.c_str()));
  }

  Slot* own(const Slot* s, const char* api, const SrcLoc& loc) {
    if (s == nullptr || s < slots.get() || s >= slots.get() + num) {
      fail(api, loc, "the tensor was not allocated from this queue");
    }
    return const_cast<Slot*>(s);
  }

  void enque(const Slot* slot, const SrcLoc& loc) {
    Slot* s = own(slot, "EnQue", loc);
    if (s->state != SlotState::OCCUPIED && s->state != SlotState::DEQUE) {
      fail("EnQue", loc, fmt("the tensor is %s; only an allocated or dequeued tensor can be enqueued",
                             state_name(s->state)));
    }
    if (queued >= static_cast<uint32_t>(depth)) {
      fail("EnQue", loc, fmt("the queue already holds %u tensors, its depth is %d", queued, depth));
    }
    fifo[(head + queued++) % PYASC_SIM_MAX_BUFFERS] = static_cast<uint8_t>(s - slots.get());
    s->state = SlotState::ENQUE;
  }

  Slot* deque(const SrcLoc& loc) {
    if (queued == 0) fail("DeQue", loc, "the queue is empty; on hardware DeQue would wait forever");
    Slot* s = &slots[fifo[head]];
    head = (head + 1) % PYASC_SIM_MAX_BUFFERS;
    --queued;
    s->state = SlotState::DEQUE;
    return s;
  }

  void release(const Slot* slot, const SrcLoc& loc) {
    Slot* s = own(slot, "FreeTensor", loc);
    if (s->state == SlotState::FREE) fail("FreeTensor", loc, "double free: the buffer is already free");
    if (s->state == SlotState::ENQUE) fail("FreeTensor", loc, "the tensor is still enqueued; DeQue it first");
    s->state = SlotState::FREE;
  }

  // At kernel end every buffer must be free again, or the queue was unbalanced.
  void check_balanced() const {
    for (uint32_t k = 0; k < num; ++k) {
      if (slots[k].state != SlotState::FREE) {
        fail("AllocTensor", slots[k].alloc_loc,
             fmt("unbalanced queue (declared at line %d): this tensor is still %s when the kernel "
                 "ends; every AllocTensor needs a FreeTensor", decl.line, state_name(slots[k].state)));
      }
    }
  }
};

template <class T>
AscendC::LocalTensor<T> slot_tensor(const Slot* s) {
  AscendC::LocalTensor<T> t;
  t.ref_ = UbRef{t_block ? t_block->ub.get() : nullptr, s->off, s->off, s->off + s->len, s};
  t.size_ = s->len / static_cast<uint32_t>(sizeof(T));
  return t;
}

inline constexpr bool is_ub_position(AscendC::TPosition p) {
  return p == AscendC::TPosition::VECIN || p == AscendC::TPosition::VECOUT ||
         p == AscendC::TPosition::VECCALC;
}

}  // namespace pyasc_sim

namespace AscendC {

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue {
  static_assert(pyasc_sim::is_ub_position(pos), "TQue: ascend-sim models UB queues only (VECIN/VECOUT/VECCALC)");
  static_assert(depth >= 1, "TQue: depth-0 queues are not modeled by ascend-sim");

 public:
  TQue(SrcLoc decl = {}) : core_(decl, depth) {}  // NOLINT: default constructor
  TQue(const TQue&) = delete;
  TQue& operator=(const TQue&) = delete;
  ~TQue() noexcept(false) {
    if (std::uncaught_exceptions() == 0) core_.check_balanced();
  }

  template <typename T>
  LocalTensor<T> AllocTensor(SrcLoc loc = {}) {
    return pyasc_sim::slot_tensor<T>(core_.alloc(loc));
  }
  template <typename T>
  bool EnQue(const LocalTensor<T>& tensor, SrcLoc loc = {}) {
    core_.enque(tensor.ref_.slot, loc);
    return true;
  }
  template <typename T>
  LocalTensor<T> DeQue(SrcLoc loc = {}) {
    return pyasc_sim::slot_tensor<T>(core_.deque(loc));
  }
  template <typename T>
  void FreeTensor(LocalTensor<T>& tensor, SrcLoc loc = {}) {
    core_.release(tensor.ref_.slot, loc);
  }
  int32_t GetTensorCountInQue() const { return static_cast<int32_t>(core_.queued); }

  pyasc_sim::QueCore core_;  // model internal
};

template <TPosition pos = TPosition::LCM>
class TBuf {
  static_assert(pyasc_sim::is_ub_position(pos), "TBuf: ascend-sim models UB buffers only (VECIN/VECOUT/VECCALC)");

 public:
  TBuf() = default;
  TBuf(const TBuf&) = delete;
  TBuf& operator=(const TBuf&) = delete;

  template <typename T>
  LocalTensor<T> Get(SrcLoc loc = {}) {
    return view<T>(0, len_ / sizeof(T), "TBuf::Get", loc);
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t len, SrcLoc loc = {}) {
    return view<T>(0, len, "TBuf::Get", loc);
  }
  template <typename T>
  LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, SrcLoc loc = {}) {
    return view<T>(bufOffset, size, "TBuf::GetWithOffset", loc);
  }

  uint32_t off_ = 0, len_ = 0;  // model internals, set by TPipe::InitBuffer
  bool inited_ = false;

 private:
  template <typename T>
  LocalTensor<T> view(uint32_t byte_off, uint32_t count, const char* api, const SrcLoc& loc) {
    if (!inited_) pyasc_sim::fail(api, loc, "the TBuf was never given memory with TPipe::InitBuffer");
    const uint64_t end = byte_off + uint64_t{count} * sizeof(T);
    if (end > len_) {
      pyasc_sim::fail(api, loc, pyasc_sim::fmt("%llu bytes requested from a TBuf of %u bytes",
                                               static_cast<unsigned long long>(end), len_));
    }
    LocalTensor<T> t;
    t.ref_ = pyasc_sim::UbRef{pyasc_sim::block(api, loc).ub.get(), off_ + byte_off, off_, off_ + len_, nullptr};
    t.size_ = count;
    return t;
  }
};

class TPipe {
 public:
  TPipe(SrcLoc loc = {}) {  // NOLINT: default constructor
    pyasc_sim::BlockState& b = pyasc_sim::block("TPipe", loc);
    if (b.pipe_alive) pyasc_sim::fail("TPipe", loc, "a second TPipe while one is alive would alias its UB");
    b.pipe_alive = true;
  }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;
  ~TPipe() {
    if (pyasc_sim::t_block != nullptr) pyasc_sim::t_block->pipe_alive = false;
  }

  template <TPosition P, int32_t D, auto M>
  bool InitBuffer(TQue<P, D, M>& que, uint8_t num, uint32_t len, SrcLoc loc = {}) {
    pyasc_sim::QueCore& q = que.core_;
    if (q.num != 0) pyasc_sim::fail("InitBuffer", loc, "the queue already has buffers");
    if (num == 0 || len == 0) pyasc_sim::fail("InitBuffer", loc, "num and len must be positive");
    const uint32_t aligned = static_cast<uint32_t>(pyasc_sim::round_up(len, pyasc_sim::kBlock));
    const uint32_t base = reserve(num, uint64_t{num} * aligned, loc);
    q.num = num;
    q.len = aligned;
    q.slots.reset(new pyasc_sim::Slot[num]);
    for (uint32_t k = 0; k < num; ++k) {
      q.slots[k].off = base + k * aligned;
      q.slots[k].len = aligned;
      q.slots[k].que_num = num;
    }
    return true;
  }

  template <TPosition P>
  bool InitBuffer(TBuf<P>& buf, uint32_t len, SrcLoc loc = {}) {
    if (buf.inited_) pyasc_sim::fail("InitBuffer", loc, "the TBuf already has memory");
    if (len == 0) pyasc_sim::fail("InitBuffer", loc, "len must be positive");
    const uint32_t aligned = static_cast<uint32_t>(pyasc_sim::round_up(len, pyasc_sim::kBlock));
    buf.off_ = reserve(1, aligned, loc);
    buf.len_ = aligned;
    buf.inited_ = true;
    return true;
  }

 private:
  uint32_t used_ = 0, buffers_ = 0;

  uint32_t reserve(uint32_t nbuf, uint64_t bytes, const SrcLoc& loc) {
    constexpr uint64_t budget = PYASC_SIM_UB_BYTES - PYASC_SIM_UB_RESERVED_BYTES;
    if (buffers_ + nbuf > PYASC_SIM_MAX_BUFFERS) {
      pyasc_sim::fail("InitBuffer", loc, pyasc_sim::fmt("%u buffers in total exceed the TPipe limit of %d",
                                                        buffers_ + nbuf, PYASC_SIM_MAX_BUFFERS));
    }
    if (used_ + bytes > budget) {
      pyasc_sim::fail("InitBuffer", loc,
                      pyasc_sim::fmt("UB over-subscription: %llu bytes requested, %u already used, "
                                     "budget %llu bytes (UB %d minus %d reserved)",
                                     static_cast<unsigned long long>(bytes), used_,
                                     static_cast<unsigned long long>(budget), PYASC_SIM_UB_BYTES,
                                     PYASC_SIM_UB_RESERVED_BYTES));
    }
    const uint32_t base = used_;
    used_ += static_cast<uint32_t>(bytes);
    buffers_ += nbuf;
    pyasc_sim::count_max(pyasc_sim::Ctr::ub_peak_bytes, used_);
    return base;
  }
};

__aicore__ inline int64_t GetBlockIdx(SrcLoc loc = {}) { return pyasc_sim::block("GetBlockIdx", loc).idx; }
__aicore__ inline int64_t GetBlockNum(SrcLoc loc = {}) { return pyasc_sim::block("GetBlockNum", loc).num; }

}  // namespace AscendC
