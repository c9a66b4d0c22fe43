// ascend-sim: SetFlag / WaitFlag / PipeBarrier and the pipe-order checks of the cube path.
//
// The model runs every pipe in program order, so numerics never depend on
// synchronisation; what it checks is that the program *would* be ordered on hardware,
// where MTE2, MTE1, M (Mmad) and FIX (Fixpipe) run asynchronously and the compiler inserts
// no synchronisation on the cube core. Each API call that touches L1/L0A/L0B/L0C is an
// operation of its pipe; it may read or overwrite a 32-byte granule that another pipe
// wrote or read only if a SetFlag/WaitFlag pair (or PipeBarrier<PIPE_ALL>) orders it after
// that access. A missing or misplaced flag is a violation naming both calls. Flags follow
// the documented rules: a WaitFlag whose flag was never set hangs, a second SetFlag of the
// same (event, id) before its WaitFlag is undefined behaviour.
#pragma once

#include "sim_tensor.h"

namespace pyasc_sim {

struct EventPipes {
  pipe_t src, dst;
  const char* name;
};

// HardEvent -> (source pipe, destination pipe), in the enum's order (sim_base.h).
inline const EventPipes& event_pipes(AscendC::HardEvent e) {
  static const EventPipes table[] = {
      {PIPE_MTE2, PIPE_MTE1, "MTE2_MTE1"}, {PIPE_MTE1, PIPE_MTE2, "MTE1_MTE2"}, {PIPE_MTE1, PIPE_M, "MTE1_M"},
      {PIPE_M, PIPE_MTE1, "M_MTE1"}, {PIPE_MTE2, PIPE_V, "MTE2_V"}, {PIPE_V, PIPE_MTE2, "V_MTE2"},
      {PIPE_MTE3, PIPE_V, "MTE3_V"}, {PIPE_V, PIPE_MTE3, "V_MTE3"}, {PIPE_M, PIPE_V, "M_V"},
      {PIPE_V, PIPE_M, "V_M"}, {PIPE_V, PIPE_V, "V_V"}, {PIPE_MTE3, PIPE_MTE1, "MTE3_MTE1"},
      {PIPE_MTE1, PIPE_MTE3, "MTE1_MTE3"}, {PIPE_MTE1, PIPE_V, "MTE1_V"}, {PIPE_MTE2, PIPE_M, "MTE2_M"},
      {PIPE_M, PIPE_MTE2, "M_MTE2"}, {PIPE_V, PIPE_MTE1, "V_MTE1"}, {PIPE_M, PIPE_FIX, "M_FIX"},
      {PIPE_FIX, PIPE_M, "FIX_M"}, {PIPE_MTE3, PIPE_MTE2, "MTE3_MTE2"}, {PIPE_MTE2, PIPE_MTE3, "MTE2_MTE3"},
      {PIPE_S, PIPE_V, "S_V"}, {PIPE_V, PIPE_S, "V_S"}, {PIPE_S, PIPE_MTE2, "S_MTE2"},
      {PIPE_MTE2, PIPE_S, "MTE2_S"}, {PIPE_S, PIPE_MTE3, "S_MTE3"}, {PIPE_MTE3, PIPE_S, "MTE3_S"},
      {PIPE_MTE2, PIPE_FIX, "MTE2_FIX"}, {PIPE_FIX, PIPE_MTE2, "FIX_MTE2"}, {PIPE_FIX, PIPE_S, "FIX_S"},
      {PIPE_M, PIPE_S, "M_S"}, {PIPE_FIX, PIPE_MTE3, "FIX_MTE3"}, {PIPE_MTE1, PIPE_FIX, "MTE1_FIX"},
      {PIPE_FIX, PIPE_MTE1, "FIX_MTE1"}, {PIPE_FIX, PIPE_FIX, "FIX_FIX"},
  };
  static_assert(sizeof(table) / sizeof(table[0]) == kEvents, "one row per HardEvent");
  return table[static_cast<int>(e)];
}

// The HardEvent that orders pipe `dst` after pipe `src`, for messages.
inline std::string event_between(int src, int dst) {
  for (int e = 0; e < kEvents; ++e) {
    const EventPipes& p = event_pipes(static_cast<AscendC::HardEvent>(e));
    if (p.src == src && p.dst == dst) return std::string("SetFlag/WaitFlag<HardEvent::") + p.name + ">";
  }
  return std::string("a flag from pipe ") + pipe_name(src) + " to pipe " + pipe_name(dst);
}

// Start an operation of `pipe`; returns its index in the block's op log.
inline uint32_t begin_op(pipe_t pipe, const char* api, const SrcLoc& loc) {
  CubeState& cs = *block(api, loc).cube;
  cs.ops.push_back(OpRecord{static_cast<uint8_t>(pipe), ++cs.issued[pipe], api, loc});
  return static_cast<uint32_t>(cs.ops.size() - 1);
}

[[noreturn]] inline void unordered(const CubeState& cs, uint32_t op, uint32_t other, const char* what, Mem m,
                                   uint64_t byte) {
  const OpRecord& me = cs.ops[op];
  const OpRecord& it = cs.ops[other];
  fail(me.api, me.loc,
       fmt("%s %s byte %llu that %s (line %d, pipe %s) %s, with no %s ordering pipe %s after it: on "
           "hardware the pipes run concurrently and this is a race",
           what, mem_name(m), static_cast<unsigned long long>(byte), it.api, it.loc.line,
           pipe_name(it.pipe), std::string(what) == "reads" ? "wrote" : "accesses",
           event_between(it.pipe, me.pipe).c_str(), pipe_name(me.pipe)));
}

// Is `other` (an op of another pipe, or 0) not ordered before op `op`?
inline bool racy(const CubeState& cs, uint32_t op, uint32_t other) {
  if (other == 0) return false;
  const OpRecord& me = cs.ops[op];
  const OpRecord& it = cs.ops[other];
  return it.pipe != me.pipe && it.seq > cs.known[me.pipe][it.pipe];
}

// Record that op `op` reads (or writes) bytes [lo, hi) of memory `m`, checking the order.
// `same_pipe_barrier`: an earlier write by the same pipe also needs a PipeBarrier (Mmad
// accumulating into L0C right after another Mmad on a small tile).
inline void access(Mem m, uint64_t lo, uint64_t hi, uint32_t op, bool write, bool same_pipe_barrier = false) {
  if (lo >= hi) return;
  CubeState& cs = *t_block->cube;
  CubeMem& cm = cs.memory(m);
  const OpRecord& me = cs.ops[op];
  const int slot = reader_slot(static_cast<pipe_t>(me.pipe));
  for (uint64_t g = lo / kGranule; g < (hi + kGranule - 1) / kGranule; ++g) {
    Granule& gr = cm.shadow[g];
    const uint64_t byte = std::max<uint64_t>(g * kGranule, lo);
    if (racy(cs, op, gr.writer)) unordered(cs, op, gr.writer, write ? "overwrites" : "reads", m, byte);
    if (same_pipe_barrier && gr.writer != 0 && cs.ops[gr.writer].pipe == me.pipe &&
        cs.ops[gr.writer].seq > cs.barrier[me.pipe]) {
      fail(me.api, me.loc, fmt("accumulates into %s byte %llu that %s (line %d) wrote just before, without "
                               "PipeBarrier<PIPE_%s>() between them (required when "
                               "ceil(m/16)*ceil(n/16) < 10)", mem_name(m),
                               static_cast<unsigned long long>(byte), cs.ops[gr.writer].api,
                               cs.ops[gr.writer].loc.line, pipe_name(me.pipe)));
    }
    if (write) {
      for (uint32_t r : gr.reader) {
        if (racy(cs, op, r)) unordered(cs, op, r, "overwrites", m, byte);
      }
      gr = Granule{};
      gr.writer = op;
    } else {
      gr.reader[slot] = op;
    }
  }
}

inline void check_event_id(int32_t id, const char* api, const SrcLoc& loc) {
  if (id < 0 || id >= kEventIds) fail(api, loc, fmt("event id %d is outside 0..7", id));
}

}  // namespace pyasc_sim

namespace AscendC {

// Orders the pipe's later operations after its earlier ones (PIPE_ALL: every pipe after
// every pipe's earlier operations).
template <pipe_t pipe>
__aicore__ inline void PipeBarrier(SrcLoc loc = {}) {
  pyasc_sim::CubeState& cs = *pyasc_sim::block("PipeBarrier", loc).cube;
  if constexpr (pipe == PIPE_ALL) {
    for (int p = 0; p < pyasc_sim::kPipes; ++p) {
      for (int q = 0; q < pyasc_sim::kPipes; ++q) cs.known[p][q] = cs.issued[q];
      cs.barrier[p] = cs.issued[p];
    }
  } else {
    cs.barrier[pipe] = cs.issued[pipe];
  }
}

template <HardEvent event>
__aicore__ inline void SetFlag(int32_t eventID, SrcLoc loc = {}) {
  const char* api = "SetFlag";
  pyasc_sim::check_event_id(eventID, api, loc);
  pyasc_sim::CubeState& cs = *pyasc_sim::block(api, loc).cube;
  const pyasc_sim::EventPipes& ev = pyasc_sim::event_pipes(event);
  pyasc_sim::FlagSlot& f = cs.flags[static_cast<int>(event)][eventID];
  if (f.set) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("SetFlag<HardEvent::%s>(%d) again before its WaitFlag (set at "
                                             "line %d): undefined behaviour on hardware", ev.name, eventID,
                                             f.where.line));
  }
  f.set = true;
  f.where = loc;
  for (int q = 0; q < pyasc_sim::kPipes; ++q) f.snapshot[q] = cs.known[ev.src][q];
  f.snapshot[ev.src] = cs.issued[ev.src];
}

template <HardEvent event>
__aicore__ inline void WaitFlag(int32_t eventID, SrcLoc loc = {}) {
  const char* api = "WaitFlag";
  pyasc_sim::check_event_id(eventID, api, loc);
  pyasc_sim::CubeState& cs = *pyasc_sim::block(api, loc).cube;
  const pyasc_sim::EventPipes& ev = pyasc_sim::event_pipes(event);
  pyasc_sim::FlagSlot& f = cs.flags[static_cast<int>(event)][eventID];
  if (!f.set) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("WaitFlag<HardEvent::%s>(%d) with no SetFlag before it: on "
                                             "hardware pipe %s would wait forever", ev.name, eventID,
                                             pyasc_sim::pipe_name(ev.dst)));
  }
  f.set = false;
  for (int q = 0; q < pyasc_sim::kPipes; ++q) {
    cs.known[ev.dst][q] = std::max(cs.known[ev.dst][q], f.snapshot[q]);
  }
}

}  // namespace AscendC
