// ascend-sim: elementwise vector APIs in their count form (level 2).
//
// Each element is widened to calc_t<T> (float for half/bf16), computed, and rounded back to
// T, as the vector unit does per element. Integer arithmetic wraps (two's complement).
// Every operand must start 32-byte aligned inside its buffer; dtypes follow the dav-c220
// static_asserts listed in the reference.
#pragma once

#include <cmath>
#include <limits>

#include "sim_copy.h"

namespace pyasc_sim {

inline void check_count(int64_t count, const char* api, const SrcLoc& loc) {
  if (count < 0) fail(api, loc, fmt("count %lld is negative", static_cast<long long>(count)));
}

inline void note_vec(Ctr api_counter, uint64_t elements) {
  count(Ctr::vec_calls);
  count(Ctr::vec_elements, elements);
  count(api_counter);
}

// dst[i] = f(src[i]).
template <class T, class F>
void map1(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, int64_t n, F f,
          const char* api, Ctr counter, const SrcLoc& loc) {
  check_count(n, api, loc);
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(T);
  uint8_t* d = ub_operand(dst.ref_, bytes, kBlock, api, "dst", loc);
  const uint8_t* s = ub_operand(src.ref_, bytes, kBlock, api, "src", loc);
  for (int64_t i = 0; i < n; ++i) {
    store<T>(d + i * sizeof(T), static_cast<T>(f(static_cast<calc_t<T>>(load<T>(s + i * sizeof(T))))));
  }
  note_vec(counter, static_cast<uint64_t>(n));
}

// dst[i] = f(a[i], b[i]).
template <class T, class F>
void map2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, const AscendC::LocalTensor<T>& b,
          int64_t n, F f, const char* api, Ctr counter, const SrcLoc& loc) {
  check_count(n, api, loc);
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(T);
  uint8_t* d = ub_operand(dst.ref_, bytes, kBlock, api, "dst", loc);
  const uint8_t* pa = ub_operand(a.ref_, bytes, kBlock, api, "src0", loc);
  const uint8_t* pb = ub_operand(b.ref_, bytes, kBlock, api, "src1", loc);
  for (int64_t i = 0; i < n; ++i) {
    const auto x = static_cast<calc_t<T>>(load<T>(pa + i * sizeof(T)));
    const auto y = static_cast<calc_t<T>>(load<T>(pb + i * sizeof(T)));
    store<T>(d + i * sizeof(T), static_cast<T>(f(x, y)));
  }
  note_vec(counter, static_cast<uint64_t>(n));
}

// Integer ops go through uint64_t so that overflow wraps instead of being undefined.
struct OpAdd {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else return a + b;
  }
};
struct OpSub {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    else return a - b;
  }
};
struct OpMul {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else return a * b;
  }
};
struct OpDiv {
  template <class C>
  C operator()(C a, C b) const { return a / b; }
};
// NaN-propagating like numpy's maximum/minimum (the hardware's NaN rule is not documented).
struct OpMax {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
struct OpMin {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};

}  // namespace pyasc_sim

namespace AscendC {

#define PYASC_SIM_BINARY(NAME, OP, ...)                                                               \
  template <typename T>                                                                               \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,                  \
                              const LocalTensor<T>& src1, const int32_t& count, SrcLoc loc = {}) {    \
    PYASC_SIM_DTYPES(NAME, T, __VA_ARGS__);                                                           \
    pyasc_sim::map2(dst, src0, src1, count, pyasc_sim::OP{}, #NAME, pyasc_sim::Ctr::NAME##_calls, loc); \
  }
PYASC_SIM_BINARY(Add, OpAdd, half, float, int16_t, int32_t)
PYASC_SIM_BINARY(Sub, OpSub, half, float, int16_t, int32_t)
PYASC_SIM_BINARY(Mul, OpMul, half, float, int16_t, int32_t)
PYASC_SIM_BINARY(Div, OpDiv, half, float)
PYASC_SIM_BINARY(Max, OpMax, half, float, int16_t, int32_t)
PYASC_SIM_BINARY(Min, OpMin, half, float, int16_t, int32_t)
#undef PYASC_SIM_BINARY

// The scalar has the tensor's element type T (deduced from both): emit a typed scalar.
#define PYASC_SIM_SCALAR(NAME, OP, ...)                                                              \
  template <typename T>                                                                              \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, \
                              const int32_t& count, SrcLoc loc = {}) {                               \
    PYASC_SIM_DTYPES(NAME, T, __VA_ARGS__);                                                          \
    const auto s = static_cast<pyasc_sim::calc_t<T>>(scalarValue);                                   \
    pyasc_sim::map1(dst, src, count, [s](auto x) { return pyasc_sim::OP{}(x, s); }, #NAME,          \
                    pyasc_sim::Ctr::NAME##_calls, loc);                                              \
  }
PYASC_SIM_SCALAR(Adds, OpAdd, half, float, int16_t, int32_t)
PYASC_SIM_SCALAR(Muls, OpMul, half, float, int16_t, int32_t)
PYASC_SIM_SCALAR(Maxs, OpMax, half, float, int16_t, int32_t)
PYASC_SIM_SCALAR(Mins, OpMin, half, float, int16_t, int32_t)
#undef PYASC_SIM_SCALAR

#define PYASC_SIM_UNARY(NAME, EXPR, ...)                                                            \
  template <typename T>                                                                             \
  __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, \
                              SrcLoc loc = {}) {                                                    \
    PYASC_SIM_DTYPES(NAME, T, __VA_ARGS__);                                                         \
    using C = pyasc_sim::calc_t<T>;                                                                 \
    pyasc_sim::map1(dst, src, count, [](C x) -> C { return EXPR; }, #NAME,                          \
                    pyasc_sim::Ctr::NAME##_calls, loc);                                             \
  }
PYASC_SIM_UNARY(Exp, std::exp(x), half, float)
PYASC_SIM_UNARY(Ln, std::log(x), half, float)
PYASC_SIM_UNARY(Abs, std::fabs(x), half, float)
PYASC_SIM_UNARY(Sqrt, std::sqrt(x), half, float)
PYASC_SIM_UNARY(Rsqrt, C(1) / std::sqrt(x), half, float)
PYASC_SIM_UNARY(Reciprocal, C(1) / x, half, float)
PYASC_SIM_UNARY(Relu, x < C(0) ? C(0) : x, half, float, int32_t)  // NaN stays NaN
#undef PYASC_SIM_UNARY

template <typename T>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, SrcLoc loc = {}) {
  PYASC_SIM_DTYPES(Duplicate, T, half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t, float);
  const char* api = "Duplicate";
  pyasc_sim::check_count(count, api, loc);
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, uint64_t(count) * sizeof(T), pyasc_sim::kBlock, api, "dst", loc);
  pyasc_sim::fill_value<T>(d, static_cast<uint64_t>(count), scalarValue);
  pyasc_sim::note_vec(pyasc_sim::Ctr::Duplicate_calls, static_cast<uint64_t>(count));
}

// Declared by AscendC, but dav-c220 has no implementation (no SubsImpl/DivsImpl in
// dav_c220/), and Neg is ISASI: using them is a compile error naming the replacement.
template <typename... Args>
void Subs(Args&&...) {
  static_assert(pyasc_sim::always_false<Args...>,
                "Subs is not implemented on dav-c220 (Ascend910B): emit Adds(dst, src, -scalar, count)");
}
template <typename... Args>
void Divs(Args&&...) {
  static_assert(pyasc_sim::always_false<Args...>,
                "Divs is not implemented on dav-c220 (Ascend910B): emit Muls(dst, src, 1/scalar, count)");
}
template <typename... Args>
void Neg(Args&&...) {
  static_assert(pyasc_sim::always_false<Args...>,
                "Neg is ISASI and not available on dav-c220 (Ascend910B): emit Muls(dst, src, -1, count)");
}

}  // namespace AscendC
