// ascend-sim: MIX kernels (__mix__(1, 2) / KERNEL_TYPE_MIX_AIC_1_2) and cross-core flags.
//
// A MIX launch of block_dim N runs N groups of three simulated cores: one cube core (AIC,
// GetBlockIdx() = g) and its two vector cores (AIV, GetBlockIdx() = 2g + GetSubBlockIdx(),
// GetTaskRatio() = 2) (shared/ascendc-cube-reference.md 8.1, 8.3, 8.6). The three cores of
// a group run on three threads that pass one baton: one runs at a time, until it finishes
// or waits for a flag nobody has set; the baton then goes to the next core that can run.
// So a run is deterministic, and a wait that can never pass (every unfinished core waits)
// is reported as a deadlock instead of hanging.
//
// Flags (8.4, [V] unless marked): CrossCoreSetFlag<mode, pipe>(id) with id in 0..15 and a
// counter per id; mode 2 is "one AIC <-> its AIVs": a set on the AIC lets each of its AIVs
// pass one wait, an AIC wait passes once both AIVs have set. One counter per id and
// direction [I]; a counter above 15 is the documented overflow. Modes 0 and 1 are not
// modeled (pyasc emits mode 2 only): using them is reported. pipe S or ALL is not allowed.
// A flag still counted when the kernel ends is reported [I: it would pass a later
// kernel's wait on the same core].
//
// The GM hand-off is checked like the pipe flags of the cube path: every Fixpipe write of
// the cube core and every DMA read of a vector core is recorded with the number of sets
// issued so far. A vector core may read bytes the cube core wrote only after a wait that
// consumed a PIPE_FIX set issued after that write; the cube core may overwrite bytes a
// vector core read only after a wait that consumed a set of that vector core issued
// after the read on PIPE_MTE2 (the pipe of its reads) [I: what a set on another pipe
// orders is not stated]. Anything else is a race on hardware and a violation here.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "sim_sync.h"

namespace pyasc_sim {

inline constexpr int kCrossFlags = 16;  // flag ids 0..15
inline constexpr size_t kCrossMax = 15;  // a counter holds 0..15

struct CrossSet {
  uint64_t seq;    // issue number within the group (1, 2, ...)
  bool orders;     // FIX (from the AIC) / MTE2 (from an AIV): orders the hand-off's accesses
  SrcLoc loc;
};

struct HandOff {
  uintptr_t lo, hi;
  uint64_t seq;  // sets issued in the group before this access
  SrcLoc loc;
  const char* api;
};

struct Aborted {};  // another core of the group stopped: unwind quietly

struct MixGroup {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;  // the core that runs: 0 the AIC, 1 + sub an AIV
  bool done[3] = {};
  int waiting[3] = {-1, -1, -1};
  SrcLoc wait_loc[3];
  bool aborted = false;
  int deadlocked = -1;  // the core that reports the deadlock
  std::string deadlock_msg;
  std::deque<CrossSet> to_aiv[2][kCrossFlags];  // AIC sets not yet waited by AIV v
  std::deque<CrossSet> to_aic[2][kCrossFlags];  // AIV v sets not yet waited by the AIC
  uint64_t seq = 0;
  uint64_t aiv_known[2] = {};  // latest ordering AIC set AIV v has waited for
  uint64_t aic_known[2] = {};  // latest ordering set of AIV v the AIC has waited for
  std::vector<HandOff> cube_writes;
  std::vector<HandOff> vec_reads[2];

  bool satisfied(int core, int id) const {
    if (core == 0) return !to_aic[0][id].empty() && !to_aic[1][id].empty();
    return !to_aiv[core - 1][id].empty();
  }

  // Give the baton to the next core that can run (`me` included if its wait passes); none:
  // a deadlock, reported by the lowest waiting core.
  void pass(int me) {
    for (int step = 1; step <= 3; ++step) {
      const int j = (me + step) % 3;
      if (!done[j] && (waiting[j] < 0 || satisfied(j, waiting[j]))) {
        turn = j;
        cv.notify_all();
        return;
      }
    }
    for (int j = 0; j < 3 && deadlocked < 0; ++j) {
      if (!done[j]) deadlocked = j;
    }
    if (deadlocked < 0) return;  // every core finished
    std::string who;
    for (int j = 0; j < 3; ++j) {
      if (done[j] || waiting[j] < 0) continue;
      who += fmt("%s%s waits for flag %d at line %d", who.empty() ? "" : "; ",
                 j == 0 ? "the cube core" : (j == 1 ? "vector core 0" : "vector core 1"), waiting[j],
                 wait_loc[j].line);
    }
    deadlock_msg = "deadlock: this wait can never pass (" + who +
                   "; no running core is left to set a flag): on hardware the cores hang";
    aborted = true;
    cv.notify_all();
  }
};

inline int core_slot(const BlockState& b) { return b.core == 1 ? 0 : 1 + static_cast<int>(b.sub); }

inline const char* core_name(const BlockState& b) {
  return b.core == 1 ? "the cube core" : (b.sub == 0 ? "vector core 0" : "vector core 1");
}

// A GM access of a DMA (or Fixpipe) in a MIX launch: record it, check the hand-off order.
inline void mix_gm(BlockState& b, uintptr_t lo, uintptr_t hi, bool writes, const char* api, const SrcLoc& loc) {
  MixGroup& g = *b.mix;
  std::lock_guard<std::mutex> lock(g.m);
  if (b.core == 1 && writes) {
    for (int v = 0; v < 2; ++v) {
      std::vector<HandOff>& reads = g.vec_reads[v];
      reads.erase(std::remove_if(reads.begin(), reads.end(),
                                 [&](const HandOff& r) { return r.seq < g.aic_known[v]; }),
                  reads.end());
      for (const HandOff& r : reads) {
        if (r.lo < hi && lo < r.hi) {
          fail(api, loc, fmt("the cube core overwrites GM bytes [%llu, %llu) that vector core %d read with %s "
                             "(line %d) and has not released: CrossCoreWaitFlag for a set of that vector core "
                             "after its read (on PIPE_MTE2) must come first; on hardware this is a race",
                             static_cast<unsigned long long>(std::max(lo, r.lo) - lo),
                             static_cast<unsigned long long>(std::min(hi, r.hi) - lo), v, r.api, r.loc.line));
        }
      }
    }
    if (!g.cube_writes.empty() && g.cube_writes.back().hi == lo && g.cube_writes.back().seq == g.seq &&
        g.cube_writes.back().loc.line == loc.line) {
      g.cube_writes.back().hi = hi;
    } else {
      g.cube_writes.push_back({lo, hi, g.seq, loc, api});
    }
  } else if (b.core == 2 && !writes) {
    const int v = static_cast<int>(b.sub);
    const uint64_t both = std::min(g.aiv_known[0], g.aiv_known[1]);
    g.cube_writes.erase(std::remove_if(g.cube_writes.begin(), g.cube_writes.end(),
                                       [&](const HandOff& w) { return w.seq < both; }),
                        g.cube_writes.end());
    for (const HandOff& w : g.cube_writes) {
      if (w.lo < hi && lo < w.hi && w.seq >= g.aiv_known[v]) {
        fail(api, loc, fmt("vector core %d reads GM that the cube core wrote with %s (line %d) before a "
                           "CrossCoreWaitFlag for the cube core's CrossCoreSetFlag<2, PIPE_FIX> after that "
                           "write: on hardware it may read the workspace before the cube core's data",
                           v, w.api, w.loc.line));
      }
    }
    g.vec_reads[v].push_back({lo, hi, g.seq, loc, api});
  }
}

inline MixGroup& mix_group(const char* api, const SrcLoc& loc) {
  BlockState& b = block(api, loc);
  if (b.mix == nullptr) {
    fail(api, loc, "cross-core flags need a MIX kernel (KERNEL_TYPE_MIX_AIC_1_2): with AIC_ONLY/AIV_ONLY "
                   "the hardware does not enable the scheduler");
  }
  return *b.mix;
}

inline void check_cross(int mode, pipe_t pipe, int id, const char* api, const SrcLoc& loc) {
  if (id < 0 || id >= kCrossFlags) fail(api, loc, fmt("flag id %d is not in 0..15", id));
  if (mode != 2) {
    fail(api, loc, fmt("mode %d: ascend-sim models mode 2 (one cube core and its vector cores) only", mode));
  }
  if (pipe == PIPE_S || pipe == PIPE_ALL) fail(api, loc, "pipe must be V, M, MTE1, MTE2, MTE3 or FIX, not S or ALL");
}

}  // namespace pyasc_sim

namespace AscendC {

template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flagId, SrcLoc loc = {}) {
  const char* api = "CrossCoreSetFlag";
  pyasc_sim::MixGroup& g = pyasc_sim::mix_group(api, loc);
  pyasc_sim::check_cross(modeId, pipe, flagId, api, loc);
  pyasc_sim::BlockState& b = *pyasc_sim::t_block;
  std::lock_guard<std::mutex> lock(g.m);
  const uint64_t seq = ++g.seq;
  for (int v = 0; v < 2; ++v) {
    if (b.core == 2 && static_cast<int>(b.sub) != v) continue;
    auto& q = b.core == 1 ? g.to_aiv[v][flagId] : g.to_aic[v][flagId];
    if (q.size() >= pyasc_sim::kCrossMax) {
      pyasc_sim::fail(api, loc, pyasc_sim::fmt("flag %u counted %zu times without a wait: its counter (0..15) "
                                               "overflows", flagId, q.size() + 1));
    }
    q.push_back({seq, pipe == (b.core == 1 ? PIPE_FIX : PIPE_MTE2), loc});
  }
  // A set is a scheduling point: the cores it lets pass run now (so an AIC that goes on
  // without waiting meets the AIVs' accesses in the hand-off check, not after them).
  std::unique_lock<std::mutex> turn(g.m, std::adopt_lock);
  const int me = pyasc_sim::core_slot(b);
  g.pass(me);
  g.cv.wait(turn, [&] { return g.turn == me || g.aborted; });
  turn.release();
  if (g.aborted) throw pyasc_sim::Aborted{};
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flagId, SrcLoc loc = {}) {
  const char* api = "CrossCoreWaitFlag";
  pyasc_sim::MixGroup& g = pyasc_sim::mix_group(api, loc);
  if (flagId >= pyasc_sim::kCrossFlags) pyasc_sim::fail(api, loc, pyasc_sim::fmt("flag id %u is not in 0..15", flagId));
  pyasc_sim::BlockState& b = *pyasc_sim::t_block;
  const int me = pyasc_sim::core_slot(b);
  std::unique_lock<std::mutex> lock(g.m);
  g.waiting[me] = flagId;
  g.wait_loc[me] = loc;
  while (!g.satisfied(me, flagId)) {
    g.pass(me);
    g.cv.wait(lock, [&] { return g.turn == me || g.aborted; });
    if (g.aborted) {
      if (g.deadlocked == me) pyasc_sim::fail(api, loc, g.deadlock_msg);
      throw pyasc_sim::Aborted{};
    }
  }
  g.waiting[me] = -1;
  if (me == 0) {
    for (int v = 0; v < 2; ++v) {
      const pyasc_sim::CrossSet s = g.to_aic[v][flagId].front();
      g.to_aic[v][flagId].pop_front();
      if (s.orders) g.aic_known[v] = std::max(g.aic_known[v], s.seq);
    }
  } else {
    const pyasc_sim::CrossSet s = g.to_aiv[me - 1][flagId].front();
    g.to_aiv[me - 1][flagId].pop_front();
    if (s.orders) g.aiv_known[me - 1] = std::max(g.aiv_known[me - 1], s.seq);
  }
}

__aicore__ inline int64_t GetSubBlockIdx(SrcLoc loc = {}) { return pyasc_sim::block("GetSubBlockIdx", loc).sub; }
__aicore__ inline int64_t GetTaskRatio(SrcLoc loc = {}) {
  return pyasc_sim::block("GetTaskRatio", loc).core == 2 ? 2 : 1;
}

}  // namespace AscendC

namespace pyasc_sim {
inline bool core_is(int core) { return t_block != nullptr && t_block->core == core; }
}  // namespace pyasc_sim

// Device: `if constexpr (g_coreType == AscendC::AIC)` (8.2); here the core type of the block.
#define ASCEND_IS_AIC (::pyasc_sim::core_is(1))
#define ASCEND_IS_AIV (::pyasc_sim::core_is(2))
