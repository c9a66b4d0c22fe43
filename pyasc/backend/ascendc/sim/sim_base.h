// ascend-sim: macros, enums, source locations and violations.
//
// Part of pyasc's host model of the AscendC API (see README.md next to this file).
// Everything the generated kernel spells (GM_ADDR, __aicore__, TPosition, RoundMode, ...)
// is declared as in the CANN headers; everything internal lives in namespace pyasc_sim.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

// ---- SoC configuration (the runner passes -D for other SoCs) -------------------------
#ifndef PYASC_SIM_UB_BYTES
#define PYASC_SIM_UB_BYTES (192 * 1024)  // TOTAL_UB_SIZE on 910B (dav-c220)
#endif
#ifndef PYASC_SIM_UB_RESERVED_BYTES
#define PYASC_SIM_UB_RESERVED_BYTES (8 * 1024)  // top of UB kept for API scratch
#endif
#ifndef PYASC_SIM_MAX_BUFFERS
#define PYASC_SIM_MAX_BUFFERS 64  // QBUF_MAX_LEN (tpipe_impl.h)
#endif
#ifndef PYASC_SIM_UB_FILL
#define PYASC_SIM_UB_FILL 0xFF  // stale UB bytes: NaN for half/float, -1 for ints
#endif

// ---- kernel-side spellings ------------------------------------------------------------
#define __gm__
#define __ubuf__
#define __aicore__
#define __global__
#define GM_ADDR uint8_t*

enum pipe_t : uint8_t {
  PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL,
  PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX,
};
enum event_t : uint8_t {
  EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7,
};

namespace AscendC {
enum class TPosition : uint8_t {
  GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC,
  SPM, SHM = SPM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX,
};
using QuePosition = TPosition;

enum class RoundMode : uint8_t {
  CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD,
};
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t {
  VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE,
};
enum class HardEvent : uint8_t {
  MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
  MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
  S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3,
  MTE1_FIX, FIX_MTE1, FIX_FIX, MAX,
};
}  // namespace AscendC

namespace pyasc_sim {

// A tag first parameter keeps SrcLoc from being an implicit conversion target of ints.
struct LocTag {};

// The call site of an API, captured through a defaulted trailing parameter
// (`SrcLoc loc = {}`): GCC and Clang evaluate __builtin_LINE() at the caller, and honour
// `#line` directives, so a kernel with `#line N "user.py"` reports Python lines.
struct SrcLoc {
  int line;
  const char* file;
  constexpr SrcLoc(LocTag = LocTag(), int l = __builtin_LINE(), const char* f = __builtin_FILE())
      : line(l), file(f) {}
};

// A broken AscendC rule. Real hardware would truncate, hang or corrupt silently; the model
// stops. The launcher catches it and reports "api|file|line|block|detail".
struct Violation : std::exception {
  std::string api, file, detail;
  int line;
  Violation(std::string a, const SrcLoc& loc, std::string d)
      : api(std::move(a)), file(loc.file ? loc.file : "?"), detail(std::move(d)), line(loc.line) {}
  const char* what() const noexcept override { return detail.c_str(); }
};

inline std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

[[noreturn]] inline void fail(const char* api, const SrcLoc& loc, const std::string& detail) {
  throw Violation(api, loc, detail);
}

template <class T, class... Ts>
inline constexpr bool one_of = (std::is_same_v<T, Ts> || ...);

template <class... T>
inline constexpr bool always_false = false;

inline constexpr uint32_t kBlock = 32;    // ONE_BLK_SIZE
inline constexpr uint32_t kRepeat = 256;  // one vector repeat

inline constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace pyasc_sim

// The documented dtype table of an API on dav-c220 (910B), enforced at compile time.
#define PYASC_SIM_DTYPES(api, T, ...)                                              \
  static_assert(::pyasc_sim::one_of<T, __VA_ARGS__>,                               \
                #api ": element type not supported on dav-c220 (Ascend910B); "     \
                "supported: " #__VA_ARGS__)
