// ascend-sim: the launcher. Included once, after the kernel source, by the wrapper
// translation unit that pyasc/backend/ascendc/sim/runner.py generates:
//
//   #include "kernel.cpp"          // the generated AscendC source, unchanged
//   #include "sim_launch.h"
//   PYASC_SIM_EXPORT(add_custom)   // once per kernel (a cube kernel: PYASC_SIM_EXPORT_CORE(k, cube))
//
// PYASC_SIM_EXPORT_CORE(name, core) defines three C entry points (PYASC_SIM_EXPORT(name) is
// PYASC_SIM_EXPORT_CORE(name, vector)):
//   const char* pyasc_sim_core_<name>(void)
//       the core type the kernel is built for, "vector" or "cube": the stand-in AscendCL
//       library of the tests checks it against the binary magic the object was loaded with.
//   const char* pyasc_sim_signature_<name>(void)
//       comma-separated parameter kinds: "ptr" for GM_ADDR (any pointer), "i8".."i64",
//       "u8".."u64", "f16", "bf16", "f32", "f64", "bool" for by-value scalars.
//   int pyasc_sim_launch_<name>(uint32_t block_dim, void** args, const uint64_t* arg_bytes,
//                               uint64_t* counters, char* err, size_t errlen,
//                               void* const* interrupt)
//       args[i] points at the value of parameter i (for a pointer parameter: at a void*);
//       arg_bytes[i] is the byte size of the memory behind pointer parameter i (GM bounds);
//       counters receives pyasc_sim_counter_names() values; interrupt is NULL or
//       {pyasc.rt.poll, pyasc.rt.epoch} (Ctrl-C, see sim_state.h). Returns 0 on success,
//       1 for a violation, 2 for a bad launch or an unexpected exception (err then holds
//       "api|file|line|block|detail"), 3 when interrupted.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_operator.h"

#define PYASC_SIM_API extern "C" __attribute__((visibility("default")))

namespace pyasc_sim {

template <class A>
std::string arg_code() {
  if constexpr (std::is_pointer_v<A>) return "ptr";
  else if constexpr (std::is_same_v<A, bool>) return "bool";
  else if constexpr (std::is_same_v<A, half>) return "f16";
  else if constexpr (std::is_same_v<A, bfloat16_t>) return "bf16";
  else if constexpr (std::is_same_v<A, float>) return "f32";
  else if constexpr (std::is_same_v<A, double>) return "f64";
  else if constexpr (std::is_integral_v<A>) return (std::is_signed_v<A> ? "i" : "u") + std::to_string(8 * sizeof(A));
  else static_assert(always_false<A>, "kernel parameters must be pointers (GM_ADDR) or scalars passed by value");
}

template <class... A>
const char* signature(void (*)(A...)) {
  static const std::string sig = [] {
    std::vector<std::string> codes{arg_code<A>()...};
    std::string s;
    for (const std::string& c : codes) s += (s.empty() ? "" : ",") + c;
    return s;
  }();
  return sig.c_str();
}

template <class A>
A read_arg(void* p) {
  A v;
  std::memcpy(&v, p, sizeof(A));
  return v;
}

// The only per-kernel code: unpack args[i] (a pointer to parameter i's value) and call.
// Everything else in the launcher is shared by all kernels of a translation unit.
template <class... A, size_t... I>
void call_with(void (*fn)(A...), void** args, std::index_sequence<I...>) {
  fn(read_arg<A>(args[I])...);
}

template <class... A>
std::tuple<A...> params_of(void (*)(A...));

template <auto Fn>
void invoker(void** args) {
  call_with(Fn, args, std::make_index_sequence<std::tuple_size_v<decltype(params_of(Fn))>>{});
}

// is_pointer for each parameter, plus a terminating false for kernels without parameters.
template <class... A>
const bool* pointer_params(void (*)(A...)) {
  static const bool flags[] = {std::is_pointer_v<A>..., false};
  return flags;
}

using Invoker = void (*)(void**);

// launch() and everything it calls (below, to the end of the namespace) do not depend on the
// kernel: with PYASC_SIM_EXTERN_LAUNCH a library declares launch only and links the launch
// object (sim/launch_object.py) that defines it, compiled once per configuration from this
// header with PYASC_SIM_LAUNCH_OBJECT.  Compiling the machinery into every library was about
// half of a small kernel's -O0 build; even declared-only as inline functions, parsing it
// queued the std templates its bodies use (threads, vectors of results, strings), which GCC
// instantiates again in every translation unit, precompiled header or not: 10 of a small
// build's 26 MB of template instantiation (sim/pch.py).  So a library does not see it at all.
#if defined(PYASC_SIM_EXTERN_LAUNCH) && !defined(PYASC_SIM_LAUNCH_OBJECT)
int launch(Invoker invoke, const bool* is_ptr, size_t nargs, uint32_t block_dim, void** args,
           const uint64_t* arg_bytes, uint64_t* counters, char* err, size_t errlen,
           void* const* interrupt, bool mix = false);
#else
struct BlockResult {
  int rc = 0;  // 0 ok, 1 violation, 2 unexpected exception
  std::string err;
  uint64_t counters[kNumCounters] = {};
  std::vector<GmWrite> writes;
  std::vector<GmWrite> lines;  // 64-byte lines written by scalar stores (sim_dcache.h)
};

inline std::string report(const char* api, const SrcLoc& loc, uint32_t blk, const std::string& detail) {
  return std::string(api) + "|" + (loc.file ? loc.file : "?") + "|" + std::to_string(loc.line) + "|" +
         std::to_string(blk) + "|" + detail;
}

inline void run_block(Invoker invoke, void** args, const LaunchCtx& ctx, uint32_t b, BlockResult& out) {
  try {
    BlockState state(b, ctx.block_dim, &ctx);
    t_block = &state;
    invoke(args);
    dcache_at_block_end(state);
    std::copy(state.counters, state.counters + kNumCounters, out.counters);
    out.writes = std::move(state.writes);
    out.lines = std::move(state.dcache.lines);
  } catch (const Interrupted&) {
    out.rc = 3;
    out.err = "interrupted";
  } catch (const Violation& v) {
    out.rc = 1;
    out.err = v.api + "|" + v.file + "|" + std::to_string(v.line) + "|" + std::to_string(b) + "|" + v.detail;
  } catch (const std::exception& e) {
    out.rc = 2;
    out.err = report("kernel", SrcLoc(LocTag(), 0, "?"), b, std::string("unexpected C++ exception: ") + e.what());
  } catch (...) {
    out.rc = 2;
    out.err = report("kernel", SrcLoc(LocTag(), 0, "?"), b, "unexpected C++ exception");
  }
  t_block = nullptr;
}

// One write range of a block, for the overlap sweep.
struct BlockWrite {
  uintptr_t lo, hi;
  uint32_t blk;
  const GmWrite* w;
};

// The first range of `all` that overlaps a range of another block, with that range.
inline std::pair<const BlockWrite*, const BlockWrite*> find_overlap(std::vector<BlockWrite>& all) {
  std::sort(all.begin(), all.end(), [](const BlockWrite& x, const BlockWrite& y) { return x.lo < y.lo; });
  const BlockWrite* best = nullptr;    // earlier range reaching furthest
  const BlockWrite* second = nullptr;  // furthest-reaching earlier range of another block than best
  for (const BlockWrite& c : all) {
    const BlockWrite* other = best && best->blk != c.blk ? best : second;
    if (other != nullptr && other->hi > c.lo) return {&c, other};
    if (best == nullptr || c.hi > best->hi) {
      if (best != nullptr && best->blk != c.blk) second = best;
      best = &c;
    } else if (c.blk != best->blk && (second == nullptr || c.hi > second->hi)) {
      second = &c;
    }
  }
  return {nullptr, nullptr};
}

// Two blocks writing the same GM bytes race on hardware (their order is undefined).
inline std::string find_write_race(const std::vector<BlockResult>& results, const LaunchCtx& ctx) {
  std::vector<BlockWrite> all;
  for (uint32_t b = 0; b < results.size(); ++b) {
    for (const GmWrite& w : results[b].writes) all.push_back({w.lo, w.hi, b, &w});
  }
  auto [c, other] = find_overlap(all);
  if (c == nullptr) return {};
  const GmRegion* r = ctx.find(c->lo);
  const uintptr_t base = r ? r->lo : 0;
  return report(c->w->api, c->w->loc, c->blk, fmt(
      "GM write race: bytes [%llu, %llu) of argument %d are also written by block %u (%s at line %d)",
      static_cast<unsigned long long>(c->lo - base), static_cast<unsigned long long>(std::min(c->hi, other->hi) - base),
      r ? r->arg : -1, other->blk, other->w->api, other->w->loc.line));
}

// A 64-byte line written by scalar stores of one block and written by another block at all
// (different bytes: find_write_race ran first): the data caches write back whole lines, so
// one block's write-back overwrites the other's bytes (sim_dcache.h).
inline std::string find_line_sharing(const std::vector<BlockResult>& results, const LaunchCtx& ctx) {
  if (!PYASC_SIM_DCACHE) return {};
  std::vector<BlockWrite> all;
  for (uint32_t b = 0; b < results.size(); ++b) {
    for (const GmWrite& w : results[b].lines) all.push_back({w.lo, w.hi, b, &w});
    for (const GmWrite& w : results[b].writes) {
      if (std::string_view(w.api) != "GlobalTensor::SetValue") all.push_back({w.lo, w.hi, b, &w});
    }
  }
  auto [c, other] = find_overlap(all);
  if (c == nullptr) return {};
  const GmRegion* r = ctx.find(c->lo);
  const uintptr_t base = r ? r->lo : 0;
  const uintptr_t line = base + (std::max(c->lo, other->lo) - base) / kLine * kLine;
  return report(c->w->api, c->w->loc, c->blk, fmt(
      "GM cache-line sharing: the 64-byte line at byte %llu of argument %d is also written by block %u "
      "(%s at line %d); data caches write back whole lines, so one block's write-back overwrites the "
      "other's bytes (split scalar outputs at 64-byte lines)",
      static_cast<unsigned long long>(line - base), r ? r->arg : -1, other->blk, other->w->api,
      other->w->loc.line));
}

inline unsigned worker_count(uint32_t block_dim) {
  unsigned n = std::max(1u, std::thread::hardware_concurrency());
  if (const char* env = std::getenv("PYASC_SIM_THREADS")) n = std::max(1, std::atoi(env));
  return std::min<unsigned>(n, block_dim);
}

// The launch's counters from its blocks': sums, or the largest for a max counter.
inline void sum_counters(const std::vector<BlockResult>& results, uint64_t* counters) {
  if (counters == nullptr) return;
  std::fill(counters, counters + kNumCounters, 0);
  for (const BlockResult& r : results) {
    for (int c = 0; c < kNumCounters; ++c) {
      counters[c] = kCounterInfo[c].is_max ? std::max(counters[c], r.counters[c]) : counters[c] + r.counters[c];
    }
  }
}

inline void write_err(const std::string& msg, char* err, size_t errlen) {
  if (err != nullptr && errlen > 0) {
    std::snprintf(err, errlen, "%s", msg.c_str());
  }
}

// The caller waits for the worker threads polling every 20 ms, so that a Ctrl-C reaches
// Python's handlers (on the main thread) even when its own blocks are done.
inline void await_workers(const LaunchCtx& ctx, std::mutex& m, std::condition_variable& cv,
                          const size_t& finished, size_t workers) {
  int64_t state[2] = {ctx.epoch, 0};
  std::unique_lock<std::mutex> lock(m);
  while (!cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return finished >= workers; })) {
    lock.unlock();
    ctx.stop_requested(state);
    lock.lock();
  }
}

inline int launch_mix(Invoker invoke, void** args, LaunchCtx& ctx, uint64_t* counters, char* err, size_t errlen);

// launch() and everything it calls do not depend on the kernel (see the top of the launch
// machinery above, where a library with PYASC_SIM_EXTERN_LAUNCH declares launch only).
#ifdef PYASC_SIM_LAUNCH_OBJECT
int launch(Invoker invoke, const bool* is_ptr, size_t nargs, uint32_t block_dim, void** args,
           const uint64_t* arg_bytes, uint64_t* counters, char* err, size_t errlen,
           void* const* interrupt, bool mix = false) {
#else
inline int launch(Invoker invoke, const bool* is_ptr, size_t nargs, uint32_t block_dim, void** args,
                  const uint64_t* arg_bytes, uint64_t* counters, char* err, size_t errlen,
                  void* const* interrupt, bool mix = false) {
#endif
  if (block_dim == 0 || block_dim > 65535) {
    write_err(report("launch", SrcLoc(LocTag(), 0, "?"), 0, fmt("block_dim %u is not in [1, 65535]", block_dim)), err, errlen);
    return 2;
  }
  LaunchCtx ctx;
  ctx.block_dim = block_dim;
  if (interrupt != nullptr && interrupt[0] != nullptr && interrupt[1] != nullptr) {
    ctx.poll = reinterpret_cast<PollFn>(interrupt[0]);
    ctx.epoch = reinterpret_cast<EpochFn>(interrupt[1])();
  }
  for (size_t i = 0; i < nargs && arg_bytes != nullptr; ++i) {
    if (is_ptr[i]) {
      const uintptr_t lo = reinterpret_cast<uintptr_t>(read_arg<void*>(args[i]));
      ctx.regions.push_back({lo, lo + arg_bytes[i], static_cast<int>(i)});
    }
  }
  if (mix) return launch_mix(invoke, args, ctx, counters, err, errlen);
  std::vector<BlockResult> results(block_dim);
  std::atomic<uint32_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (uint32_t b; !stop && !ctx.interrupted && (b = next.fetch_add(1)) < block_dim;) {
      run_block(invoke, args, ctx, b, results[b]);
      if (results[b].rc != 0) stop = true;
    }
  };
  std::mutex m;
  std::condition_variable cv;
  size_t finished = 0;
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < worker_count(block_dim); ++w) {
    pool.emplace_back([&] {
      work();
      std::lock_guard<std::mutex> lock(m);
      ++finished;
      cv.notify_one();
    });
  }
  work();
  await_workers(ctx, m, cv, finished, pool.size());
  for (std::thread& t : pool) t.join();
  if (ctx.interrupted) {  // a Python signal handler raised: that wins over any block's result
    write_err("interrupted", err, errlen);
    return 3;
  }
  for (const BlockResult& r : results) {  // lowest failing block: every lower block ran to completion
    if (r.rc != 0) {
      write_err(r.err, err, errlen);
      return r.rc;
    }
  }
  for (auto check : {find_write_race, find_line_sharing}) {
    if (std::string race = check(results, ctx); !race.empty()) {
      write_err(race, err, errlen);
      return 1;
    }
  }
  sum_counters(results, counters);
  return 0;
}

// ---- MIX launches (sim_mix.h): block_dim groups of one cube core and two vector cores ----
inline void run_core(Invoker invoke, void** args, const LaunchCtx& ctx, MixGroup& g, uint32_t grp, int slot,
                     BlockResult& out) {
  {
    std::unique_lock<std::mutex> lock(g.m);
    g.cv.wait(lock, [&] { return g.turn == slot || g.aborted; });
    if (g.aborted) {
      g.done[slot] = true;
      return;
    }
  }
  const uint32_t idx = slot == 0 ? grp : 2 * grp + static_cast<uint32_t>(slot - 1);
  bool failed = false;
  try {
    BlockState state(idx, ctx.block_dim, &ctx);
    state.core = slot == 0 ? 1 : 2;
    state.sub = slot == 0 ? 0 : static_cast<uint32_t>(slot - 1);
    state.mix = &g;
    t_block = &state;
    invoke(args);
    std::copy(state.counters, state.counters + kNumCounters, out.counters);
    out.writes = std::move(state.writes);
  } catch (const Aborted&) {
  } catch (const Interrupted&) {
    out.rc = 3, out.err = "interrupted", failed = true;
  } catch (const Violation& v) {
    out.rc = 1, failed = true;
    out.err = v.api + "|" + v.file + "|" + std::to_string(v.line) + "|" + std::to_string(idx) + "|" +
              (slot == 0 ? "cube core: " : "vector core: ") + v.detail;
  } catch (const std::exception& e) {
    out.rc = 2, failed = true;
    out.err = report("kernel", SrcLoc(LocTag(), 0, "?"), idx, std::string("unexpected C++ exception: ") + e.what());
  }
  t_block = nullptr;
  std::lock_guard<std::mutex> lock(g.m);
  g.done[slot] = true;
  g.waiting[slot] = -1;
  if (failed) {
    g.aborted = true;
    g.cv.notify_all();
  } else if (!g.aborted) {
    g.pass(slot);
  }
}

// A flag still counted when every core of the group has finished.
inline std::string leftover_flag(const MixGroup& g, uint32_t grp) {
  for (int v = 0; v < 2; ++v) {
    for (int id = 0; id < kCrossFlags; ++id) {
      for (const auto* q : {&g.to_aiv[v][id], &g.to_aic[v][id]}) {
        if (q->empty()) continue;
        const SrcLoc& loc = q->front().loc;
        return report("CrossCoreSetFlag", loc, grp, fmt(
            "flag %d was set and never waited for (%zu count(s) left when the kernel ends): on hardware the "
            "count stays and passes a later wait on that core", id, q->size()));
      }
    }
  }
  return {};
}

inline void run_group(Invoker invoke, void** args, const LaunchCtx& ctx, uint32_t grp, BlockResult* out,
                      std::string& leftover) {
  MixGroup g;
  std::thread aiv0([&] { run_core(invoke, args, ctx, g, grp, 1, out[1]); });
  std::thread aiv1([&] { run_core(invoke, args, ctx, g, grp, 2, out[2]); });
  run_core(invoke, args, ctx, g, grp, 0, out[0]);
  aiv0.join();
  aiv1.join();
  if (!g.aborted) leftover = leftover_flag(g, grp);
}

inline int launch_mix(Invoker invoke, void** args, LaunchCtx& ctx, uint64_t* counters, char* err, size_t errlen) {
  const uint32_t groups = ctx.block_dim;
  std::vector<BlockResult> results(3 * size_t{groups});
  std::vector<std::string> leftovers(groups);
  std::atomic<uint32_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (uint32_t b; !stop && !ctx.interrupted && (b = next.fetch_add(1)) < groups;) {
      run_group(invoke, args, ctx, b, &results[3 * size_t{b}], leftovers[b]);
      for (int c = 0; c < 3; ++c) stop = stop || results[3 * size_t{b} + c].rc != 0 || !leftovers[b].empty();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < worker_count(groups); ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (ctx.interrupted) {
    write_err("interrupted", err, errlen);
    return 3;
  }
  for (uint32_t b = 0; b < groups; ++b) {
    for (int c = 0; c < 3; ++c) {
      if (const BlockResult& r = results[3 * size_t{b} + c]; r.rc != 0) {
        write_err(r.err, err, errlen);
        return r.rc;
      }
    }
    if (!leftovers[b].empty()) {
      write_err(leftovers[b], err, errlen);
      return 1;
    }
  }
  if (std::string race = find_write_race(results, ctx); !race.empty()) {
    write_err(race, err, errlen);
    return 1;
  }
  sum_counters(results, counters);
  return 0;
}

#endif  // the launch machinery

}  // namespace pyasc_sim

#ifndef PYASC_SIM_LAUNCH_OBJECT  // the library's own entry points, not the launch object's
PYASC_SIM_API const char* pyasc_sim_counter_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& c : pyasc_sim::kCounterInfo) s += (s.empty() ? "" : ",") + std::string(c.name);
    return s;
  }();
  return names.c_str();
}

PYASC_SIM_API const char* pyasc_sim_config() {
  static const std::string cfg = "ub_bytes=" + std::to_string(PYASC_SIM_UB_BYTES) +
                                 ",ub_reserved_bytes=" + std::to_string(PYASC_SIM_UB_RESERVED_BYTES) +
                                 ",max_buffers=" + std::to_string(PYASC_SIM_MAX_BUFFERS);
  return cfg.c_str();
}
#endif

#define PYASC_SIM_EXPORT(name) PYASC_SIM_EXPORT_CORE(name, vector)

#define PYASC_SIM_EXPORT_CORE(name, core)                                                             \
  PYASC_SIM_API const char* pyasc_sim_core_##name() { return #core; }                                \
  PYASC_SIM_API const char* pyasc_sim_signature_##name() { return ::pyasc_sim::signature(&name); }   \
  PYASC_SIM_API int pyasc_sim_launch_##name(uint32_t block_dim, void** args, const uint64_t* arg_bytes, \
                                            uint64_t* counters, char* err, size_t errlen,             \
                                            void* const* interrupt) {                                 \
    return ::pyasc_sim::launch(&::pyasc_sim::invoker<&name>, ::pyasc_sim::pointer_params(&name),     \
                               std::tuple_size_v<decltype(::pyasc_sim::params_of(&name))>, block_dim, args, \
                               arg_bytes, counters, err, errlen, interrupt,                           \
                               std::string_view(#core) == "mix");                                    \
  }
