// ascend-sim: per-launch and per-block state — GM regions, the UB arena, counters, the
// record of GM writes used to detect two blocks writing the same bytes, and the data
// cache of the scalar unit.
//
// One BlockState exists per running block; the launcher points the thread-local
// `t_block` at it, so every API call finds its block without global mutable state.
//
// Ctrl-C: the launcher gets pyasc's runtime poll (see pyasc/runtime/interrupt.py). Every
// counted API call counts down; every kPollBudget calls the block polls, and a stop
// request (a Python signal handler raised on the main thread) unwinds every block with
// Interrupted at its next API call. Kernel code that calls no API is not polled.
#pragma once

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim_cube_state.h"
#include "sim_fp16.h"

namespace pyasc_sim {

// Counters reported to Python after a launch. SUM counters add over blocks, MAX take the
// largest block value. Keep names stable: the profiler and the tests read them by name.
#define PYASC_SIM_COUNTERS(X)                                                       \
  X(blocks, SUM) X(gm_to_ub_bytes, SUM) X(ub_to_gm_bytes, SUM) X(ub_to_ub_bytes, SUM) \
  X(gm_scalar_read_bytes, SUM) X(gm_scalar_write_bytes, SUM) X(copy_in_calls, SUM)    \
  X(copy_in_single_buffered_calls, SUM) X(copy_out_calls, SUM) X(ub_peak_bytes, MAX)  \
  X(ub_scalar_accesses, SUM) X(vec_calls, SUM) X(vec_elements, SUM)                   \
  X(Add_calls, SUM) X(Sub_calls, SUM) X(Mul_calls, SUM) X(Div_calls, SUM)             \
  X(Max_calls, SUM) X(Min_calls, SUM) X(Adds_calls, SUM) X(Muls_calls, SUM)           \
  X(Maxs_calls, SUM) X(Mins_calls, SUM) X(Exp_calls, SUM) X(Ln_calls, SUM)            \
  X(Abs_calls, SUM) X(Sqrt_calls, SUM) X(Rsqrt_calls, SUM) X(Reciprocal_calls, SUM)   \
  X(Relu_calls, SUM) X(Duplicate_calls, SUM) X(Cast_calls, SUM) X(Compare_calls, SUM) \
  X(Select_calls, SUM) X(ReduceSum_calls, SUM) X(ReduceMax_calls, SUM)                \
  X(ReduceMin_calls, SUM) X(Sigmoid_calls, SUM)                                      \
  X(gm_to_l1_bytes, SUM) X(l1_to_l0a_bytes, SUM) X(l1_to_l0b_bytes, SUM)              \
  X(l0c_to_gm_bytes, SUM) X(cube_macs, SUM) X(cube_padded_macs, SUM)                  \
  X(Mmad_calls, SUM) X(l1_peak_bytes, MAX) X(l0a_peak_bytes, MAX)                     \
  X(l0b_peak_bytes, MAX) X(l0c_peak_bytes, MAX) X(dcache_flush_calls, SUM)         \
  X(Gather_calls, SUM) X(CreateVecIndex_calls, SUM)

enum class Ctr : int {
#define PYASC_SIM_X(name, kind) name,
  PYASC_SIM_COUNTERS(PYASC_SIM_X)
#undef PYASC_SIM_X
  COUNT
};
inline constexpr int kNumCounters = static_cast<int>(Ctr::COUNT);

struct CounterInfo {
  const char* name;
  bool is_max;
};
inline constexpr CounterInfo kCounterInfo[] = {
#define PYASC_SIM_X(name, kind) {#name, std::string_view(#kind) == "MAX"},
    PYASC_SIM_COUNTERS(PYASC_SIM_X)
#undef PYASC_SIM_X
};

// A kernel argument's memory, as passed by the launcher (pointer args with their byte size).
struct GmRegion {
  uintptr_t lo, hi;
  int arg;
};

using PollFn = int32_t (*)(int64_t* state);  // pyasc.rt.poll: 0 = go on, else stop
using EpochFn = int64_t (*)();                // pyasc.rt.epoch
inline constexpr int64_t kPollBudget = 1 << 12;

struct Interrupted {};  // unwinds a block on Ctrl-C (deliberately not a std::exception)

struct LaunchCtx {
  std::vector<GmRegion> regions;
  uint32_t block_dim = 1;
  PollFn poll = nullptr;  // null: the launch cannot be interrupted
  int64_t epoch = 0;      // pyasc.rt.epoch() when the launch started
  mutable std::atomic<bool> interrupted{false};

  // Poll with `state` ({epoch seen, unused}); true once the launch must stop.
  bool stop_requested(int64_t* state) const {
    if (interrupted.load(std::memory_order_relaxed)) return true;
    if (poll != nullptr && poll(state) != 0) interrupted.store(true);
    return interrupted.load(std::memory_order_relaxed);
  }

  // The argument holding address p that reaches furthest: arguments may alias (a row
  // view and its whole array start at the same address), and a buffer bound at p is
  // inside the larger one even when it overruns the smaller.
  const GmRegion* find(uintptr_t p) const {
    const GmRegion* best = nullptr;
    for (const GmRegion& r : regions) {
      if (p >= r.lo && p < r.hi && (best == nullptr || r.hi > best->hi)) best = &r;
    }
    return best;
  }
};

// A contiguous byte range of GM written by one block, with the call that wrote it.
struct GmWrite {
  uintptr_t lo, hi;
  SrcLoc loc;
  const char* api;
};

// The scalar unit's data cache of one block (see sim_dcache.h for the rules it checks).
// GlobalTensor::SetValue writes GM through it: the line becomes dirty until
// DataCacheCleanAndInvalid cleans it; on hardware the line is written back whole, later.
// A line is 64 bytes counted from the start of the kernel argument holding it (device
// buffers start 512-byte aligned: rtMalloc, reference section 2).
inline constexpr uintptr_t kLine = 64;

struct DirtyLine {
  uint64_t bytes = 0;  // bit i: byte i of the line written and not cleaned
  SrcLoc loc{};        // the last scalar store into the line
};

struct DataCache {
  std::unordered_map<uintptr_t, DirtyLine> dirty;  // by line start
  std::vector<GmWrite> lines;  // every line range written by scalar stores (kept when cleaned)

  void write(uintptr_t line, uint64_t bytes, const char* api, const SrcLoc& loc) {
    DirtyLine& d = dirty[line];
    d.bytes |= bytes;
    d.loc = loc;
    if (!lines.empty() && lines.back().lo <= line && line < lines.back().hi) return;
    if (!lines.empty() && lines.back().hi == line && lines.back().loc.line == loc.line) {
      lines.back().hi = line + kLine;  // streaming stores coalesce into one range
      return;
    }
    lines.push_back({line, line + kLine, loc, api});
  }

  // The dirty line with the lowest address in [lo, hi), or nullptr.
  const std::pair<const uintptr_t, DirtyLine>* first_dirty(uintptr_t lo, uintptr_t hi) const {
    const std::pair<const uintptr_t, DirtyLine>* best = nullptr;
    for (const auto& e : dirty) {
      if (e.first + kLine > lo && e.first < hi && (best == nullptr || e.first < best->first)) best = &e;
    }
    return best;
  }
};

struct MixGroup;  // sim_mix.h: the three cores of one MIX block

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

struct BlockState {
  uint32_t idx, num;
  const LaunchCtx* ctx;
  std::unique_ptr<uint8_t, FreeDeleter> ub;
  uint64_t counters[kNumCounters] = {};
  std::vector<GmWrite> writes;
  DataCache dcache;
  bool pipe_alive = false;
  std::unique_ptr<CubeState> cube = std::make_unique<CubeState>();  // L1/L0, pipes, flags
  int64_t poll_state[2];
  int64_t poll_budget = kPollBudget;
  int core = 0;              // in a MIX launch: 1 the cube core (AIC), 2 a vector core (AIV)
  uint32_t sub = 0;          // GetSubBlockIdx(): which AIV of its AIC
  MixGroup* mix = nullptr;   // the MIX block this core belongs to (null outside MIX launches)

  BlockState(uint32_t i, uint32_t n, const LaunchCtx* c)
      : idx(i), num(n), ctx(c),
        ub(static_cast<uint8_t*>(std::aligned_alloc(64, round_up(PYASC_SIM_UB_BYTES, 64)))),
        poll_state{c->epoch, 0} {
    if (!ub) throw std::bad_alloc();
    std::memset(ub.get(), PYASC_SIM_UB_FILL, PYASC_SIM_UB_BYTES);
    counters[static_cast<int>(Ctr::blocks)] = 1;
  }

  void tick() {
    if (--poll_budget > 0) return;
    poll_budget = kPollBudget;
    if (ctx->stop_requested(poll_state)) throw Interrupted{};
  }

  void record_write(uintptr_t lo, uintptr_t hi, const char* api, const SrcLoc& loc) {
    if (lo == hi) return;
    if (!writes.empty() && writes.back().hi == lo && writes.back().loc.line == loc.line) {
      writes.back().hi = hi;  // streaming stores coalesce into one range
      return;
    }
    writes.push_back({lo, hi, loc, api});
  }
};

inline thread_local BlockState* t_block = nullptr;

// A DMA or Fixpipe access of GM in a MIX launch (sim_mix.h: the cross-core hand-off check).
inline void mix_gm(BlockState& b, uintptr_t lo, uintptr_t hi, bool writes, const char* api, const SrcLoc& loc);

inline BlockState& block(const char* api, const SrcLoc& loc) {
  if (t_block == nullptr) fail(api, loc, "called outside a kernel run by the ascend-sim launcher");
  return *t_block;
}

inline void count(Ctr c, uint64_t n = 1) {
  if (t_block != nullptr) {
    t_block->counters[static_cast<int>(c)] += n;
    t_block->tick();
  }
}

inline void count_max(Ctr c, uint64_t v) {
  if (t_block != nullptr) {
    uint64_t& slot = t_block->counters[static_cast<int>(c)];
    if (v > slot) slot = v;
  }
}

}  // namespace pyasc_sim
